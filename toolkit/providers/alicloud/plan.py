"""What `gpuctl plan` lists for an Alibaba Cloud spec: the resources `gpuctl:alicloud:GpuCluster` creates.

Types are pulumi-alicloud's type tokens and names the Pulumi resource names the component gives
them (`<cluster>-<pool>-*` for one per node, with a count); tests/providers/test_provider_plans.py
checks the list against the component's own graph under Pulumi's mocks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit.providers.base import PlannedResource
from toolkit.spec.models import ClusterSpec

if TYPE_CHECKING:
    from toolkit.catalog.result import CheckResult

# pulumi-alicloud's token of the per-instance role attachment (instances.ROLE_ATTACHMENT; not imported
# from there: it imports Pulumi, which plan does not need).
ROLE_ATTACHMENT = "alicloud:ecs/ramRoleAttachment:RamRoleAttachment"


def ssh_rule_detail(spec: ClusterSpec) -> str:
    return f"tcp/22 from {spec.network.admin_cidr}" + (
        " (world-open, allowed explicitly)" if spec.network.allow_world_ssh else ""
    )


def planned_resources(spec: ClusterSpec, check: CheckResult) -> list[PlannedResource]:
    name = spec.name
    out = [
        PlannedResource(type="alicloud:vpc/network:Network", name=f"{name}-vpc", detail=spec.network.vpc_cidr),
        PlannedResource(
            type="alicloud:vpc/switch:Switch",
            name=f"{name}-vsw",
            detail=f"{spec.network.effective_subnet_cidr} in {spec.zone}",
        ),
        PlannedResource(type="alicloud:ecs/securityGroup:SecurityGroup", name=f"{name}-sg"),
        PlannedResource(
            type="alicloud:ecs/securityGroupRule:SecurityGroupRule",
            name=f"{name}-ssh-admin",
            detail=ssh_rule_detail(spec),
        ),
        PlannedResource(
            type="alicloud:ecs/securityGroupRule:SecurityGroupRule",
            name=f"{name}-intra-all",
            detail="all protocols between members of the group (NCCL, MPI, RDMA control)",
        ),
        PlannedResource(
            type="alicloud:ecs/securityGroupRule:SecurityGroupRule",
            name=f"{name}-intra-icmp",
            detail="ICMP between members (MTU probing)",
        ),
        PlannedResource(type="alicloud:ecs/ecsKeyPair:EcsKeyPair", name=f"{name}-key"),
    ]
    out += planned_role(spec)
    role_needed = bool(planned_role(spec))
    for pool in spec.node_pools:
        release = "" if pool.billing.mode == "monthly" else f", auto-release after {spec.lifecycle.ttl}"
        eri = ", primary interface is an ERI" if spec.network.fabric == "erdma" else ""
        out.append(
            PlannedResource(
                type="alicloud:ecs/instance:Instance",
                name=f"{name}-{pool.name}-*",
                count=pool.count,
                detail=f"{pool.instance_type}, {pool.billing.mode}{release}{eri}",
            )
        )
        if role_needed:
            out.append(
                PlannedResource(
                    type=ROLE_ATTACHMENT,
                    name=f"{name}-{pool.name}-*-role",
                    count=pool.count,
                    detail="the cluster's RAM role on each instance (AttachInstanceRamRole)",
                )
            )
        row = check.rows.get(pool.name)
        if spec.network.fabric == "erdma" and row is not None and row.eris_per_node()[0] > 1:
            eris, basis = row.eris_per_node()
            # The primary ERI is the instance's own primary interface in HighPerformance mode; each
            # further ERI is an elastic network interface plus its attachment.
            detail = f"{eris} ERI per node: {basis}; the first is the instance's primary interface"
            out.append(
                PlannedResource(
                    type="alicloud:ecs/ecsNetworkInterface:EcsNetworkInterface",
                    name=f"{name}-{pool.name}-*-eri*",
                    count=pool.count * (eris - 1),
                    detail=detail + ", these are the secondary ERIs (HighPerformance traffic mode)",
                )
            )
            out.append(
                PlannedResource(
                    type="alicloud:ecs/ecsNetworkInterfaceAttachment:EcsNetworkInterfaceAttachment",
                    name=f"{name}-{pool.name}-*-eri*-attach",
                    count=pool.count * (eris - 1),
                    detail="one per secondary ERI, on its own network card index",
                )
            )
    return out


def planned_role(spec: ClusterSpec) -> list[PlannedResource]:
    """The instances' RAM role (roles.py, not imported: it imports Pulumi), where the spec asks for the
    agent or has object volumes."""
    from toolkit.providers.alicloud.args import needs_instance_role, object_buckets

    if not needs_instance_role(spec):
        return []
    allows = []
    if spec.lifecycle.agent_wanted:
        allows.append("stop/release of the cluster's own instances")
    if object_buckets(spec):
        allows.append("read/write on " + ", ".join(object_buckets(spec)))
    name = spec.name
    return [
        PlannedResource(type="alicloud:ram/role:Role", name=f"{name}-node-role",
                        detail=f"RAM role gpuctl-{name}-<cluster id>-node, assumed by ecs.aliyuncs.com only"),
        PlannedResource(type="alicloud:ram/policy:Policy", name=f"{name}-node-policy",
                        detail="allows " + "; ".join(allows)),
        PlannedResource(type="alicloud:ram/rolePolicyAttachment:RolePolicyAttachment",
                        name=f"{name}-node-policy-attach",
                        detail="the policy on the role; every instance carries the role (one attachment each)"),
    ]
