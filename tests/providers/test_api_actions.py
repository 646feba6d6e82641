"""The API action data (toolkit/providers/<cloud>/api_actions.yaml) covers what gpuctl really creates.

Every resource type and invoke that the components register under Pulumi's mocks, for every example
and test spec of the cloud, with shared storage (created and existing volumes), the instance role and
the leftover search, has an entry, and the data has no entry for anything else. Every call names where
it is, in the documented form, from a source the file's header lists; no action is listed twice in a
phase. Expected values are written out literally.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from tests.providers import alicloud_mocks, tencent_mocks
from tests.providers import test_storage_alicloud as ali_storage
from tests.providers import test_storage_tencentcloud as tc_storage
from tests.providers.pulumi_mocks import Graph, GraphMocks, record_graph
from tests.providers.test_alicloud_leftovers import INTERRUPTED, OURS, FakeCloud, run_check, run_storage_check
from toolkit.errors import GpuctlError
from toolkit.providers.alicloud.storage import StorageArgs as AliStorageArgs
from toolkit.providers.api_actions import actions, instance_role, load
from toolkit.providers.tencentcloud.component import GpuCluster as TencentCluster
from toolkit.providers.tencentcloud.storage import StorageArgs as TcStorageArgs

REPO = Path(__file__).resolve().parents[2]
DATA = {cloud: REPO / "toolkit" / "providers" / cloud / "api_actions.yaml" for cloud in ("alicloud", "tencentcloud")}
PHASES = ("create", "read", "update", "delete")
WHERE = re.compile(r"^([A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)?)@([A-Za-z0-9._+-]+):([^:\s]+):([1-9][0-9]*)$")

ALICLOUD_RESOURCES = {
    "alicloud:ecs/ecsKeyPair:EcsKeyPair",
    "alicloud:ecs/ecsNetworkInterface:EcsNetworkInterface",
    "alicloud:ecs/ecsNetworkInterfaceAttachment:EcsNetworkInterfaceAttachment",
    "alicloud:ecs/instance:Instance",
    "alicloud:ecs/ramRoleAttachment:RamRoleAttachment",
    "alicloud:ecs/securityGroup:SecurityGroup",
    "alicloud:ecs/securityGroupRule:SecurityGroupRule",
    "alicloud:nas/accessGroup:AccessGroup",
    "alicloud:nas/accessRule:AccessRule",
    "alicloud:nas/fileSystem:FileSystem",
    "alicloud:nas/mountTarget:MountTarget",
    "alicloud:oss/bucket:Bucket",
    "alicloud:oss/bucketAcl:BucketAcl",
    "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock",
    "alicloud:ram/policy:Policy",
    "alicloud:ram/role:Role",
    "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment",
    "alicloud:vpc/network:Network",
    "alicloud:vpc/switch:Switch",
}
ALICLOUD_INVOKES = {
    "alicloud:ecs/getImages:getImages",
    "alicloud:ecs/getInstances:getInstances",
    "alicloud:ecs/getEcsNetworkInterfaces:getEcsNetworkInterfaces",
    "alicloud:ecs/getSecurityGroups:getSecurityGroups",
    "alicloud:ecs/getEcsKeyPairs:getEcsKeyPairs",
    "alicloud:vpc/getSwitches:getSwitches",
    "alicloud:vpc/getNetworks:getNetworks",
    # The leftover search of the role and the volumes (leftovers.py).
    "alicloud:ram/getRoles:getRoles",
    "alicloud:ram/getPolicies:getPolicies",
    "alicloud:nas/getAccessGroups:getAccessGroups",
    "alicloud:nas/getFileSystems:getFileSystems",
    "alicloud:nas/getMountTargets:getMountTargets",
    "alicloud:oss/getBuckets:getBuckets",
}
TENCENT_RESOURCES = {
    "tencentcloud:Cam/policy:Policy",
    "tencentcloud:Cam/role:Role",
    "tencentcloud:Cam/rolePolicyAttachment:RolePolicyAttachment",
    "tencentcloud:Cfs/accessGroup:AccessGroup",
    "tencentcloud:Cfs/accessRule:AccessRule",
    "tencentcloud:Cfs/fileSystem:FileSystem",
    "tencentcloud:Cos/bucket:Bucket",
    "tencentcloud:Cvm/actionTimer:ActionTimer",
    "tencentcloud:Cvm/hpcCluster:HpcCluster",
    "tencentcloud:Instance/instance:Instance",
    "tencentcloud:Key/pair:Pair",
    "tencentcloud:Security/group:Group",
    "tencentcloud:Security/groupRuleSet:GroupRuleSet",
    "tencentcloud:Subnet/instance:Instance",
    "tencentcloud:Vpc/instance:Instance",
}
TENCENT_INVOKES = {
    "tencentcloud:Images/getInstance:getInstance",
    "tencentcloud:User/getInfo:getInfo",
    "tencentcloud:Cfs/getFileSystems:getFileSystems",
}
EXPECTED = {"alicloud": (ALICLOUD_RESOURCES, ALICLOUD_INVOKES), "tencentcloud": (TENCENT_RESOURCES, TENCENT_INVOKES)}
# Lifecycle agent and object volumes: the two reasons a cluster gets an instance role.
ROLE_CHANGES: dict[str, Any] = {
    "lifecycle": {"ttl": "8h", "idle_stop_minutes": 30},
    "storage": [{"name": "ckpt", "kind": "object", "mount_path": "/mnt/ckpt"}],
}


def _specs(cloud: str) -> list[Path]:
    found = [p for folder in (REPO / "examples", alicloud_mocks.SPECS) for p in sorted(folder.glob("*.yaml"))
             if f"provider: {cloud}" in p.read_text()]
    assert len(found) >= 3, (cloud, found)
    return found


def _cwd_for(path: Path) -> Path:
    # The examples name their key file relative to the repository, the test specs relative to themselves.
    return REPO if path.parent.name == "examples" else path.parent


def _with_role(tmp: Path, source: str) -> Path:
    """A test spec that asks for the lifecycle agent and has an object volume, next to its key file."""
    data = yaml.safe_load((alicloud_mocks.SPECS / source).read_text())
    data.update(ROLE_CHANGES)
    shutil.copy(alicloud_mocks.SPECS / "test_ecdsa.pub", tmp / "test_ecdsa.pub")
    path = tmp / source
    path.write_text(yaml.safe_dump(data))
    return path


def _tokens(graphs: list[Graph]) -> tuple[set[str], set[str]]:
    created = {r.type for g in graphs for r in g.custom()}
    invoked = {token for g in graphs for token, _ in g.calls}
    return created, invoked


def _alicloud_graphs(tmp: Path) -> tuple[set[str], set[str]]:
    graphs: list[Graph] = []
    with pytest.MonkeyPatch.context() as mp:
        for path in _specs("alicloud"):
            mp.chdir(_cwd_for(path))
            graphs.append(alicloud_mocks.build_graph(alicloud_mocks.spec_args(path)))
        mp.chdir(tmp)
        graphs.append(alicloud_mocks.build_graph(alicloud_mocks.spec_args(_with_role(tmp, "erdma-spot.yaml"))))
    storage = AliStorageArgs.from_spec(ali_storage.spec_of(ali_storage.CREATED + ali_storage.REFERENCED),
                                       cluster_id=alicloud_mocks.CLUSTER_ID)
    graphs.append(ali_storage.storage_graph(storage)[0])
    graphs.append(ali_storage.mounts_graph(storage, {"data": "fs-1", "scratch": "fs-2", "shared": "31a8e48b9c"})[0])
    created, invoked = _tokens(graphs)
    cloud = FakeCloud(INTERRUPTED)  # a permission group with a mount target: every NAS lookup runs
    run_check(cloud, cluster_id=OURS)
    run_storage_check(cloud, OURS, kept_too=False)
    return created, invoked | {token for token, _ in cloud.calls}


def _tencent_graph(path: Path) -> Graph:
    args = tencent_mocks.spec_args(path)
    mocks: type[GraphMocks] = tc_storage.StorageMocks  # answers the APPID lookup of a role with buckets
    return record_graph(mocks, lambda opts: TencentCluster(args.cluster, args, opts=opts))


def _tencent_graphs(tmp: Path) -> tuple[set[str], set[str]]:
    graphs: list[Graph] = []
    with pytest.MonkeyPatch.context() as mp:
        for path in _specs("tencentcloud"):
            mp.chdir(_cwd_for(path))
            graphs.append(_tencent_graph(path))
        mp.chdir(tmp)
        graphs.append(_tencent_graph(_with_role(tmp, "tencent-monthly.yaml")))
    for volumes in (tc_storage.CREATED, tc_storage.REFERENCED):
        storage = TcStorageArgs.from_spec(tc_storage.spec_of(volumes), cluster_id=tencent_mocks.CLUSTER_ID)
        graphs.append(tc_storage.storage_graph(storage)[0])
    return _tokens(graphs)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[set[str], set[str]]]]:
    tmp = tmp_path_factory.mktemp("api-actions")
    (tmp / "ali").mkdir()
    (tmp / "tc").mkdir()
    yield {"alicloud": _alicloud_graphs(tmp / "ali"), "tencentcloud": _tencent_graphs(tmp / "tc")}
    pulumi.runtime.settings.ROOT.set(None)  # leave no root stack with this module's exports behind


def _raw(cloud: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(DATA[cloud].read_text())
    return data


def _all_calls(data: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for call in data.get("provider_calls", []):
        yield "provider_calls", call
    for section in ("resources", "invokes"):
        for token, entry in data[section].items():
            for phase in PHASES:
                for call in entry.get(phase, []):
                    yield f"{token} {phase}", call
    for user, calls in data.get("instance_role", {}).items():
        for call in calls:
            yield f"instance_role {user}", call


@pytest.mark.pulumi_mock
@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_every_type_and_invoke_the_components_use_has_an_entry_and_nothing_else(
    cloud: str, built: dict[str, tuple[set[str], set[str]]]
) -> None:
    created, invoked = built[cloud]
    resources, invokes = EXPECTED[cloud]
    assert created == resources
    assert invoked == invokes
    data = load(cloud)
    assert set(data.resources) == resources
    assert set(data.invokes) == invokes


@pytest.mark.unit
@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_every_entry_says_what_create_delete_and_read_call(cloud: str) -> None:
    data = _raw(cloud)
    for token, entry in data["resources"].items():
        assert set(entry) - {"note", "passes_role"} == {"terraform", "file", *PHASES}, token
        assert entry["create"], token
        assert entry["read"], token
        for phase in ("update", "delete"):  # an empty one was read and makes no call; the note says why
            assert entry[phase] or phase in entry.get("note", "").lower(), (token, phase)
    for token, entry in data["invokes"].items():
        assert set(entry) - {"note"} == {"terraform", "file", "read"}, token
        assert entry["read"], token


@pytest.mark.unit
@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_every_call_says_where_it_is_in_a_source_the_header_names(cloud: str) -> None:
    data = _raw(cloud)
    assert data["where_form"] == "<repo>@<tag or commit>:<path>:<line>"
    read = {(s["repo"], rev) for s in data["sources"].values() if "repo" in s
            for rev in (s.get("tag"), s.get("commit")) if rev}
    count = 0
    for what, call in _all_calls(data):
        match = WHERE.match(call["where"])
        assert match, (what, call["where"])
        repo, rev = match.group(1), match.group(2)
        assert any(repo == r and (rev == t or t.startswith(rev)) for r, t in read), (what, call["where"])
        assert re.fullmatch(r"[a-z]+:[A-Za-z0-9]+", call["action"]), (what, call["action"])
        assert call["api"], what
        count += 1
    assert count > 200


@pytest.mark.unit
@pytest.mark.parametrize("cloud", ["alicloud", "tencentcloud"])
def test_no_action_is_listed_twice_in_a_phase(cloud: str) -> None:
    data = _raw(cloud)
    groups: list[tuple[str, list[dict[str, Any]]]] = [("provider_calls", data.get("provider_calls", []))]
    for section in ("resources", "invokes"):
        groups += [(f"{token} {phase}", entry.get(phase, []))
                   for token, entry in data[section].items() for phase in PHASES]
    groups += [(f"instance_role {user}", calls) for user, calls in data["instance_role"].items()]
    for what, calls in groups:
        names = [call["action"] for call in calls]
        assert len(names) == len(set(names)), (what, sorted(n for n in names if names.count(n) > 1))


@pytest.mark.unit
def test_the_headers_name_the_versions_read() -> None:
    ali, tc = load("alicloud"), load("tencentcloud")
    assert (ali.read_on, tc.read_on) == ("2026-12-01", "2026-12-01")
    assert ali.sources["pulumi_package"]["name"] == "pulumi-alicloud"
    assert ali.sources["pulumi_package"]["version"] == "4.0.0"
    assert ali.sources["terraform_provider"] == {
        "repo": "aliyun/terraform-provider-alicloud", "tag": "v1.289.0",
        "commit": "28ee93bc63fa0e5f919a21fc1711bde8c45d7b44", "note": ali.sources["terraform_provider"]["note"],
    }
    # Not the bridged version, and the data says so.
    assert "NEAREST HELD, NOT THE BRIDGED VERSION" in ali.sources["terraform_provider"]["note"]
    assert tc.sources["pulumi_package"] == {
        "name": "tencentcloud-iac-pulumi", "version": "0.2.3",
        "bridges": "terraform-provider-tencentcloud v1.82.42 (provider/go.mod at tag v0.2.3)",
    }
    assert tc.sources["terraform_provider"]["tag"] == "v1.82.42"
    assert tc.sources["terraform_provider"]["commit"] == "991428da4591b0481818823074303de7bd5562f5"
    for cloud in ("alicloud", "tencentcloud"):
        assert DATA[cloud].read_text().startswith(f"# API actions the {cloud} Pulumi provider really calls")


@pytest.mark.unit
def test_actions_gives_each_action_once_in_phase_order() -> None:
    create = [c.action for c in actions("alicloud", "alicloud:vpc/switch:Switch", ["create"])]
    assert create == ["vpc:CreateVSwitch", "vpc:DescribeVSwitchAttributes", "vpc:TagResources",
                      "vpc:CreateDefaultVSwitch"]
    every = [c.action for c in actions("alicloud", "alicloud:vpc/switch:Switch")]
    assert every == ["vpc:CreateVSwitch", "vpc:DescribeVSwitchAttributes", "vpc:TagResources",
                     "vpc:CreateDefaultVSwitch", "vpc:ModifyVSwitchAttribute", "vpc:UnTagResources",
                     "vpc:DeleteVSwitch"]
    assert [c.action for c in actions("tencentcloud", "tencentcloud:User/getInfo:getInfo")] == [
        "cam:GetUserAppId", "cam:DescribeSubAccounts"]
    run = actions("tencentcloud", "tencentcloud:Instance/instance:Instance", ["create"])[0]
    assert (run.action, run.where) == (
        "cvm:RunInstances",
        "tencentcloudstack/terraform-provider-tencentcloud@v1.82.42:tencentcloud/services/cvm/resource_tc_instance.go:972",
    )
    assert actions("alicloud", "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment", ["update"]) == ()


@pytest.mark.unit
def test_calls_gpuctl_never_triggers_are_told_apart() -> None:
    vpc = {c.action: c.gpuctl_triggers for c in actions("alicloud", "alicloud:vpc/network:Network", ["create"])}
    assert vpc == {"vpc:CreateVpc": True, "vpc:DescribeVpcAttribute": True, "vpc:DescribeRouteTableList": True,
                   "vpc:TagResources": True, "vpc:ModifyRouteTableAttributes": False,
                   "vpc:EnableVpcClassicLink": False, "vpc:AssociateVpcCidrBlock": False,
                   "vpc:CreateDefaultVpc": False}
    bucket = {c.action: c.gpuctl_triggers for c in actions("tencentcloud", "tencentcloud:Cos/bucket:Bucket", ["read"])}
    assert bucket["cos:GetBucketOrigin"] is True  # "no cdc_id and no custom domain" is every gpuctl bucket


@pytest.mark.unit
def test_the_instance_role_lists_the_agent_and_the_mount_tools() -> None:
    ali, tc = instance_role("alicloud"), instance_role("tencentcloud")
    assert [c.action for c in ali["lifecycle_agent"]] == ["ecs:StopInstance", "ecs:DeleteInstance"]
    assert [c.action for c in tc["lifecycle_agent"]] == ["cvm:StopInstances", "cvm:DescribeInstances",
                                                         "cvm:TerminateInstances"]
    assert [c.action for c in ali["ossfs"]] == ["oss:ListObjects", "oss:GetObject", "oss:PutObject",
                                                "oss:DeleteObject", "oss:AbortMultipartUpload",
                                                "oss:ListMultipartUploads"]
    assert {c.action for c in tc["cosfs"]} >= {"cos:GetBucket", "cos:HeadObject", "cos:GetObject", "cos:PutObject",
                                               "cos:DeleteObject", "cos:InitiateMultipartUpload",
                                               "cos:CompleteMultipartUpload"}


@pytest.mark.unit
def test_unknown_tokens_phases_and_providers_are_refused_by_name() -> None:
    with pytest.raises(GpuctlError, match=r"no API actions recorded for alicloud:ecs/disk:Disk \(alicloud\)"):
        actions("alicloud", "alicloud:ecs/disk:Disk")
    with pytest.raises(GpuctlError, match="unknown phase refresh"):
        actions("alicloud", "alicloud:vpc/network:Network", ["refresh"])
    with pytest.raises(GpuctlError, match="no API action data for provider 'local'"):
        load("local")


@pytest.mark.unit
def test_the_data_files_ship_with_the_package() -> None:
    assert '"providers/*/api_actions.yaml"' in (REPO / "pyproject.toml").read_text()


def test_the_role_an_instance_is_given_is_passed_with_passrole_on_both_clouds() -> None:
    """Written out: the resources that give an instance its role, the input that names it, the action."""
    found = {(cloud, token): (entry.passes_role.input, entry.passes_role.action)
             for cloud in ("alicloud", "tencentcloud")
             for token, entry in load(cloud).resources.items() if entry.passes_role is not None}
    assert found == {
        ("alicloud", "alicloud:ecs/instance:Instance"): ("roleName", "ram:PassRole"),
        ("alicloud", "alicloud:ecs/ramRoleAttachment:RamRoleAttachment"): ("ramRoleName", "ram:PassRole"),
        ("tencentcloud", "tencentcloud:Instance/instance:Instance"): ("camRoleName", "cam:PassRole"),
    }
