"""Tencent shared storage under Pulumi's mocks: a CFS file system in the cluster's VPC and subnet, which
the storage stack creates with it (a CFS stays in its subnet for good), behind a permission group
limited to the subnet CIDR; a private COS bucket named <bucket>-<APPID>; all protected and tagged, with
every type, name and argument written out; referenced volumes create nothing (an existing CFS is
looked up for its mount IP)."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

import pulumi
import pytest

from tests.providers.pulumi_mocks import Graph, GraphMocks, record_graph
from tests.providers.tencent_mocks import CLUSTER_ID, RecordingMocks
from toolkit.providers.tencentcloud.provider import planned_storage
from toolkit.providers.tencentcloud.storage import ClusterStorage, StorageArgs, storage_program
from toolkit.spec import load_spec_text
from toolkit.spec.models import ClusterSpec

pytestmark = pytest.mark.pulumi_mock

SPEC = """\
name: t-store
provider: tencentcloud
region: ap-shanghai
zone: ap-shanghai-5
owner: tester@example.com
node_pools:
  - name: gpu
    instance_type: HCCPNV5.32XLARGE1280
    count: 2
network:
  fabric: rdma
  vpc_cidr: 10.42.0.0/16
  admin_cidr: 198.51.100.0/24
ssh:
  public_key: test_ecdsa.pub
lifecycle:
  ttl: 8h
tags:
  project: gpuctl-tests
storage:
{volumes}"""
CREATED = """\
  - name: data
    kind: nas
    mount_path: /mnt/data
    storage_type: HP
  - name: ckpt
    kind: object
    mount_path: /mnt/ckpt
  - name: scratch
    kind: nas
    mount_path: /scratch
    keep_on_down: false
"""
REFERENCED = """\
  - name: shared
    kind: nas
    mount_path: /mnt/shared
    existing: cfs-3pkq3pgr
  - name: corpus
    kind: object
    mount_path: /mnt/corpus
    existing: team-corpus-1250000000
"""
TAGS = {
    "project": "gpuctl-tests",
    "gpuctl:cluster": "t-store",
    "gpuctl:owner": "tester@example.com",
    "gpuctl:managed-by": "gpuctl",
    "gpuctl:keep-on-down": "true",
    "gpuctl:cluster-id": "5e1f0c2a9b3d",
}
STORAGE = "gpuctl:tencentcloud:Storage::t-store-storage"
APP_ID = "1250000000"
USER_INFO = "tencentcloud:User/getInfo:getInfo"
FILE_SYSTEMS = "tencentcloud:Cfs/getFileSystems:getFileSystems"
VPC = "tencentcloud:Vpc/instance:Instance"
SUBNET = "tencentcloud:Subnet/instance:Instance"


class StorageMocks(RecordingMocks):
    """What Tencent answers: a file system's mount IP and root, the account's APPID, a CFS lookup."""

    def answer(self, args: pulumi.runtime.MockResourceArgs, state: dict[str, Any]) -> None:
        if args.typ == "tencentcloud:Cfs/fileSystem:FileSystem":
            state["mountIp"] = "10.42.0.17"
            state["fsId"] = "abcd1234"
        else:
            super().answer(args, state)

    def invoke(self, token: str, call_args: dict[str, Any]) -> dict[Any, Any]:
        if token == USER_INFO:
            return {"appId": APP_ID, "ownerUin": "100000000001", "uin": "100000000001"}
        if token == FILE_SYSTEMS:
            found = {"cfs-3pkq3pgr": [{"fileSystemId": "cfs-3pkq3pgr", "mountIp": "10.8.0.5", "fsId": "9x8y"}]}
            return {"fileSystemLists": found.get(call_args["fileSystemId"], [])}
        return super().invoke(token, call_args)


def spec_of(volumes: str) -> ClusterSpec:
    return load_spec_text(SPEC.format(volumes=volumes))


def storage_graph(args: StorageArgs) -> tuple[Graph, dict[str, bool]]:
    """The graph the storage component registers, and `protect` of each resource ("type::name")."""
    protected: dict[str, bool] = {}

    def protect_of(rargs: pulumi.ResourceTransformationArgs) -> None:
        protected[f"{rargs.type_}::{rargs.name}"] = bool(rargs.opts.protect)

    def program(opts: pulumi.ResourceOptions) -> SimpleNamespace:
        merged = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(transformations=[protect_of]))
        return SimpleNamespace(nodes=ClusterStorage("t-store-storage", args, opts=merged).volumes)

    mocks: type[GraphMocks] = StorageMocks
    return record_graph(mocks, program), protected


def test_created_volumes_sit_in_the_subnet_private_tagged_and_protected() -> None:
    args = StorageArgs.from_spec(spec_of(CREATED), cluster_id=CLUSTER_ID)
    graph, protected = storage_graph(args)
    assert [(r.type, r.name, r.parent) for r in graph.custom()] == [
        (VPC, "t-store-vpc", STORAGE),
        (SUBNET, "t-store-subnet", STORAGE),
        ("tencentcloud:Cfs/accessGroup:AccessGroup", "t-store-data-access", STORAGE),
        ("tencentcloud:Cfs/accessRule:AccessRule", "t-store-data-access-rule", STORAGE),
        ("tencentcloud:Cfs/fileSystem:FileSystem", "t-store-data-nas", STORAGE),
        ("tencentcloud:Cos/bucket:Bucket", "t-store-ckpt-bucket", STORAGE),
        ("tencentcloud:Cfs/accessGroup:AccessGroup", "t-store-scratch-access", STORAGE),
        ("tencentcloud:Cfs/accessRule:AccessRule", "t-store-scratch-access-rule", STORAGE),
        ("tencentcloud:Cfs/fileSystem:FileSystem", "t-store-scratch-nas", STORAGE),
    ]
    vpc, subnet, group, rule, data, bucket, _, _, scratch = graph.custom()
    # The cluster's network as the cluster stack would make it (same names and CIDRs), with the storage
    # tags: no gpuctl:expires, kept on down while a created CFS is.
    assert vpc.inputs == {"name": "t-store-vpc", "cidr_block": "10.42.0.0/16", "is_multicast": False, "tags": TAGS}
    assert subnet.inputs == {
        "name": "t-store-subnet",
        "vpc_id": "<output>",
        "cidr_block": "10.42.0.0/24",
        "availability_zone": "ap-shanghai-5",
        "is_multicast": False,
        "tags": TAGS,
    }
    assert group.inputs == {
        "name": "gpuctl-t-store-data",
        "description": "gpuctl cluster t-store: volume data from 10.42.0.0/24",
    }
    assert rule.inputs == {
        "access_group_id": "<output>",
        "auth_client_ip": "10.42.0.0/24",  # the cluster's subnet, never the VPC or the world
        "rw_permission": "RW",
        "user_permission": "no_root_squash",
        "priority": 1,
    }
    assert data.inputs == {
        "name": "gpuctl-t-store-data",
        "availability_zone": "ap-shanghai-5",
        "access_group_id": "<output>",
        "protocol": "NFS",
        "storage_type": "HP",
        "net_interface": "VPC",
        "vpc_id": "<output>",
        "subnet_id": "<output>",
        "tags": TAGS,
    }
    # ... and those outputs are the VPC and subnet made here, as the engine registered them.
    file_systems = [inputs for typ, _, inputs in graph.registered if typ == "tencentcloud:Cfs/fileSystem:FileSystem"]
    assert {(fs["vpcId"], fs["subnetId"]) for fs in file_systems} == {("t-store-vpc-id", "t-store-subnet-id")}
    assert [inputs["vpcId"] for typ, _, inputs in graph.registered if typ == SUBNET] == ["t-store-vpc-id"]
    assert bucket.inputs == {"bucket": "<output>", "acl": "private", "force_clean": False, "tags": TAGS}
    assert scratch.inputs["storage_type"] == "SD"
    assert scratch.inputs["tags"] == {**TAGS, "gpuctl:keep-on-down": "false"}
    assert protected == {
        STORAGE: False,
        f"{VPC}::t-store-vpc": True,
        f"{SUBNET}::t-store-subnet": True,
        "tencentcloud:Cfs/accessGroup:AccessGroup::t-store-data-access": False,
        "tencentcloud:Cfs/accessRule:AccessRule::t-store-data-access-rule": False,
        "tencentcloud:Cfs/fileSystem:FileSystem::t-store-data-nas": True,
        "tencentcloud:Cos/bucket:Bucket::t-store-ckpt-bucket": True,
        "tencentcloud:Cfs/accessGroup:AccessGroup::t-store-scratch-access": False,
        "tencentcloud:Cfs/accessRule:AccessRule::t-store-scratch-access-rule": False,
        "tencentcloud:Cfs/fileSystem:FileSystem::t-store-scratch-nas": False,
    }
    # The bucket's full name, as the engine registered it: <cluster>-<volume> (the default), -<APPID>.
    assert [inputs["bucket"] for typ, _, inputs in graph.registered if typ == "tencentcloud:Cos/bucket:Bucket"] == [
        "t-store-ckpt-1250000000"
    ]
    assert [token for token, _ in graph.calls] == [USER_INFO]
    assert graph.nodes == [
        {"name": "data", "kind": "nas", "mountPath": "/mnt/data", "keepOnDown": True, "existing": False,
         "fileSystemId": "t-store-data-nas-id", "mountSource": "10.42.0.17:/", "nfs3Path": "/abcd1234",
         "storageType": "HP"},
        {"name": "ckpt", "kind": "object", "mountPath": "/mnt/ckpt", "keepOnDown": True, "existing": False,
         "bucket": "t-store-ckpt-1250000000", "endpoint": "cos.ap-shanghai.myqcloud.com"},
        {"name": "scratch", "kind": "nas", "mountPath": "/scratch", "keepOnDown": False, "existing": False,
         "fileSystemId": "t-store-scratch-nas-id", "mountSource": "10.42.0.17:/", "nfs3Path": "/abcd1234",
         "storageType": "SD"},
    ]


def test_delete_storage_drops_protect_from_every_volume() -> None:
    _, protected = storage_graph(StorageArgs.from_spec(spec_of(CREATED), cluster_id=CLUSTER_ID, unprotect=True))
    assert set(protected.values()) == {False}


def test_referenced_volumes_create_nothing_and_an_existing_cfs_is_looked_up() -> None:
    args = StorageArgs.from_spec(spec_of(REFERENCED), cluster_id=CLUSTER_ID)
    graph, _ = storage_graph(args)  # nothing to place: no network either
    assert graph.custom() == []
    assert graph.calls == [(FILE_SYSTEMS, {"fileSystemId": "cfs-3pkq3pgr"})]
    assert graph.nodes == [
        {"name": "shared", "kind": "nas", "mountPath": "/mnt/shared", "keepOnDown": True, "existing": True,
         "fileSystemId": "cfs-3pkq3pgr", "mountSource": "10.8.0.5:/", "nfs3Path": "/9x8y", "storageType": None},
        {"name": "corpus", "kind": "object", "mountPath": "/mnt/corpus", "keepOnDown": True, "existing": True,
         "bucket": "team-corpus-1250000000", "endpoint": "cos.ap-shanghai.myqcloud.com"},
    ]


def test_an_existing_cfs_that_is_not_there_fails_the_program_naming_the_volume() -> None:
    spec = spec_of(REFERENCED.replace("cfs-3pkq3pgr", "cfs-0000gone"))
    with pytest.raises(Exception, match=r"storage shared: no CFS file system cfs-0000gone in ap-shanghai"):
        storage_graph(StorageArgs.from_spec(spec))


def test_a_network_holding_only_cfs_deleted_by_down_is_neither_kept_nor_protected() -> None:
    spec = spec_of("""\
  - name: scratch
    kind: nas
    mount_path: /scratch
    keep_on_down: false
  - name: ckpt
    kind: object
    mount_path: /mnt/ckpt
""")
    graph, protected = storage_graph(StorageArgs.from_spec(spec, cluster_id=CLUSTER_ID))
    network = [r for r in graph.custom() if r.type in (VPC, SUBNET)]
    assert [r.name for r in network] == ["t-store-vpc", "t-store-subnet"]
    # A kept bucket does not keep the network: it needs none.
    assert {r.inputs["tags"]["gpuctl:keep-on-down"] for r in network} == {"false"}
    assert protected[f"{VPC}::t-store-vpc"] is False
    assert protected[f"{SUBNET}::t-store-subnet"] is False
    assert protected["tencentcloud:Cos/bucket:Bucket::t-store-ckpt-bucket"] is True


def test_the_storage_stack_exports_the_network_ids_only_where_it_made_the_network(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    exported: dict[str, Any] = {}

    def export(name: str, value: Any) -> None:
        pulumi.Output.from_input(value).apply(lambda plain: exported.__setitem__(name, plain))

    monkeypatch.setattr(pulumi, "export", export)
    for volumes in (CREATED, REFERENCED):
        exported.clear()
        args = StorageArgs.from_spec(spec_of(volumes), cluster_id=CLUSTER_ID)

        def build(_opts: pulumi.ResourceOptions, args: StorageArgs = args) -> SimpleNamespace:
            return SimpleNamespace(nodes=storage_program(args).volumes)

        record_graph(StorageMocks, build)
        if volumes is CREATED:
            assert (exported["vpcId"], exported["subnetId"]) == ("t-store-vpc-id", "t-store-subnet-id")
            assert [v["name"] for v in exported["volumes"]] == ["data", "ckpt", "scratch"]
        else:
            assert "vpcId" not in exported
            assert "subnetId" not in exported
            assert [v["name"] for v in exported["volumes"]] == ["shared", "corpus"]
        assert (exported["cluster"], exported["provider"], exported["region"]) == (
            "t-store", "tencentcloud", "ap-shanghai")


def test_the_plan_lists_exactly_what_the_component_creates() -> None:
    spec = spec_of(CREATED + REFERENCED)
    graph, _ = storage_graph(StorageArgs.from_spec(spec, cluster_id=CLUSTER_ID))
    planned = planned_storage(spec)
    assert Counter((p.type, p.name) for p in planned) == Counter((r.type, r.name) for r in graph.custom())
    assert [p.detail for p in planned if p.type == "tencentcloud:Cos/bucket:Bucket"] == [
        "COS bucket t-store-ckpt-<APPID>, private; mounted at /mnt/ckpt; kept by down (own stack, protected)"
    ]


def test_the_tencent_storage_example_builds_its_storage_stack_as_planned() -> None:
    """examples/tencentcloud-gt4-storage.yaml (a created CFS SD and COS bucket): the storage stack under mocks
    holds the VPC and subnet with the CFS, one permission group and rule, the file system and the bucket;
    the plan lists exactly those."""
    from pathlib import Path

    from toolkit.spec.loader import load_spec

    spec = load_spec(Path(__file__).resolve().parents[2] / "examples" / "tencentcloud-gt4-storage.yaml")
    graph, protected = storage_graph(StorageArgs.from_spec(spec, cluster_id=CLUSTER_ID))
    created = Counter((r.type, r.name) for r in graph.custom())
    assert created == Counter({
        (VPC, "gt4-st-vpc"): 1, (SUBNET, "gt4-st-subnet"): 1,
        ("tencentcloud:Cfs/accessGroup:AccessGroup", "gt4-st-data-access"): 1,
        ("tencentcloud:Cfs/accessRule:AccessRule", "gt4-st-data-access-rule"): 1,
        ("tencentcloud:Cfs/fileSystem:FileSystem", "gt4-st-data-nas"): 1,
        ("tencentcloud:Cos/bucket:Bucket", "gt4-st-ckpt-bucket"): 1,
    })
    # The kept volumes and the network they keep are protected.
    assert [key for key, on in protected.items() if on] == [
        f"{VPC}::gt4-st-vpc", f"{SUBNET}::gt4-st-subnet", "tencentcloud:Cfs/fileSystem:FileSystem::gt4-st-data-nas",
        "tencentcloud:Cos/bucket:Bucket::gt4-st-ckpt-bucket"]
    assert Counter((p.type, p.name) for p in planned_storage(spec)) == created
