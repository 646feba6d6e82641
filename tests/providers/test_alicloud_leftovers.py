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
    storage_leftovers_program,
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
RAM_POLICIES = "alicloud:ram/getPolicies:getPolicies"
RAM_ROLES = "alicloud:ram/getRoles:getRoles"
ACCESS_GROUPS = "alicloud:nas/getAccessGroups:getAccessGroups"
FILE_SYSTEMS = "alicloud:nas/getFileSystems:getFileSystems"
MOUNT_TARGETS = "alicloud:nas/getMountTargets:getMountTargets"
BUCKETS = "alicloud:oss/getBuckets:getBuckets"
# Asked by tag like the kinds above; the NAS ones by name (and, for mount targets, file system).
TAGGED = [*TOKENS, RAM_POLICIES, RAM_ROLES]


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


# The RAM and NAS answers in the shapes of terraform-provider-alicloud v1.289.0's data sources: a
# role's id is its RoleId (data_source_alicloud_ram_roles.go:250), a policy's its name (…ram_policies.go:381),
# a permission group's "<name>:<file system type>" (…nas_access_groups.go:170) with its MountTargetCount,
# a mount target's its domain (…nas_mount_targets.go:180); buckets carry their tags (…oss_buckets.go).
def _policies(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ids": [r["id"] for r in found], "names": [r["id"] for r in found],
        "policies": [{"id": r["id"], "name": r["id"], "policyName": r["id"], "type": "Custom", "attachmentCount": 1,
                      "defaultVersion": "v1", "description": "", "document": "{}", "policyDocument": "{}",
                      "createDate": "2026-12-01T08:00:00Z", "updateDate": "2026-12-01T08:00:00Z", "versionId": "v1",
                      "tags": r["tags"]} for r in found],
    }


def _roles(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ids": [r["role_id"] for r in found], "names": [r["id"] for r in found],
        "roles": [{"id": r["role_id"], "name": r["id"], "arn": f"acs:ram::1234567890:role/{r['id']}",
                   "assumeRolePolicyDocument": "{}", "document": "{}", "description": "",
                   "createDate": "2026-12-01T08:00:00Z", "updateDate": "2026-12-01T08:00:00Z", "tags": r["tags"]}
                  for r in found],
    }


def _access_groups(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ids": [f"{r['id']}:standard" for r in found], "names": [r["id"] for r in found],
        "groups": [{"id": f"{r['id']}:standard", "accessGroupName": r["id"], "accessGroupType": "Vpc",
                    "type": "Vpc", "description": r["description"], "mountTargetCount": r.get("mounts", 0),
                    "ruleCount": 1} for r in found],
    }


def _file_systems(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ids": [r["id"] for r in found], "descriptions": [r.get("description", "") for r in found],
        "systems": [{"id": r["id"], "description": r.get("description", ""), "fileSystemType": "standard",
                     "protocolType": "NFS", "storageType": "Capacity", "regionId": REGION, "zoneId": f"{REGION}-a",
                     "capacity": 0, "meteredSize": 0, "encryptType": 0, "kmsKeyId": "",
                     "createTime": "2026-12-01T08:00:00CST"} for r in found],
    }


def _mount_targets(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ids": [r["id"] for r in found],
        "targets": [{"id": r["id"], "mountTargetDomain": r["id"], "accessGroupName": r["group"], "networkType": "Vpc",
                     "type": "Vpc", "status": "Active", "vpcId": "vpc-2zeleft0001", "vswitchId": "vsw-2zeleft0001"}
                    for r in found],
    }


def _buckets(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "names": [r["id"] for r in found],
        "buckets": [{"name": r["id"], "acl": "private", "location": f"oss-{REGION}", "storageClass": "Standard",
                     "creationDate": "2026-12-01", "extranetEndpoint": f"oss-{REGION}.aliyuncs.com",
                     "intranetEndpoint": f"oss-{REGION}-internal.aliyuncs.com", "owner": "1234567890",
                     "redundancyType": "LRS", "policy": "", "tags": r["tags"]} for r in found],
    }


ANSWERS: dict[str, Callable[[list[dict[str, Any]]], dict[str, Any]]] = {
    TOKENS[0]: _instances, TOKENS[1]: _enis, TOKENS[2]: _groups,
    TOKENS[3]: _vswitches, TOKENS[4]: _vpcs, TOKENS[5]: _key_pairs,
    RAM_POLICIES: _policies, RAM_ROLES: _roles, ACCESS_GROUPS: _access_groups, FILE_SYSTEMS: _file_systems,
    MOUNT_TARGETS: _mount_targets, BUCKETS: _buckets,
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
        found = [r for r in self.resources.get(args.token, []) if self.matches(args.token, r, call_args)]
        return {"id": REGION, **ANSWERS[args.token](found)}, []

    @staticmethod
    def matches(token: str, resource: dict[str, Any], call_args: dict[str, Any]) -> bool:
        """The data source's own filters: every tag (ListRoles/ListPolicies/Describe* Tag.N); a name_regex
        (Go regexp, MatchString: a search, as re.search); DescribeMountTargets' FileSystemId."""
        wanted = call_args.get("tags") or {}
        if any(resource.get("tags", {}).get(k) != v for k, v in wanted.items()):
            return False
        if call_args.get("nameRegex") and not re.search(call_args["nameRegex"], resource["id"]):
            return False
        if token == MOUNT_TARGETS and resource["file_system"] != call_args.get("fileSystemId"):
            return False
        return not (token == RAM_POLICIES and call_args.get("type") not in (None, "Custom"))


def _exports_of(cloud: FakeCloud, search: Callable[[], None]) -> dict[str, Any]:
    """Run a leftover search program under mocks; return its stack exports as plain values."""
    # A fresh root stack: set_mocks keeps one left by an earlier test, with that test's exports.
    pulumi.runtime.settings.ROOT.set(None)
    pulumi.runtime.set_mocks(cloud, project="gpuctl-test", stack=leftovers_stack_name(CLUSTER), preview=False)
    root = pulumi.runtime.get_root_resource()
    assert root is not None
    exports: dict[str, Any] = {}

    def program() -> pulumi.Output[Any]:
        search()
        outputs: dict[str, Any] = root.outputs  # type: ignore[attr-defined]
        return pulumi.Output.all(**outputs).apply(exports.update)

    run_under_mocks(program)
    return exports


def run_check(cloud: FakeCloud, cluster_id: str | None = None) -> dict[str, Any]:
    """`leftovers_program` under mocks: its stack exports."""
    return _exports_of(cloud, lambda: leftovers_program(CLUSTER, cluster_id))


def test_the_program_asks_each_kind_by_the_cluster_tag_and_creates_nothing() -> None:
    # Without a cluster id (no stack to hold one): by name alone.
    cloud = FakeCloud({})
    exports = run_check(cloud)
    # No permission group of the cluster, so no file system is asked for mount targets.
    assert sorted(token for token, _ in cloud.calls) == sorted([*TAGGED, ACCESS_GROUPS])
    assert [kind.token for kind in KINDS] == [TOKENS[0], TOKENS[1], MOUNT_TARGETS, ACCESS_GROUPS, *TOKENS[2:],
                                              RAM_POLICIES, RAM_ROLES]
    for token, call_args in cloud.calls:
        if token in TAGGED:
            assert call_args["tags"] == {"gpuctl:cluster": CLUSTER}, token
    assert dict(cloud.calls)[ACCESS_GROUPS] == {"nameRegex": "^t\\-erdma\\-spot-", "fileSystemType": "standard"}
    nothing: dict[str, Any] = {"instances": [], "networkInterfaces": [], "securityGroups": [], "vswitches": [],
                               "vpcs": [], "keyPairs": [], "ramPolicies": [], "ramRoles": [], "accessGroups": [],
                               "mountTargets": []}
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
        if token in TAGGED:
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
    values["mountTargets"] = ["31a8e48b9c:31a8e48b9c-abc12.cn-hangzhou.nas.aliyuncs.com"]
    lines = [item.line() for item in find_leftovers(values, "cn-hangzhou")]
    assert lines == [
        "ECS instance instances-1: aliyun ecs DeleteInstance --RegionId cn-hangzhou --InstanceId instances-1 "
        "--Force true",
        "ENI networkInterfaces-1: aliyun ecs DeleteNetworkInterface --RegionId cn-hangzhou "
        "--NetworkInterfaceId networkInterfaces-1",
        "NAS mount target 31a8e48b9c:31a8e48b9c-abc12.cn-hangzhou.nas.aliyuncs.com: aliyun nas DeleteMountTarget "
        "--RegionId cn-hangzhou --FileSystemId 31a8e48b9c --MountTargetDomain 31a8e48b9c-abc12.cn-hangzhou.nas."
        "aliyuncs.com",
        "NAS permission group accessGroups-1: aliyun nas DeleteAccessGroup --RegionId cn-hangzhou --AccessGroupName "
        "accessGroups-1 --FileSystemType standard",
        "security group securityGroups-1: aliyun ecs DeleteSecurityGroup --RegionId cn-hangzhou "
        "--SecurityGroupId securityGroups-1",
        "vSwitch vswitches-1: aliyun vpc DeleteVSwitch --RegionId cn-hangzhou --VSwitchId vswitches-1",
        "VPC vpcs-1: aliyun vpc DeleteVpc --RegionId cn-hangzhou --VpcId vpcs-1",
        "key pair keyPairs-1: aliyun ecs DeleteKeyPairs --RegionId cn-hangzhou --KeyPairNames '[\"keyPairs-1\"]'",
        "RAM policy ramPolicies-1: aliyun ram DetachPolicyFromRole --PolicyType Custom --PolicyName ramPolicies-1 "
        "--RoleName ramPolicies-1; aliyun ram DeletePolicy --PolicyName ramPolicies-1",
        "RAM role ramRoles-1: aliyun ram DeleteRole --RoleName ramRoles-1",
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


# --- what an interrupted `up` leaves of the role and the volumes (issue 21, item 4) -------------

ROLE = f"gpuctl-{CLUSTER}-{OURS}-node"
GROUP = f"{CLUSTER}-{OURS}-data"
DOMAIN = "31a8e48b9c-xyz12.cn-beijing.nas.aliyuncs.com"
INTERRUPTED: dict[str, list[dict[str, Any]]] = {
    RAM_ROLES: [{"id": ROLE, "role_id": "390000000000000001", "tags": _tagged(CLUSTER, OURS)},
                {"id": f"gpuctl-{CLUSTER}-{THEIRS}-node", "role_id": "390000000000000002",
                 "tags": _tagged(CLUSTER, THEIRS, "other@example.com")}],
    RAM_POLICIES: [{"id": ROLE, "tags": _tagged(CLUSTER, OURS)}],
    ACCESS_GROUPS: [
        {"id": GROUP, "description": f"gpuctl:{CLUSTER}:{OURS}:data", "mounts": 1},
        {"id": f"{CLUSTER}-{THEIRS}-data", "description": f"gpuctl:{CLUSTER}:{THEIRS}:data", "mounts": 0},
        # Named after the cluster but not gpuctl's (no mark), and a longer cluster name that starts the same.
        {"id": f"{CLUSTER}-team-share", "description": "team share"},
        {"id": f"{CLUSTER}-x-{OURS}-data", "description": f"gpuctl:{CLUSTER}-x:{OURS}:data", "mounts": 1},
    ],
    FILE_SYSTEMS: [{"id": "31a8e48b9c"}, {"id": "0bd2e4d8a1"}],
    MOUNT_TARGETS: [
        {"id": DOMAIN, "file_system": "31a8e48b9c", "group": GROUP},
        {"id": "0bd2e4d8a1-abc12.cn-beijing.nas.aliyuncs.com", "file_system": "0bd2e4d8a1",
         "group": "DEFAULT_VPC_GROUP_NAME"},
    ],
}


def test_an_interrupted_up_leaves_no_role_policy_group_or_mount_target_unseen() -> None:
    cloud = FakeCloud(INTERRUPTED)
    exports = run_check(cloud, cluster_id=OURS)
    assert [item.line() for item in find_leftovers(exports, REGION)] == [
        f"NAS mount target 31a8e48b9c:{DOMAIN}: aliyun nas DeleteMountTarget --RegionId cn-beijing "
        f"--FileSystemId 31a8e48b9c --MountTargetDomain {DOMAIN}",
        f"NAS permission group {GROUP}: aliyun nas DeleteAccessGroup --RegionId cn-beijing --AccessGroupName {GROUP} "
        "--FileSystemType standard",
        f"RAM policy {ROLE}: aliyun ram DetachPolicyFromRole --PolicyType Custom --PolicyName {ROLE} "
        f"--RoleName {ROLE}; aliyun ram DeletePolicy --PolicyName {ROLE}",
        f"RAM role {ROLE}: aliyun ram DeleteRole --RoleName {ROLE}",
    ]
    # Each file system was asked once for its mount targets, by id (DescribeMountTargets needs it).
    assert sorted(a["fileSystemId"] for t, a in cloud.calls if t == MOUNT_TARGETS) == ["0bd2e4d8a1", "31a8e48b9c"]


def test_by_name_alone_the_groups_of_every_cluster_of_the_name_are_found_with_their_ids() -> None:
    exports = run_check(FakeCloud(INTERRUPTED))
    groups = [item for item in find_leftovers(exports, REGION) if item.kind == "NAS permission group"]
    assert [(g.id, g.cluster_id) for g in groups] == [(GROUP, OURS), (f"{CLUSTER}-{THEIRS}-data", THEIRS)]
    roles = [item.tagged_line() for item in find_leftovers(exports, REGION) if item.kind == "RAM role"]
    assert roles == [
        f"RAM role {ROLE} (owner tester@example.com, cluster-id {OURS}): aliyun ram DeleteRole --RoleName {ROLE}",
        f"RAM role gpuctl-{CLUSTER}-{THEIRS}-node (owner other@example.com, cluster-id {THEIRS}): "
        f"aliyun ram DeleteRole --RoleName gpuctl-{CLUSTER}-{THEIRS}-node",
    ]


def run_storage_check(cloud: FakeCloud, cluster_id: str, *, kept_too: bool) -> dict[str, Any]:
    """`storage_leftovers_program` under mocks: its stack exports."""
    return _exports_of(cloud, lambda: storage_leftovers_program(CLUSTER, cluster_id, kept_too=kept_too))


def _stored(cluster_id: str, keep: bool, owner: str = "tester@example.com") -> dict[str, str]:
    return {**_tagged(CLUSTER, cluster_id, owner), "gpuctl:keep-on-down": "true" if keep else "false"}


def test_the_storage_search_finds_the_clusters_buckets_by_their_tags_and_spares_kept_ones() -> None:
    cloud = FakeCloud({BUCKETS: [
        {"id": f"{CLUSTER}-ckpt", "tags": _stored(OURS, keep=True)},
        {"id": f"{CLUSTER}-scratch", "tags": _stored(OURS, keep=False)},
        {"id": f"{CLUSTER}-other", "tags": _stored(THEIRS, keep=False, owner="other@example.com")},
        {"id": f"{CLUSTER}-untagged", "tags": {}},
        {"id": "team-datasets", "tags": _stored(OURS, keep=False)},  # not named after the cluster: never asked
    ]})
    exports = run_storage_check(cloud, OURS, kept_too=False)
    assert [item.line() for item in find_leftovers(exports, REGION)] == [
        f"OSS bucket {CLUSTER}-scratch: aliyun oss rm oss://{CLUSTER}-scratch -b"]
    assert [a for t, a in cloud.calls] == [{"nameRegex": "^t\\-erdma\\-spot-"}]
    deleting = run_storage_check(cloud, OURS, kept_too=True)  # `down --delete-storage`: kept ones must go too
    assert [item.id for item in find_leftovers(deleting, REGION)] == [f"{CLUSTER}-ckpt", f"{CLUSTER}-scratch"]
