"""A cluster's shared volumes on Alibaba Cloud: NAS file systems and OSS buckets (issue 15).

Two components, with two lifetimes (docs/storage.md):

    gpuctl:alicloud:Storage         stack <cluster>_storage; `down` never destroys it
    ├── alicloud:nas/fileSystem      per created nas volume: general-purpose NAS, NFS, in the zone
    ├── alicloud:oss/bucket          per created object volume, never force-destroyed
    ├── alicloud:oss/bucketAcl       private
    └── alicloud:oss/bucketPublicAccessBlock   no ACL or policy can make it public later

    gpuctl:alicloud:StorageMounts   in the cluster's own stack, built by its program
    ├── alicloud:nas/accessGroup     per nas volume (created or existing): a VPC permission group,
    │                                 named <cluster>-<cluster id>-<volume>
    ├── alicloud:nas/accessRule      read-write from the cluster's vSwitch CIDR only
    └── alicloud:nas/mountTarget     in the cluster's vSwitch

The volumes hold the data and carry `protect=True` while `keep_on_down` (a second guard after the
separate stack: even a destroy of the storage stack refuses to delete them). Everything network-facing
(permission group, mount target) lives and dies with the cluster's vSwitch: a mount target holds no
data, and one left in the storage stack would stop `down` from deleting the vSwitch and point at a
vSwitch the next `up` no longer has. An `existing` volume is never created, changed or deleted: its id
or name passes through to the outputs, and it gets a mount target of this cluster like any other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Self

import pulumi
import pulumi_alicloud as alicloud

from toolkit import hints
from toolkit.errors import UsageError
from toolkit.providers import storage_args
from toolkit.providers.alicloud.leftovers import access_group_description
from toolkit.providers.storage_args import volume_outputs
from toolkit.spec.models import ClusterSpec, StorageVolume

STORAGE_TYPE = "gpuctl:alicloud:Storage"
MOUNTS_TYPE = "gpuctl:alicloud:StorageMounts"
# pulumi-alicloud type tokens (the plan lists them; the tests assert them).
FILE_SYSTEM = "alicloud:nas/fileSystem:FileSystem"
BUCKET = "alicloud:oss/bucket:Bucket"
BUCKET_ACL = "alicloud:oss/bucketAcl:BucketAcl"
BUCKET_PUBLIC_ACCESS_BLOCK = "alicloud:oss/bucketPublicAccessBlock:BucketPublicAccessBlock"
ACCESS_GROUP = "alicloud:nas/accessGroup:AccessGroup"
ACCESS_RULE = "alicloud:nas/accessRule:AccessRule"
MOUNT_TARGET = "alicloud:nas/mountTarget:MountTarget"
# General-purpose NAS over NFS; the only class gpuctl mounts (extreme and CPFS need a capacity and,
# for CPFS, another client).
FILE_SYSTEM_KIND = "standard"
PROTOCOL = "NFS"
# A bucket's access from inside the region's VPCs (https://www.alibabacloud.com/help/en/oss/user-guide/
# regions-and-endpoints, read 2026): oss-<region>-internal.aliyuncs.com. A created bucket reports it itself.
INTERNAL_ENDPOINT = "oss-{region}-internal.aliyuncs.com"
# Stack outputs: one dict per volume, in the spec's order (docs/storage.md lists the keys).
OUT_VOLUMES = "volumes"


# NAS permission groups (CreateAccessGroup, https://www.alibabacloud.com/help/en/nas/api-createaccessgroup
# and https://help.aliyun.com/document_detail/62630.html, read 2026-12-01): the name 3-64 characters,
# starting with a letter, of letters, digits, '_' and '-', unique in the account; the description 2-128
# characters, starting with a letter, of letters, digits, ':', '_' and '-', never http:// or https://.
# terraform-provider-alicloud checks neither (resource_alicloud_nas_access_group.go:30-57 at v1.289.0):
# a bad one fails at CreateAccessGroup, after the nodes exist, so gpuctl checks its own here.
ACCESS_GROUP_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{2,63}")
ACCESS_GROUP_DESCRIPTION = re.compile(r"[A-Za-z][A-Za-z0-9:_-]{1,127}")
# An account holds at most 20 permission groups per region ("一个阿里云账号在单个地域内最多可以创建 20 个
# 权限组", CreateAccessGroup, same pages); each nas volume takes one (checks.py warns).
ACCESS_GROUPS_PER_REGION = 20


@dataclass(frozen=True)
class StorageArgs(storage_args.StorageArgs):
    """The spec's decisions (storage_args.StorageArgs) and which volumes get a mount target here."""

    PROVIDER = "alicloud"
    cluster_id: str | None = None  # names the permission groups: two clusters of one name never collide

    @classmethod
    def from_spec(
        cls, spec: ClusterSpec, *, cluster_id: str | None = None, owner: str | None = None, unprotect: bool = False
    ) -> Self:
        return replace(super().from_spec(spec, cluster_id=cluster_id, owner=owner, unprotect=unprotect),
                       cluster_id=cluster_id)

    def nas_volumes(self) -> list[StorageVolume]:
        return [v for v in self.volumes if v.kind == "nas"]

    def access_group(self, volume: StorageVolume) -> tuple[str, str]:
        """(name, description) of `volume`'s permission group: `<cluster>-<cluster id>-<volume>` (at most
        62 characters: gpuctl's ids are 12) and `gpuctl:<cluster>:<cluster id>:<volume>`, the mark the
        leftover search finds it by (leftovers.py); UsageError for a name the API would refuse."""
        if self.cluster_id is None:
            raise UsageError(f"cluster {self.cluster}: NAS permission groups need the cluster id, which "
                             f"`{hints.command('up')}` pins; build the storage mounts through it")
        name = f"{self.cluster}-{self.cluster_id}-{volume.name}"
        description = access_group_description(self.cluster, self.cluster_id, volume.name)
        if not ACCESS_GROUP_NAME.fullmatch(name) or not ACCESS_GROUP_DESCRIPTION.fullmatch(description):
            raise UsageError(f"volume {volume.name}: NAS permission group {name!r} / {description!r} is not one "
                             "CreateAccessGroup takes (name: 3-64 letters, digits, '_', '-'; description: 2-128 "
                             "letters, digits, ':', '_', '-'; both starting with a letter)",
                             hint="use a shorter cluster name or cluster id")
        return name, description


class ClusterStorage(pulumi.ComponentResource):
    """The volumes themselves; `volumes` is the list the storage stack exports."""

    volumes: pulumi.Output[list[dict[str, object]]]
    file_system_ids: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: StorageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(STORAGE_TYPE, name, None, opts)
        self.args = args
        self.file_system_ids = {}
        outputs: list[pulumi.Output[dict[str, object]]] = []
        for volume in args.volumes:
            outputs.append(self._nas(volume) if volume.kind == "nas" else self._bucket(volume))
        self.volumes = pulumi.Output.all(*outputs).apply(list)
        self.register_outputs({"volumes": self.volumes})

    def _kept(self, volume: StorageVolume) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, protect=self.args.protect(volume))

    def _nas(self, volume: StorageVolume) -> pulumi.Output[dict[str, object]]:
        args = self.args
        if volume.existing is not None:
            file_system_id: pulumi.Output[str] = pulumi.Output.from_input(volume.existing)
        else:
            file_system = alicloud.nas.FileSystem(
                f"{args.cluster}-{volume.name}-nas",
                file_system_type=FILE_SYSTEM_KIND,
                protocol_type=PROTOCOL,
                storage_type=args.storage_type(volume),
                zone_id=args.zone,
                # NAS: 2-128 characters starting with a letter; letters, digits, ':', '_' and '-'.
                description=f"gpuctl-{args.cluster}-{volume.name}",
                tags=dict(args.tags[volume.name]),
                opts=self._kept(volume),
            )
            file_system_id = file_system.id
        self.file_system_ids[volume.name] = file_system_id
        return pulumi.Output.all(file_system_id).apply(
            lambda ids: {
                **volume_outputs(volume),
                "fileSystemId": ids[0],
                "storageType": None if volume.existing is not None else args.storage_type(volume),
            }
        )

    def _bucket(self, volume: StorageVolume) -> pulumi.Output[dict[str, object]]:
        args = self.args
        name = volume.bucket_name(args.cluster)
        if volume.existing is not None:
            return pulumi.Output.from_input(
                {**volume_outputs(volume), "bucket": name, "endpoint": INTERNAL_ENDPOINT.format(region=args.region)}
            )
        bucket = alicloud.oss.Bucket(
            f"{args.cluster}-{volume.name}-bucket",
            bucket=name,
            storage_class="Standard",
            # A bucket that still holds objects is never emptied by a delete: the delete fails instead.
            force_destroy=False,
            tags=dict(args.tags[volume.name]),
            opts=self._kept(volume),
        )
        child = pulumi.ResourceOptions(parent=self)
        alicloud.oss.BucketAcl(f"{args.cluster}-{volume.name}-bucket-acl", bucket=bucket.bucket, acl="private",
                               opts=child)
        alicloud.oss.BucketPublicAccessBlock(
            f"{args.cluster}-{volume.name}-bucket-block", bucket=bucket.bucket, block_public_access=True, opts=child
        )
        return pulumi.Output.all(bucket.bucket, bucket.intranet_endpoint).apply(
            lambda values: {**volume_outputs(volume), "bucket": values[0], "endpoint": values[1]}
        )


class StorageMounts(pulumi.ComponentResource):
    """Mount targets of the nas volumes in the cluster's vSwitch: built by the cluster's program, from
    the storage stack's file system ids, and removed with the cluster (no data is in them)."""

    mount_sources: dict[str, pulumi.Output[str]]

    def __init__(
        self,
        name: str,
        args: StorageArgs,
        *,
        file_system_ids: Mapping[str, pulumi.Input[str]],
        vswitch_id: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(MOUNTS_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.mount_sources = {}
        for volume in args.nas_volumes():
            prefix = f"{args.cluster}-{volume.name}"
            group_name, description = args.access_group(volume)
            group = alicloud.nas.AccessGroup(
                f"{prefix}-access",
                access_group_name=group_name,
                access_group_type="Vpc",
                file_system_type=FILE_SYSTEM_KIND,
                description=description,
                opts=child,
            )
            alicloud.nas.AccessRule(
                f"{prefix}-access-rule",
                access_group_name=group.access_group_name,
                file_system_type=FILE_SYSTEM_KIND,
                source_cidr_ip=args.subnet_cidr,
                rw_access_type="RDWR",
                # The nodes log in as root (Alibaba images) and write checkpoints as root.
                user_access_type="no_squash",
                priority=1,
                opts=child,
            )
            target = alicloud.nas.MountTarget(
                f"{prefix}-mount",
                file_system_id=file_system_ids[volume.name],
                access_group_name=group.access_group_name,
                network_type="Vpc",
                vswitch_id=vswitch_id,
                opts=child,
            )
            self.mount_sources[volume.name] = target.mount_target_domain.apply(lambda domain: f"{domain}:/")
        self.register_outputs({"mount_sources": self.mount_sources})


def storage_program(args: StorageArgs) -> ClusterStorage:
    """The whole storage stack's program: build the volumes and export them."""
    storage = ClusterStorage(f"{args.cluster}-storage", args)
    pulumi.export("cluster", args.cluster)
    pulumi.export("provider", "alicloud")
    pulumi.export("region", args.region)
    pulumi.export(OUT_VOLUMES, storage.volumes)
    return storage
