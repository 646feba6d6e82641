"""`gpuctl:alicloud:GpuCluster`: a GPU cluster with eRDMA on Alibaba Cloud, as one Pulumi component.

    GpuCluster
    ├── gpuctl:alicloud:Network    VPC, vSwitch in the zone, security group + 3 ingress rules
    ├── alicloud:ecs/ecsKeyPair    the spec's public key
    ├── gpuctl:alicloud:InstanceRole   only for the lifecycle agent or object volumes: RAM role + policy
    └── gpuctl:alicloud:NodePool   per pool: instances (primary ERI) + their role attachments + secondary
                                   ERIs + ERI attachments

Every decision (billing, release time, ERI count, image lookup, tags, the cluster id tag) is made in
`args.GpuClusterArgs.from_spec`; this module only turns it into resources. Both the stack
folder (`stacks/alicloud/__main__.py`, for `pulumi up` by hand) and gpuctl's Automation API driver
run `cluster_program`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from toolkit.providers.alicloud.args import (
    GpuClusterArgs,
    ImageRef,
    PoolArgs,
)
from toolkit.providers.alicloud.instances import NodeDict, NodePoolResources
from toolkit.providers.alicloud.network import ClusterNetwork
from toolkit.providers.alicloud.roles import InstanceRole
from toolkit.providers.pulumi.outputs import OUT_INSTANCE_ROLE
from toolkit.providers.pulumi.pins import OUT_CREATED_AT
from toolkit.spec.models import ClusterSpec

CLUSTER_TYPE = "gpuctl:alicloud:GpuCluster"
IMAGE_ARCHITECTURE = "x86_64"
# Stack outputs (the driver reads these back into ClusterOutputs).
OUT_CLUSTER = "cluster"
OUT_CLUSTER_ID = "clusterId"
OUT_NODES = "nodes"
OUT_EXPIRES_AT = "expiresAt"


class GpuCluster(pulumi.ComponentResource):
    nodes: pulumi.Output[list[NodeDict]]
    vpc_id: pulumi.Output[str]
    vswitch_id: pulumi.Output[str]
    security_group_id: pulumi.Output[str]
    instance_role: pulumi.Output[str] | None

    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(CLUSTER_TYPE, name, None, opts)
        self.args = args
        child = pulumi.ResourceOptions(parent=self)
        network = ClusterNetwork(f"{args.cluster}-network", args, opts=child)
        key_pair = alicloud.ecs.EcsKeyPair(
            f"{args.cluster}-key",
            key_pair_name=args.key_pair_name,
            public_key=args.public_key,
            tags=args.tags,
            opts=child,
        )
        self.instance_role = None
        if args.instance_role is not None:
            role = InstanceRole(f"{args.cluster}-node-role", args.instance_role, cluster=args.cluster,
                                tags=args.tags, opts=child)
            self.instance_role = role.role_name
        images: dict[tuple[str, str], pulumi.Output[str]] = {}
        node_outputs: list[pulumi.Output[NodeDict]] = []
        for pool in args.pools:
            lookup = (pool.image.key, pool.instance_type)
            if lookup not in images:
                images[lookup] = self._image_id(pool.image, pool)
            resources = NodePoolResources(
                f"{args.cluster}-{pool.name}",
                args,
                pool,
                image_id=images[lookup],
                vswitch_id=network.vswitch_id,
                security_group_id=network.security_group_id,
                key_name=key_pair.key_pair_name,
                role_name=self.instance_role,
                opts=child,
            )
            node_outputs.extend(resources.nodes)
        self.nodes = pulumi.Output.all(*node_outputs).apply(list)
        self.vpc_id = network.vpc_id
        self.vswitch_id = network.vswitch_id
        self.security_group_id = network.security_group_id
        self.register_outputs(
            {
                "node_count": args.node_count,
                "vpc_id": network.vpc_id,
                "vswitch_id": network.vswitch_id,
                "security_group_id": network.security_group_id,
                "key_pair_name": key_pair.key_pair_name,
            }
        )

    def _image_id(self, image: ImageRef, pool: PoolArgs) -> pulumi.Output[str]:
        if image.image_id is not None:
            return pulumi.Output.from_input(image.image_id)
        result = alicloud.ecs.get_images_output(
            name_regex=image.name_regex,
            owners=image.owners,
            most_recent=True,
            architecture=IMAGE_ARCHITECTURE,
            instance_type=pool.instance_type,
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        region = self.args.region

        def first(ids: list[str]) -> str:
            if not ids:
                raise ValueError(
                    f"no public image matching {image.name_regex} for {pool.instance_type} in {region}; "
                    f"set node_pools[{pool.name}].image to an image id (m-...) from that region"
                )
            return ids[0]

        return result.ids.apply(first)


def cluster_program(spec: ClusterSpec, args: GpuClusterArgs,
                    storage: Sequence[Mapping[str, Any]] | None = None) -> GpuCluster:
    """The whole Pulumi program: build the component and export what `gpuctl` reads back. With
    `storage` (the storage stack's volumes), the nas volumes get mount targets in the cluster's
    vSwitch, and `volumes` is exported with each nas volume's mount source."""
    cluster = GpuCluster(spec.name, args)
    export_outputs(cluster)
    if storage is not None:
        export_volumes(spec, cluster, storage)
    return cluster


def export_volumes(spec: ClusterSpec, cluster: GpuCluster, storage: Sequence[Mapping[str, Any]]) -> None:
    from toolkit.providers.alicloud.storage import StorageArgs, StorageMounts

    ids = {str(v["name"]): str(v["fileSystemId"]) for v in storage if v.get("kind") == "nas"}
    mounts = StorageMounts(f"{spec.name}-mounts", StorageArgs.from_spec(spec, cluster_id=cluster.args.cluster_id),
                           file_system_ids=ids, vswitch_id=cluster.vswitch_id,
                           opts=pulumi.ResourceOptions(parent=cluster))
    def with_source(volume: Mapping[str, Any]) -> pulumi.Output[dict[str, Any]]:
        source = mounts.mount_sources.get(str(volume.get("name")))
        if source is None:
            return pulumi.Output.from_input(dict(volume))

        def merged(value: str) -> dict[str, Any]:
            return {**volume, "mountSource": value}

        return source.apply(merged)

    volumes = [with_source(volume) for volume in storage]
    pulumi.export("volumes", pulumi.Output.all(*volumes).apply(list))


def export_outputs(cluster: GpuCluster) -> None:
    args = cluster.args
    pulumi.export(OUT_CLUSTER, args.cluster)
    pulumi.export(OUT_CLUSTER_ID, args.cluster_id)
    pulumi.export("provider", "alicloud")
    pulumi.export("region", args.region)
    pulumi.export("zone", args.zone)
    pulumi.export("fabric", args.fabric)
    pulumi.export("mtu", args.mtu)
    pulumi.export(OUT_CREATED_AT, args.created_at)
    pulumi.export(OUT_EXPIRES_AT, args.expires_at)
    pulumi.export("vpcId", cluster.vpc_id)
    pulumi.export("securityGroupId", cluster.security_group_id)
    pulumi.export(OUT_NODES, cluster.nodes)
    if cluster.instance_role is not None:
        pulumi.export(OUT_INSTANCE_ROLE, cluster.instance_role)


