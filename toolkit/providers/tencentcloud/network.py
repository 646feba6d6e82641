"""The cluster's network on Tencent Cloud: VPC, one subnet in the spec's zone, one security group.

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
        vpc = tencentcloud.vpc.Instance(
            f"{cluster}-vpc",
            name=f"{cluster}-vpc",
            cidr_block=args.vpc_cidr,
            is_multicast=False,
            tags=args.tags,
            opts=child,
        )
        subnet = tencentcloud.subnet.Instance(
            f"{cluster}-subnet",
            name=f"{cluster}-subnet",
            vpc_id=vpc.id,
            cidr_block=args.subnet_cidr,
            availability_zone=args.zone,
            is_multicast=False,
            tags=args.tags,
            opts=child,
        )
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
        self.vpc_id = vpc.id
        self.subnet_id = subnet.id
        self.security_group_id = group.id
        self.register_outputs({"vpc_id": vpc.id, "subnet_id": subnet.id, "security_group_id": group.id})
