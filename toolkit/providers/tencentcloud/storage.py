"""A cluster's shared volumes on Tencent Cloud: CFS file systems and COS buckets (issue 15).

    gpuctl:tencentcloud:Storage        stack <cluster>_storage; `down` never destroys it
    ├── tencentcloud:Vpc/instance       only where a CFS is created: the cluster's VPC <cluster>-vpc
    ├── tencentcloud:Subnet/instance    ... and its subnet <cluster>-subnet in the zone
    ├── tencentcloud:Cfs/accessGroup    per created nas volume: its permission group
    ├── tencentcloud:Cfs/accessRule     read-write from the cluster's subnet CIDR only
    ├── tencentcloud:Cfs/fileSystem     general series (SD/HP), NFS, in that subnet
    └── tencentcloud:Cos/bucket         per created object volume: <bucket>-<APPID>, private, never force-cleaned

The volumes carry `protect=True` while `keep_on_down`, a second guard after the separate stack.

Unlike an Alibaba NAS (whose mount targets can come and go with the cluster), a CFS file system of the
general series is created *in* a VPC subnet and stays there: CreateCfsFileSystem takes VpcId and
SubnetId (https://www.tencentcloud.com/document/api/582/34517, read 2026) and there is no API to add a
mount point in another VPC. So where it creates a CFS, this stack owns the cluster's VPC and subnet
(`network.vpc_and_subnet`, the same CIDRs and names the cluster stack would give them), exports their
ids (`vpcId`, `subnetId`) and the cluster stack joins them (`GpuClusterArgs.existing_network`): `down`
takes the nodes and leaves the network with the kept CFS; `down --delete-storage` removes both. The
network carries the storage tags (no `gpuctl:expires`; `gpuctl:keep-on-down` true while a created CFS
is kept) and `protect` while a created CFS has it.

An `existing` volume is never created, changed or deleted: a file system is looked up by id (its
mount IP is read; it must be reachable from the cluster's subnet), a bucket name passes through.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Self

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from toolkit.providers import storage_args
from toolkit.providers.storage_args import volume_outputs
from toolkit.providers.tags import TAG_KEEP_ON_DOWN
from toolkit.providers.tencentcloud.network import vpc_and_subnet
from toolkit.spec.models import ClusterSpec, StorageVolume

STORAGE_TYPE = "gpuctl:tencentcloud:Storage"
# tencentcloud-iac-pulumi type tokens (the plan lists them; the tests assert them).
ACCESS_GROUP = "tencentcloud:Cfs/accessGroup:AccessGroup"
ACCESS_RULE = "tencentcloud:Cfs/accessRule:AccessRule"
FILE_SYSTEM = "tencentcloud:Cfs/fileSystem:FileSystem"
BUCKET = "tencentcloud:Cos/bucket:Bucket"
PROTOCOL = "NFS"
NET_INTERFACE = "VPC"  # the general series; CCN is for Turbo
# The bucket's endpoint (https://www.tencentcloud.com/document/product/436/6224, read 2026): the
# default domain <bucket>.cos.<region>.myqcloud.com, which a CVM of the same region reaches over the
# internal network.
ENDPOINT = "cos.{region}.myqcloud.com"
# Stack outputs: one dict per volume, in the spec's order (docs/storage.md lists the keys); the ids of
# the VPC and subnet where this stack owns them (the same key as the cluster stack's vpcId).
OUT_VOLUMES = "volumes"
OUT_VPC_ID = "vpcId"
OUT_SUBNET_ID = "subnetId"


@dataclass(frozen=True)
class StorageArgs(storage_args.StorageArgs):
    """The spec's decisions (storage_args.StorageArgs), the VPC CIDR, and what the network created
    with a CFS carries."""

    PROVIDER = "tencentcloud"

    vpc_cidr: str = ""  # the cluster's VPC, created here only where a CFS is

    @classmethod
    def from_spec(
        cls, spec: ClusterSpec, *, cluster_id: str | None = None, owner: str | None = None, unprotect: bool = False
    ) -> Self:
        args = super().from_spec(spec, cluster_id=cluster_id, owner=owner, unprotect=unprotect)
        return dataclasses.replace(args, vpc_cidr=spec.network.vpc_cidr)

    @property
    def file_systems(self) -> tuple[StorageVolume, ...]:
        """The CFS volumes created here (kind nas without `existing`): they need the network."""
        return tuple(v for v in self.volumes if v.kind == "nas" and v.existing is None)

    @property
    def creates_file_system(self) -> bool:
        return bool(self.file_systems)

    def network_tags(self) -> dict[str, str]:
        """The storage tags (no expiry), `gpuctl:keep-on-down` true while any created CFS is kept."""
        file_systems = self.file_systems
        kept = any(v.keep_on_down for v in file_systems)
        return {**self.tags[file_systems[0].name], TAG_KEEP_ON_DOWN: "true" if kept else "false"}

    def protect_network(self) -> bool:
        """Protected while a created CFS is: the network it sits in goes only with it."""
        return any(self.protect(v) for v in self.file_systems)


@dataclass(frozen=True)
class Subnet:
    """Where a created CFS goes: the VPC and subnet this stack creates with it."""

    vpc_id: pulumi.Output[str]
    subnet_id: pulumi.Output[str]


class ClusterStorage(pulumi.ComponentResource):
    """The volumes; `volumes` is the list the storage stack exports; `network` the VPC and subnet it
    created for a CFS (None where it creates none)."""

    volumes: pulumi.Output[list[dict[str, object]]]
    network: Subnet | None

    def __init__(self, name: str, args: StorageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(STORAGE_TYPE, name, None, opts)
        self.args = args
        self._app_id: pulumi.Output[str] | None = None
        self.network = None
        if args.creates_file_system:
            vpc, subnet = vpc_and_subnet(
                args.cluster, vpc_cidr=args.vpc_cidr, subnet_cidr=args.subnet_cidr, zone=args.zone,
                tags=args.network_tags(), opts=pulumi.ResourceOptions(parent=self, protect=args.protect_network()),
            )
            self.network = Subnet(vpc_id=vpc.id, subnet_id=subnet.id)
        outputs: list[pulumi.Output[dict[str, object]]] = []
        for volume in args.volumes:
            if volume.kind == "nas":
                outputs.append(
                    self._existing_nas(volume) if volume.existing is not None else self._nas(volume, self.network)
                )
            else:
                outputs.append(self._bucket(volume))
        self.volumes = pulumi.Output.all(*outputs).apply(list)
        self.register_outputs({"volumes": self.volumes})

    def _nas(self, volume: StorageVolume, subnet: Subnet | None) -> pulumi.Output[dict[str, object]]:
        assert subnet is not None
        args = self.args
        prefix = f"{args.cluster}-{volume.name}"
        child = pulumi.ResourceOptions(parent=self)
        group = tencentcloud.cfs.AccessGroup(
            f"{prefix}-access",
            name=f"gpuctl-{prefix}",
            description=f"gpuctl cluster {args.cluster}: volume {volume.name} from {args.subnet_cidr}",
            opts=child,
        )
        tencentcloud.cfs.AccessRule(
            f"{prefix}-access-rule",
            access_group_id=group.id,
            auth_client_ip=args.subnet_cidr,
            rw_permission="RW",
            # Checkpoints are written as root; root_squash (the default) would refuse them.
            user_permission="no_root_squash",
            priority=1,
            opts=child,
        )
        file_system = tencentcloud.cfs.FileSystem(
            f"{prefix}-nas",
            name=f"gpuctl-{prefix}",
            availability_zone=args.zone,
            access_group_id=group.id,
            protocol=PROTOCOL,
            storage_type=args.storage_type(volume),
            net_interface=NET_INTERFACE,
            vpc_id=subnet.vpc_id,
            subnet_id=subnet.subnet_id,
            tags=dict(args.tags[volume.name]),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect(volume)),
        )
        storage_type = args.storage_type(volume)
        return pulumi.Output.all(file_system.id, file_system.mount_ip, file_system.fs_id).apply(
            lambda v: {**volume_outputs(volume), **_nas_outputs(v[0], v[1], v[2]), "storageType": storage_type}
        )

    def _existing_nas(self, volume: StorageVolume) -> pulumi.Output[dict[str, object]]:
        assert volume.existing is not None
        existing = volume.existing
        found = tencentcloud.cfs.get_file_systems_output(
            file_system_id=existing, opts=pulumi.InvokeOutputOptions(parent=self)
        )
        region = self.args.region

        def read(file_systems: Sequence[Any]) -> dict[str, object]:
            if not file_systems:
                raise ValueError(
                    f"storage {volume.name}: no CFS file system {existing} in {region}; check storage[].existing"
                )
            first = file_systems[0]
            return {**volume_outputs(volume), **_nas_outputs(existing, str(first.mount_ip), str(first.fs_id)),
                    "storageType": None}

        lists: pulumi.Output[Sequence[Any]] = found.file_system_lists
        return lists.apply(read)

    def _bucket(self, volume: StorageVolume) -> pulumi.Output[dict[str, object]]:
        args = self.args
        endpoint = ENDPOINT.format(region=args.region)
        if volume.existing is not None:
            return pulumi.Output.from_input({**volume_outputs(volume), "bucket": volume.existing, "endpoint": endpoint})
        name = volume.bucket_name(args.cluster)
        bucket = tencentcloud.cos.Bucket(
            f"{args.cluster}-{volume.name}-bucket",
            bucket=self.app_id().apply(lambda app_id: f"{name}-{app_id}"),
            acl="private",
            # A bucket that still holds objects is never emptied by a delete: the delete fails instead.
            force_clean=False,
            tags=dict(args.tags[volume.name]),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect(volume)),
        )
        full_name: pulumi.Output[str] = bucket.bucket
        return full_name.apply(lambda full: {**volume_outputs(volume), "bucket": full, "endpoint": endpoint})

    def app_id(self) -> pulumi.Output[str]:
        """The account's APPID, the suffix of every COS bucket name; looked up once."""
        if self._app_id is None:
            info = tencentcloud.user.get_info_output(opts=pulumi.InvokeOutputOptions(parent=self))
            self._app_id = info.app_id
        return self._app_id


def _nas_outputs(file_system_id: str, mount_ip: str, fs_id: str) -> dict[str, object]:
    # NFS v4 mounts the root of the file system (<ip>:/); v3 needs the fs id as the path (<ip>:/<fsid>).
    return {"fileSystemId": file_system_id, "mountSource": f"{mount_ip}:/", "nfs3Path": f"/{fs_id}"}


def storage_program(args: StorageArgs) -> ClusterStorage:
    """The whole storage stack's program: build the volumes (and the network of a CFS), export them."""
    storage = ClusterStorage(f"{args.cluster}-storage", args)
    pulumi.export("cluster", args.cluster)
    pulumi.export("provider", "tencentcloud")
    pulumi.export("region", args.region)
    pulumi.export(OUT_VOLUMES, storage.volumes)
    if storage.network is not None:
        pulumi.export(OUT_VPC_ID, storage.network.vpc_id)
        pulumi.export(OUT_SUBNET_ID, storage.network.subnet_id)
    return storage
