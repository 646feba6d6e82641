"""`gpuctl:tencentcloud:GpuCluster`: a GPU cluster on Tencent Cloud (HCC RDMA or TCP), as one Pulumi component.

    GpuCluster
    ├── gpuctl:tencentcloud:Network    VPC, subnet in the zone (or the storage stack's, joined by id where it
    │                                  creates a CFS: args.existing_network), security group + its rule set
    ├── tencentcloud:Key/pair          the spec's public key
    ├── tencentcloud:Cvm/hpcCluster    only where a pool is an HCC type: the HPC cluster in the zone
    ├── gpuctl:tencentcloud:InstanceRole   only for the lifecycle agent or object volumes: CAM role + policy
    └── gpuctl:tencentcloud:NodePool   per pool: instances (in the HPC cluster for HCC) + an ActionTimer each

Every decision (billing, the ActionTimer's time, the HPC cluster, the image lookup, login user, tags) is
made in `args.GpuClusterArgs.from_spec`; this module only turns it into resources. The stack folder
(`stacks/tencentcloud/__main__.py`, for `pulumi up` by hand) runs `cluster_program`, and so can a driver.
"""

from __future__ import annotations

from typing import Any

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from toolkit.providers.pulumi.outputs import OUT_INSTANCE_ROLE
from toolkit.providers.tencentcloud.args import (
    PUBLIC_IMAGE,
    GpuClusterArgs,
    ImageRef,
    PoolArgs,
    newest_image,
)
from toolkit.providers.tencentcloud.instances import NodeDict, NodePoolResources
from toolkit.providers.tencentcloud.network import ClusterNetwork
from toolkit.providers.tencentcloud.roles import InstanceRole
from toolkit.spec.models import ClusterSpec

CLUSTER_TYPE = "gpuctl:tencentcloud:GpuCluster"
# The Pulumi project (stacks/tencentcloud/Pulumi.yaml) and the stack config keys, the same namespace
# as Alibaba's so that gpuctl and `pulumi` by hand agree on a stack.
PROJECT_NAME = "gpuctl-tencentcloud"
CONFIG_SPEC = "gpuctl:spec"
CONFIG_CLUSTER_ID = "gpuctl:clusterId"
CONFIG_CREATED_AT = "gpuctl:createdAt"
CONFIG_OWNER = "gpuctl:owner"
CONFIG_REGION = "tencentcloud:region"
# Stack outputs: the same names as Alibaba's, plus hpcClusterId.
OUT_CLUSTER = "cluster"
OUT_CLUSTER_ID = "clusterId"
OUT_NODES = "nodes"
OUT_CREATED_AT = "createdAt"
OUT_EXPIRES_AT = "expiresAt"
OUT_HPC_CLUSTER_ID = "hpcClusterId"


class GpuCluster(pulumi.ComponentResource):
    nodes: pulumi.Output[list[NodeDict]]
    vpc_id: pulumi.Output[str]
    security_group_id: pulumi.Output[str]
    hpc_cluster_id: pulumi.Output[str] | None
    instance_role: pulumi.Output[str] | None

    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(CLUSTER_TYPE, name, None, opts)
        self.args = args
        for warning in args.warnings:
            pulumi.log.warn(warning, resource=self)
        child = pulumi.ResourceOptions(parent=self)
        network = ClusterNetwork(f"{args.cluster}-network", args, opts=child)
        key_pair = tencentcloud.key.Pair(
            f"{args.cluster}-key",
            key_name=args.key_name,
            public_key=args.public_key,
            tags=args.tags,
            opts=child,
        )
        self.hpc_cluster_id = None
        if args.needs_hpc_cluster:
            hpc = tencentcloud.cvm.HpcCluster(
                f"{args.cluster}-hcc",
                name=args.hpc_cluster_name,
                zone=args.zone,
                remark=f"gpuctl cluster {args.cluster} ({args.cluster_id or 'no cluster id'}): HCC RDMA nodes",
                opts=child,
            )
            self.hpc_cluster_id = hpc.id
        self.instance_role = None
        if args.instance_role is not None:
            role = InstanceRole(f"{args.cluster}-node-role", args.instance_role, cluster=args.cluster, tags=args.tags,
                                region=args.region, opts=child)
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
                vpc_id=network.vpc_id,
                subnet_id=network.subnet_id,
                security_group_id=network.security_group_id,
                key_id=key_pair.id,
                hpc_cluster_id=self.hpc_cluster_id,
                cam_role_name=self.instance_role,
                opts=child,
            )
            node_outputs.extend(resources.nodes)
        self.nodes = pulumi.Output.all(*node_outputs).apply(list)
        self.vpc_id = network.vpc_id
        self.security_group_id = network.security_group_id
        self.register_outputs(
            {
                "node_count": args.node_count,
                "vpc_id": network.vpc_id,
                "subnet_id": network.subnet_id,
                "security_group_id": network.security_group_id,
                "key_id": key_pair.id,
                "hpc_cluster_id": self.hpc_cluster_id,
            }
        )

    def _image_id(self, image: ImageRef, pool: PoolArgs) -> pulumi.Output[str]:
        if image.image_id is not None:
            return pulumi.Output.from_input(image.image_id)
        result = tencentcloud.images.get_instance_output(
            image_name_regex=image.name_regex,
            image_types=[PUBLIC_IMAGE],
            instance_type=pool.instance_type,
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        region = self.args.region

        def newest(found: list[Any]) -> str:
            # args.newest_image: the same choice as preflight's dry run (and ignore_changes keeps an
            # existing node on its image anyway).
            chosen = newest_image([(str(i.image_id or ""), str(i.created_time or "")) for i in found])
            if chosen is None:
                raise ValueError(
                    f"no public image matching {image.name_regex} for {pool.instance_type} in {region}; "
                    f"set node_pools[{pool.name}].image to an image id (img-...) from that region"
                )
            return chosen

        found: pulumi.Output[list[Any]] = result.images
        return found.apply(newest)


def cluster_program(spec: ClusterSpec, args: GpuClusterArgs) -> GpuCluster:
    """The whole Pulumi program: build the component and export what `gpuctl` reads back."""
    cluster = GpuCluster(spec.name, args)
    export_outputs(cluster)
    return cluster


def export_outputs(cluster: GpuCluster) -> None:
    args = cluster.args
    pulumi.export(OUT_CLUSTER, args.cluster)
    pulumi.export(OUT_CLUSTER_ID, args.cluster_id)
    pulumi.export("provider", "tencentcloud")
    pulumi.export("region", args.region)
    pulumi.export("zone", args.zone)
    pulumi.export("fabric", args.fabric)
    pulumi.export("mtu", args.mtu)
    pulumi.export(OUT_CREATED_AT, args.created_at)
    pulumi.export(OUT_EXPIRES_AT, args.expires_at)
    pulumi.export("vpcId", cluster.vpc_id)
    pulumi.export("securityGroupId", cluster.security_group_id)
    pulumi.export(OUT_HPC_CLUSTER_ID, cluster.hpc_cluster_id)
    pulumi.export(OUT_NODES, cluster.nodes)
    if cluster.instance_role is not None:
        pulumi.export(OUT_INSTANCE_ROLE, cluster.instance_role)

