"""Alibaba shared storage under Pulumi's mocks: the storage stack's volumes (NAS file system, OSS
bucket, private and protected) and the cluster stack's mount targets (permission group limited to the
vSwitch CIDR), with every type, name and argument written out; referenced volumes create nothing."""

from __future__ import annotations

from collections import Counter
from fnmatch import fnmatchcase
from types import SimpleNamespace
from typing import Any

import pulumi
import pytest

from tests.providers.alicloud_mocks import CLUSTER_ID, RecordingMocks
from tests.providers.pulumi_mocks import Graph, GraphMocks, record_graph
from toolkit.providers.alicloud.provider import planned_storage
from toolkit.providers.alicloud.storage import ClusterStorage, StorageArgs, StorageMounts
from toolkit.spec import load_spec_text
from toolkit.spec.models import ClusterSpec

pytestmark = pytest.mark.pulumi_mock

SPEC = """\
name: t-store
provider: alicloud
region: cn-wulanchabu
zone: cn-wulanchabu-c
owner: tester@example.com
node_pools:
  - name: gpu
    instance_type: ecs.ebmgn7ex.32xlarge
    count: 2
network:
  fabric: erdma
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
    storage_type: Capacity
  - name: ckpt
    kind: object
    mount_path: /mnt/ckpt
    bucket: t-store-ckpt-2026
  - name: scratch
    kind: nas
    mount_path: /scratch
    keep_on_down: false
"""
REFERENCED = """\
  - name: shared
    kind: nas
    mount_path: /mnt/shared
    existing: 31a8e48b9c
  - name: corpus
    kind: object
    mount_path: /mnt/corpus
    existing: team-corpus
"""
TAGS = {
    "project": "gpuctl-tests",
    "gpuctl:cluster": "t-store",
    "gpuctl:owner": "tester@example.com",
    "gpuctl:managed-by": "gpuctl",
    "gpuctl:keep-on-down": "true",
    "gpuctl:cluster-id": "5e1f0c2a9b3d",
}
STORAGE = "gpuctl:alicloud:Storage::t-store-storage"
MOUNTS = "gpuctl:alicloud:StorageMounts::t-store-mounts"


class StorageMocks(RecordingMocks):
    """What Alibaba answers for the storage resources: a bucket's endpoint, a mount target's domain."""

    def answer(self, args: pulumi.runtime.MockResourceArgs, state: dict[str, Any]) -> None:
        if args.typ == "alicloud:oss/bucket:Bucket":
            state["intranetEndpoint"] = "oss-cn-wulanchabu-internal.aliyuncs.com"
        elif args.typ == "alicloud:nas/mountTarget:MountTarget":
            state["mountTargetDomain"] = f"{args.name}.cn-wulanchabu.nas.aliyuncs.com"
        else:
            super().answer(args, state)


def spec_of(volumes: str) -> ClusterSpec:
    return load_spec_text(SPEC.format(volumes=volumes))


def record(build: Any) -> tuple[Graph, dict[str, bool]]:
    """The graph `build(opts)` registers, and `protect` of each resource ("type::name")."""
    protected: dict[str, bool] = {}

    def protect_of(rargs: pulumi.ResourceTransformationArgs) -> None:
        protected[f"{rargs.type_}::{rargs.name}"] = bool(rargs.opts.protect)

    def program(opts: pulumi.ResourceOptions) -> SimpleNamespace:
        merged = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(transformations=[protect_of]))
        return SimpleNamespace(nodes=build(merged))

    mocks: type[GraphMocks] = StorageMocks
    return record_graph(mocks, program), protected


def storage_graph(args: StorageArgs) -> tuple[Graph, dict[str, bool]]:
    return record(lambda opts: ClusterStorage("t-store-storage", args, opts=opts).volumes)


def mounts_graph(args: StorageArgs, file_system_ids: dict[str, str]) -> tuple[Graph, dict[str, bool]]:
    def build(opts: pulumi.ResourceOptions) -> pulumi.Output[list[object]]:
        mounts = StorageMounts("t-store-mounts", args, file_system_ids=file_system_ids, vswitch_id="vsw-mock",
                               opts=opts)
        return pulumi.Output.all(*mounts.mount_sources.values()).apply(list)

    return record(build)


def test_created_volumes_are_tagged_private_and_protected() -> None:
    args = StorageArgs.from_spec(spec_of(CREATED), cluster_id=CLUSTER_ID)
    graph, protected = storage_graph(args)
    assert [(r.type, r.name, r.parent) for r in graph.custom()] == [
        ("alicloud:nas/fileSystem:FileSystem", "t-store-data-nas", STORAGE),
        ("alicloud:oss/bucket:Bucket", "t-store-ckpt-bucket", STORAGE),
        ("alicloud:oss/bucketAcl:BucketAcl", "t-store-ckpt-bucket-acl", STORAGE),
        ("alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock", "t-store-ckpt-bucket-block", STORAGE),
        ("alicloud:nas/fileSystem:FileSystem", "t-store-scratch-nas", STORAGE),
    ]
    data, bucket, acl, block, scratch = graph.custom()
    assert data.inputs == {
        "file_system_type": "standard",
        "protocol_type": "NFS",
        "storage_type": "Capacity",
        "zone_id": "cn-wulanchabu-c",
        "description": "gpuctl-t-store-data",
        "tags": TAGS,
    }
    assert bucket.inputs == {"bucket": "t-store-ckpt-2026", "storage_class": "Standard", "force_destroy": False,
                             "tags": TAGS}
    assert acl.inputs == {"bucket": "<output>", "acl": "private"}
    assert block.inputs == {"bucket": "<output>", "block_public_access": True}
    # keep_on_down: false is neither protected nor tagged as kept; the default class is Performance.
    assert scratch.inputs["storage_type"] == "Performance"
    assert scratch.inputs["tags"] == {**TAGS, "gpuctl:keep-on-down": "false"}
    assert "gpuctl:expires" not in data.inputs["tags"]
    assert protected == {
        STORAGE: False,
        "alicloud:nas/fileSystem:FileSystem::t-store-data-nas": True,
        "alicloud:oss/bucket:Bucket::t-store-ckpt-bucket": True,
        "alicloud:oss/bucketAcl:BucketAcl::t-store-ckpt-bucket-acl": False,
        "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock::t-store-ckpt-bucket-block": False,
        "alicloud:nas/fileSystem:FileSystem::t-store-scratch-nas": False,
    }
    assert graph.nodes == [
        {"name": "data", "kind": "nas", "mountPath": "/mnt/data", "keepOnDown": True, "existing": False,
         "fileSystemId": "t-store-data-nas-id", "storageType": "Capacity"},
        {"name": "ckpt", "kind": "object", "mountPath": "/mnt/ckpt", "keepOnDown": True, "existing": False,
         "bucket": "t-store-ckpt-2026", "endpoint": "oss-cn-wulanchabu-internal.aliyuncs.com"},
        {"name": "scratch", "kind": "nas", "mountPath": "/scratch", "keepOnDown": False, "existing": False,
         "fileSystemId": "t-store-scratch-nas-id", "storageType": "Performance"},
    ]


def test_delete_storage_drops_protect_from_every_volume() -> None:
    args = StorageArgs.from_spec(spec_of(CREATED), cluster_id=CLUSTER_ID, unprotect=True)
    _, protected = storage_graph(args)
    assert set(protected.values()) == {False}


def test_referenced_volumes_create_nothing_and_pass_through() -> None:
    args = StorageArgs.from_spec(spec_of(REFERENCED), cluster_id=CLUSTER_ID)
    graph, _ = storage_graph(args)
    assert graph.custom() == []
    assert graph.calls == []
    assert graph.nodes == [
        {"name": "shared", "kind": "nas", "mountPath": "/mnt/shared", "keepOnDown": True, "existing": True,
         "fileSystemId": "31a8e48b9c", "storageType": None},
        {"name": "corpus", "kind": "object", "mountPath": "/mnt/corpus", "keepOnDown": True, "existing": True,
         "bucket": "team-corpus", "endpoint": "oss-cn-wulanchabu-internal.aliyuncs.com"},
    ]


def test_mount_targets_sit_in_the_vswitch_and_admit_only_its_cidr() -> None:
    args = StorageArgs.from_spec(spec_of(CREATED + REFERENCED), cluster_id=CLUSTER_ID)
    ids = {"data": "fs-data", "scratch": "fs-scratch", "shared": "31a8e48b9c"}
    graph, protected = mounts_graph(args, ids)
    assert [(r.type, r.name, r.parent) for r in graph.custom()] == [
        (kind, f"t-store-{volume}-{suffix}", MOUNTS)
        for volume in ("data", "scratch", "shared")
        for kind, suffix in (
            ("alicloud:nas/accessGroup:AccessGroup", "access"),
            ("alicloud:nas/accessRule:AccessRule", "access-rule"),
            ("alicloud:nas/mountTarget:MountTarget", "mount"),
        )
    ]
    group, rule, target = graph.custom()[6:]
    assert group.inputs == {
        # The cluster id in the name: two clusters named t-store never share (or collide on) a group;
        # the description, in the characters CreateAccessGroup takes, is what the leftover search reads.
        "access_group_name": "t-store-5e1f0c2a9b3d-shared",
        "access_group_type": "Vpc",
        "file_system_type": "standard",
        "description": "gpuctl:t-store:5e1f0c2a9b3d:shared",
    }
    assert rule.inputs == {
        "access_group_name": "<output>",
        "file_system_type": "standard",
        "source_cidr_ip": "10.42.0.0/24",  # the cluster's vSwitch, never the VPC or the world
        "rw_access_type": "RDWR",
        "user_access_type": "no_squash",
        "priority": 1,
    }
    assert target.inputs == {
        "file_system_id": "31a8e48b9c",
        "access_group_name": "<output>",
        "network_type": "Vpc",
        "vswitch_id": "vsw-mock",
    }
    assert set(protected.values()) == {False}  # no data in a mount target: it goes with the cluster
    sources: list[object] = list(graph.nodes)
    assert sources == [
        "t-store-data-mount.cn-wulanchabu.nas.aliyuncs.com:/",
        "t-store-scratch-mount.cn-wulanchabu.nas.aliyuncs.com:/",
        "t-store-shared-mount.cn-wulanchabu.nas.aliyuncs.com:/",
    ]


def test_a_spec_without_storage_builds_no_mounts_and_plans_nothing() -> None:
    spec = load_spec_text(SPEC.format(volumes="").replace("storage:\n", ""))
    graph, _ = mounts_graph(StorageArgs.from_spec(spec), {})
    assert graph.custom() == []
    assert planned_storage(spec) == []


def test_the_plan_lists_exactly_what_both_components_create() -> None:
    spec = spec_of(CREATED + REFERENCED)
    args = StorageArgs.from_spec(spec, cluster_id=CLUSTER_ID)
    volumes, _ = storage_graph(args)
    mounts, _ = mounts_graph(args, {"data": "a", "scratch": "b", "shared": "c"})
    created = Counter((r.type, r.name) for r in volumes.custom() + mounts.custom())
    planned = planned_storage(spec)
    assert Counter((p.type, p.name) for p in planned) == created
    assert all(not any(c in p.name for c in "*?[") and p.count == 1 for p in planned)
    assert [p.detail for p in planned if fnmatchcase(p.name, "*-nas")] == [
        "NAS NFS, Capacity, in cn-wulanchabu-c; mounted at /mnt/data; kept by down (own stack, protected)",
        "NAS NFS, Performance, in cn-wulanchabu-c; mounted at /scratch; deleted by down",
    ]
