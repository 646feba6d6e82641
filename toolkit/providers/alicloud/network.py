"""The cluster's network on Alibaba Cloud: VPC, one vSwitch in the spec's zone, one security group.

The security group opens exactly three things:
- SSH (tcp/22) from `admin_cidr` only;
- all traffic between members of the group (NCCL, MPI, the RDMA control path);
- ICMP between members of the group (path-MTU probing for MTU 8500; also covered by the rule
  above, kept explicit so that narrowing that rule one day does not break MTU probing).
Its internal policy is `Drop`: members talk to each other only through the rule above. Egress is
Alibaba's default for a new group (all allowed), which package installs need.
"""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from toolkit.providers.alicloud.args import GpuClusterArgs

NETWORK_TYPE = "gpuctl:alicloud:Network"
SSH_PORT_RANGE = "22/22"
ALL_PORTS = "-1/-1"


class ClusterNetwork(pulumi.ComponentResource):
    vpc_id: pulumi.Output[str]
    vswitch_id: pulumi.Output[str]
    security_group_id: pulumi.Output[str]

    def __init__(
        self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(NETWORK_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        cluster = args.cluster
        vpc = alicloud.vpc.Network(
            f"{cluster}-vpc",
            vpc_name=f"{cluster}-vpc",
            cidr_block=args.vpc_cidr,
            description=f"gpuctl cluster {cluster}",
            tags=args.tags,
            opts=child,
        )
        vswitch = alicloud.vpc.Switch(
            f"{cluster}-vsw",
            vswitch_name=f"{cluster}-vsw",
            vpc_id=vpc.id,
            cidr_block=args.subnet_cidr,
            zone_id=args.zone,
            description=f"gpuctl cluster {cluster}, zone {args.zone}",
            tags=args.tags,
            opts=child,
        )
        group = alicloud.ecs.SecurityGroup(
            f"{cluster}-sg",
            security_group_name=f"{cluster}-sg",
            vpc_id=vpc.id,
            inner_access_policy="Drop",
            description=f"gpuctl cluster {cluster}: SSH from the admin range, all traffic inside the group",
            tags=args.tags,
            opts=child,
        )
        self._rules(cluster, args, group)
        self.vpc_id = vpc.id
        self.vswitch_id = vswitch.id
        self.security_group_id = group.id
        self.register_outputs(
            {"vpc_id": vpc.id, "vswitch_id": vswitch.id, "security_group_id": group.id}
        )

    def _rules(self, cluster: str, args: GpuClusterArgs, group: alicloud.ecs.SecurityGroup) -> None:
        child = pulumi.ResourceOptions(parent=self)
        alicloud.ecs.SecurityGroupRule(
            f"{cluster}-ssh-admin",
            security_group_id=group.id,
            type="ingress",
            ip_protocol="tcp",
            port_range=SSH_PORT_RANGE,
            cidr_ip=args.admin_cidr,
            nic_type="intranet",
            policy="accept",
            priority=1,
            description=f"SSH from the admin range {args.admin_cidr}",
            opts=child,
        )
        alicloud.ecs.SecurityGroupRule(
            f"{cluster}-intra-all",
            security_group_id=group.id,
            type="ingress",
            ip_protocol="all",
            port_range=ALL_PORTS,
            source_security_group_id=group.id,
            nic_type="intranet",
            policy="accept",
            priority=1,
            description="all traffic between cluster members (NCCL, MPI, RDMA control)",
            opts=child,
        )
        alicloud.ecs.SecurityGroupRule(
            f"{cluster}-intra-icmp",
            security_group_id=group.id,
            type="ingress",
            ip_protocol="icmp",
            port_range=ALL_PORTS,
            source_security_group_id=group.id,
            nic_type="intranet",
            policy="accept",
            priority=1,
            description="ICMP between cluster members (path MTU probing)",
            opts=child,
        )
