"""The cluster's network on Tencent Cloud: VPC, one subnet in the spec's zone, one security group.

The VPC and subnet are `vpc_and_subnet`'s, which the storage stack calls too: where the spec creates a
CFS, the storage stack owns them (a general-series CFS lives in its subnet for good, docs/storage.md)
and the cluster joins them by id (`GpuClusterArgs.existing_network`); the security group is always the
cluster's (a Tencent security group belongs to no VPC).

The security group's rules are one `GroupRuleSet`, which owns every rule of the group (the provider:
"this resource must be exclusive in one security group"), so a rule added in the console shows as drift.
Ingress, in order (Tencent matches rules top-down):
- SSH (tcp/22) from `admin_cidr` only;
- all traffic from members of the group (NCCL, MPI, the RDMA control path);
- ICMP from members of the group (path-MTU probing; also covered by the rule above, kept explicit so
  that narrowing that rule one day does not break MTU probing).
Egress: everything. A Tencent security group with no rule denies all traffic, both ways ("安全组未添加
任何规则时，默认拒绝所有流量", https://www.tencentcloud.com/zh/document/product/213/12452), and the
nodes need the internet for packages; nothing but SSH from the admin range comes in.
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from toolkit.providers.tencentcloud.args import GpuClusterArgs

NETWORK_TYPE = "gpuctl:tencentcloud:Network"
ACCEPT = "ACCEPT"
ANYWHERE = "0.0.0.0/0"


class ClusterNetwork(pulumi.ComponentResource):
    vpc_id: pulumi.Output[str]
    subnet_id: pulumi.Output[str]
    security_group_id: pulumi.Output[str]

    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(NETWORK_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        cluster = args.cluster
        vpc_id: pulumi.Output[str]
        subnet_id: pulumi.Output[str]
        if args.existing_network is None:
            vpc, subnet = vpc_and_subnet(cluster, vpc_cidr=args.vpc_cidr, subnet_cidr=args.subnet_cidr,
                                         zone=args.zone, tags=args.tags, opts=child)
            vpc_id, subnet_id = vpc.id, subnet.id
        else:
            vpc_id = pulumi.Output.from_input(args.existing_network.vpc_id)
            subnet_id = pulumi.Output.from_input(args.existing_network.subnet_id)
        group = tencentcloud.security.Group(
            f"{cluster}-sg",
            name=f"{cluster}-sg",
            description=f"gpuctl cluster {cluster}: SSH from the admin range, all traffic inside the group",
            tags=args.tags,
            opts=child,
        )
        tencentcloud.security.GroupRuleSet(
            f"{cluster}-sg-rules",
            security_group_id=group.id,
            ingresses=[
                {
                    "action": ACCEPT,
                    "protocol": "TCP",
                    "port": "22",
                    "cidr_block": args.admin_cidr,
                    "description": f"SSH from the admin range {args.admin_cidr}",
                },
                {
                    "action": ACCEPT,
                    "protocol": "ALL",
                    "port": "ALL",
                    "source_security_id": group.id,
                    "description": "all traffic between cluster members (NCCL, MPI, RDMA control)",
                },
                {
                    "action": ACCEPT,
                    "protocol": "ICMP",
                    "source_security_id": group.id,
                    "description": "ICMP between cluster members (path MTU probing)",
                },
            ],
            egresses=[
                {
                    "action": ACCEPT,
                    "protocol": "ALL",
                    "port": "ALL",
                    "cidr_block": ANYWHERE,
                    "description": "all outbound (package installs); a group without rules denies it",
                },
            ],
            opts=child,
        )
        self.vpc_id = vpc_id
        self.subnet_id = subnet_id
        self.security_group_id = group.id
        self.register_outputs({"vpc_id": vpc_id, "subnet_id": subnet_id, "security_group_id": group.id})


def vpc_and_subnet(
    cluster: str, *, vpc_cidr: str, subnet_cidr: str, zone: str, tags: Mapping[str, str],
    opts: pulumi.ResourceOptions,
) -> tuple[tencentcloud.vpc.Instance, tencentcloud.subnet.Instance]:
    """The cluster's VPC `<cluster>-vpc` and its one subnet `<cluster>-subnet` in `zone`; `opts` gives
    the parent (and, in the storage stack, protect)."""
    vpc = tencentcloud.vpc.Instance(
        f"{cluster}-vpc",
        name=f"{cluster}-vpc",
        cidr_block=vpc_cidr,
        is_multicast=False,
        tags=dict(tags),
        opts=opts,
    )
    subnet = tencentcloud.subnet.Instance(
        f"{cluster}-subnet",
        name=f"{cluster}-subnet",
        vpc_id=vpc.id,
        cidr_block=subnet_cidr,
        availability_zone=zone,
        is_multicast=False,
        tags=dict(tags),
        opts=opts,
    )
    return vpc, subnet
