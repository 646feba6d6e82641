"""The leftovers check of `gpuctl down`: the invoke-only program under Pulumi mocks, and the pure
function that turns its outputs into leftovers with their removal commands.

The mocks answer each invoke the way the provider does (ids, names and the detail list of the
data source), from a fake cloud that holds resources tagged for one cluster or another.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pulumi
import pytest

from tests.providers.alicloud_mocks import run_under_mocks
from toolkit.providers.alicloud.leftovers import (
    KINDS,
    Leftover,
    find_leftovers,
    leftovers_program,
)
from toolkit.providers.pulumi.leftovers import leftovers_stack_name
from toolkit.spec.models import ClusterSpec

pytestmark = pytest.mark.pulumi_mock

CLUSTER = "t-erdma-spot"
REGION = "cn-beijing"
# Written out literally: a function renamed in pulumi_alicloud, or a token changed, fails here.
TOKENS = [
    "alicloud:ecs/getInstances:getInstances",
    "alicloud:ecs/getEcsNetworkInterfaces:getEcsNetworkInterfaces",
    "alicloud:ecs/getSecurityGroups:getSecurityGroups",
    "alicloud:vpc/getSwitches:getSwitches",
    "alicloud:vpc/getNetworks:getNetworks",
    "alicloud:ecs/getEcsKeyPairs:getEcsKeyPairs",
]


def _instances(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ids": [r["id"] for r in found], "names": [r["name"] for r in found], "totalCount": len(found),
        "instances": [{"id": r["id"], "name": r["name"], "status": "Running", "tags": r["tags"]} for r in found],
    }


def _enis(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ids": [r["id"] for r in found], "names": [r["name"] for r in found],
        "interfaces": [{"id": r["id"], "name": r["name"], "status": "Available", "tags": r["tags"]} for r in found],
    }


def _groups(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ids": [r["id"] for r in found], "names": [r["name"] for r in found], "totalCount": len(found),
        "groups": [{"id": r["id"], "name": r["name"], "tags": r["tags"]} for r in found],
    }


def _vswitches(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ids": [r["id"] for r in found], "names": [r["name"] for r in found],
        "vswitches": [{"id": r["id"], "name": r["name"], "tags": r["tags"]} for r in found],
    }


def _vpcs(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ids": [r["id"] for r in found], "names": [r["name"] for r in found], "totalCount": len(found),
        "vpcs": [{"id": r["id"], "vpcName": r["name"], "tags": r["tags"]} for r in found],
    }


def _key_pairs(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ids": [r["id"] for r in found], "names": [r["name"] for r in found],
        "pairs": [{"id": r["id"], "keyName": r["name"], "tags": r["tags"]} for r in found],
        "keyPairs": [{"id": r["id"], "keyName": r["name"], "tags": r["tags"]} for r in found],
    }


ANSWERS: dict[str, Callable[[list[dict[str, Any]]], dict[str, Any]]] = {
    TOKENS[0]: _instances, TOKENS[1]: _enis, TOKENS[2]: _groups,
    TOKENS[3]: _vswitches, TOKENS[4]: _vpcs, TOKENS[5]: _key_pairs,
}


def _tagged(cluster: str, cluster_id: str | None = None, owner: str = "tester@example.com") -> dict[str, str]:
    tags = {"gpuctl:cluster": cluster, "gpuctl:owner": owner, "gpuctl:managed-by": "gpuctl"}
    if cluster_id is not None:
        tags["gpuctl:cluster-id"] = cluster_id
    return tags


class FakeCloud(pulumi.runtime.Mocks):
    """Holds resources per invoke token; answers a `tags` filter as the API does (all must match)."""

    def __init__(self, resources: dict[str, list[dict[str, Any]]]) -> None:
        self.resources = resources
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[Any, Any]]:
        if args.typ == "pulumi:pulumi:Stack":
            return None, {}
        raise AssertionError(f"the leftovers check created {args.typ} {args.name}")

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]]]:
        call_args = dict(args.args)
        self.calls.append((args.token, call_args))
        if args.token not in ANSWERS:
            raise AssertionError(f"unexpected invoke {args.token}")
        wanted = call_args.get("tags") or {}
        found = [r for r in self.resources.get(args.token, [])
                 if all(r["tags"].get(k) == v for k, v in wanted.items())]
        return {"id": REGION, **ANSWERS[args.token](found)}, []


def run_check(cloud: FakeCloud, cluster_id: str | None = None) -> dict[str, Any]:
    """Run `leftovers_program` under mocks; return its stack exports as plain values."""
    # A fresh root stack: set_mocks keeps one left by an earlier test, with that test's exports.
    pulumi.runtime.settings.ROOT.set(None)
    pulumi.runtime.set_mocks(cloud, project="gpuctl-test", stack=leftovers_stack_name(CLUSTER), preview=False)
    root = pulumi.runtime.get_root_resource()
    assert root is not None
    exports: dict[str, Any] = {}

    def program() -> pulumi.Output[Any]:
        leftovers_program(CLUSTER, cluster_id)
        outputs: dict[str, Any] = root.outputs  # type: ignore[attr-defined]
        return pulumi.Output.all(**outputs).apply(exports.update)

    run_under_mocks(program)
    return exports


def test_the_program_asks_each_kind_by_the_cluster_tag_and_creates_nothing() -> None:
    # Without a cluster id (no stack to hold one): by name alone.
    cloud = FakeCloud({})
    exports = run_check(cloud)
    assert sorted(token for token, _ in cloud.calls) == sorted(TOKENS)
    assert [kind.token for kind in KINDS] == TOKENS
    for token, call_args in cloud.calls:
        assert call_args["tags"] == {"gpuctl:cluster": CLUSTER}, token
    nothing: dict[str, Any] = {"instances": [], "networkInterfaces": [], "securityGroups": [], "vswitches": [],
                               "vpcs": [], "keyPairs": []}
    assert exports == {**nothing, "tags": {kind: {} for kind in nothing}}
    assert find_leftovers(exports, REGION) == []


OURS = "5e1f0c2a9b3d"
THEIRS = "0123456789ab"
# Two clusters named t-erdma-spot: ours, and another team's made through another backend.
TWO_OF_A_NAME = {
    TOKENS[0]: [
        {"id": "i-2ze0ours0001", "name": f"{CLUSTER}-gpu-0", "tags": _tagged(CLUSTER, OURS)},
        {"id": "i-2ze0theirs01", "name": f"{CLUSTER}-gpu-0", "tags": _tagged(CLUSTER, THEIRS, "other@example.com")},
    ],
    TOKENS[1]: [{"id": "eni-2zetheirs1", "name": f"{CLUSTER}-gpu-0-eri1",
                 "tags": _tagged(CLUSTER, THEIRS, "other@example.com")}],
    TOKENS[5]: [{"id": "t-erdma-spot-key", "name": "t-erdma-spot-key", "tags": _tagged(CLUSTER)}],  # no id tag
}


def test_with_the_cluster_id_the_program_finds_this_cluster_only() -> None:
    cloud = FakeCloud(TWO_OF_A_NAME)
    exports = run_check(cloud, cluster_id=OURS)
    for token, call_args in cloud.calls:
        assert call_args["tags"] == {"gpuctl:cluster": CLUSTER, "gpuctl:cluster-id": OURS}, token
    assert find_leftovers(exports, REGION) == [
        Leftover("ECS instance", "i-2ze0ours0001",
                 "aliyun ecs DeleteInstance --RegionId cn-beijing --InstanceId i-2ze0ours0001 --Force true",
                 owner="tester@example.com", cluster_id=OURS),
    ]


def test_by_name_alone_every_cluster_of_the_name_is_found_with_its_owner_and_id() -> None:
    exports = run_check(FakeCloud(TWO_OF_A_NAME))
    assert exports["tags"]["instances"] == {
        "i-2ze0ours0001": {"gpuctl:owner": "tester@example.com", "gpuctl:cluster-id": OURS},
        "i-2ze0theirs01": {"gpuctl:owner": "other@example.com", "gpuctl:cluster-id": THEIRS},
    }
    lines = [item.tagged_line() for item in find_leftovers(exports, REGION)]
    assert lines == [
        "ECS instance i-2ze0ours0001 (owner tester@example.com, cluster-id 5e1f0c2a9b3d): "
        "aliyun ecs DeleteInstance --RegionId cn-beijing --InstanceId i-2ze0ours0001 --Force true",
        "ECS instance i-2ze0theirs01 (owner other@example.com, cluster-id 0123456789ab): "
        "aliyun ecs DeleteInstance --RegionId cn-beijing --InstanceId i-2ze0theirs01 --Force true",
        "ENI eni-2zetheirs1 (owner other@example.com, cluster-id 0123456789ab): "
        "aliyun ecs DeleteNetworkInterface --RegionId cn-beijing --NetworkInterfaceId eni-2zetheirs1",
        "key pair t-erdma-spot-key (owner tester@example.com, cluster-id not tagged): "
        "aliyun ecs DeleteKeyPairs --RegionId cn-beijing --KeyPairNames '[\"t-erdma-spot-key\"]'",
    ]


def test_two_things_left_are_found_with_their_removal_commands() -> None:
    cloud = FakeCloud({
        TOKENS[0]: [
            {"id": "i-2ze0left0000", "name": f"{CLUSTER}-gpu-0", "tags": _tagged(CLUSTER)},
            {"id": "i-2ze0other000", "name": "other-gpu-0", "tags": _tagged("other")},  # another cluster's
        ],
        TOKENS[4]: [{"id": "vpc-2zeleft0001", "name": f"{CLUSTER}-vpc", "tags": _tagged(CLUSTER)}],
        TOKENS[5]: [{"id": "other-key", "name": "other-key", "tags": _tagged("other")}],
    })
    exports = run_check(cloud)
    assert exports["instances"] == ["i-2ze0left0000"]
    assert exports["vpcs"] == ["vpc-2zeleft0001"]
    assert exports["keyPairs"] == []
    assert find_leftovers(exports, REGION) == [
        Leftover("ECS instance", "i-2ze0left0000",
                 "aliyun ecs DeleteInstance --RegionId cn-beijing --InstanceId i-2ze0left0000 --Force true",
                 owner="tester@example.com"),
        Leftover("VPC", "vpc-2zeleft0001", "aliyun vpc DeleteVpc --RegionId cn-beijing --VpcId vpc-2zeleft0001",
                 owner="tester@example.com"),
    ]


def test_every_kind_has_its_removal_command_in_dependency_order() -> None:
    values = {kind.output: [f"{kind.output}-1"] for kind in KINDS}
    lines = [item.line() for item in find_leftovers(values, "cn-hangzhou")]
    assert lines == [
        "ECS instance instances-1: aliyun ecs DeleteInstance --RegionId cn-hangzhou --InstanceId instances-1 "
        "--Force true",
        "ENI networkInterfaces-1: aliyun ecs DeleteNetworkInterface --RegionId cn-hangzhou "
        "--NetworkInterfaceId networkInterfaces-1",
        "security group securityGroups-1: aliyun ecs DeleteSecurityGroup --RegionId cn-hangzhou "
        "--SecurityGroupId securityGroups-1",
        "vSwitch vswitches-1: aliyun vpc DeleteVSwitch --RegionId cn-hangzhou --VSwitchId vswitches-1",
        "VPC vpcs-1: aliyun vpc DeleteVpc --RegionId cn-hangzhou --VpcId vpcs-1",
        "key pair keyPairs-1: aliyun ecs DeleteKeyPairs --RegionId cn-hangzhou --KeyPairNames '[\"keyPairs-1\"]'",
    ]


def test_repeats_and_blanks_are_dropped_and_a_missing_output_is_an_error() -> None:
    values: dict[str, Any] = {kind.output: [] for kind in KINDS}
    values["instances"] = ["i-1", "i-1", ""]
    assert [item.id for item in find_leftovers(values, REGION)] == ["i-1"]
    del values["vpcs"]
    with pytest.raises(ValueError, match="did not export vpcs"):
        find_leftovers(values, REGION)
    with pytest.raises(ValueError, match="not a list"):
        find_leftovers({**values, "vpcs": "vpc-1"}, REGION)


def test_the_check_stack_cannot_be_a_cluster_stack() -> None:
    pattern = ClusterSpec.model_json_schema()["properties"]["name"]["pattern"]
    assert leftovers_stack_name(CLUSTER) == "t-erdma-spot_leftovers"
    assert re.match(pattern, leftovers_stack_name(CLUSTER)) is None
