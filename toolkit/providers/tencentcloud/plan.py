"""What `gpuctl plan` lists for a Tencent Cloud spec: the cloud resources the component will create.

Types are the Pulumi type tokens of tencentcloud-iac-pulumi and names the Pulumi resource names the
component gives them (`<cluster>-<pool>-*` for one per node, with a count), so that the list can be
checked against the component's own graph under mocks (tests/providers/test_tencentcloud_component.py).
The decisions come from `args` (HPC cluster, ActionTimer per hourly/spot node), never re-derived here.
Where the spec creates a CFS, the VPC and subnet are the storage stack's (`planned_network`, listed
with the volumes by provider.py's `planned_storage`), not the cluster's.
"""

from __future__ import annotations

from datetime import UTC, datetime

from toolkit.catalog.store import load_catalog
from toolkit.plan import PlannedResource
from toolkit.providers.tencentcloud.args import GpuClusterArgs, needs_instance_role, storage_owns_network
from toolkit.spec.models import ClusterSpec

VPC = "tencentcloud:Vpc/instance:Instance"
SUBNET = "tencentcloud:Subnet/instance:Instance"
SECURITY_GROUP = "tencentcloud:Security/group:Group"
RULE_SET = "tencentcloud:Security/groupRuleSet:GroupRuleSet"
KEY_PAIR = "tencentcloud:Key/pair:Pair"
HPC_CLUSTER = "tencentcloud:Cvm/hpcCluster:HpcCluster"
INSTANCE = "tencentcloud:Instance/instance:Instance"
ACTION_TIMER = "tencentcloud:Cvm/actionTimer:ActionTimer"
# The instance role (roles.py, which imports Pulumi: a plan does not).
CAM_ROLE = "tencentcloud:Cam/role:Role"
CAM_POLICY = "tencentcloud:Cam/policy:Policy"
CAM_ATTACHMENT = "tencentcloud:Cam/rolePolicyAttachment:RolePolicyAttachment"
# A fixed anchor: the plan shows what is created, not when it expires (no clock in a plan).
_PLAN_ANCHOR = datetime(2000, 1, 1, tzinfo=UTC)


def planned_resources(spec: ClusterSpec) -> list[PlannedResource]:
    """The resources of `spec` on Tencent Cloud; raises CatalogError where the component would refuse."""
    args = GpuClusterArgs.from_spec(
        spec, load_catalog("tencentcloud"), now=_PLAN_ANCHOR, public_key="", cluster_id=None
    )
    name = spec.name
    ssh = f"tcp/22 from {args.admin_cidr}" + (" (world-open, allowed explicitly)" if args.allow_world_ssh else "")
    out = [] if storage_owns_network(spec) else planned_network(spec, "")
    out += [
        PlannedResource(type=SECURITY_GROUP, name=f"{name}-sg"),
        PlannedResource(
            type=RULE_SET,
            name=f"{name}-sg-rules",
            detail=f"ingress: {ssh}; all traffic and ICMP between members; egress: all",
        ),
        PlannedResource(type=KEY_PAIR, name=f"{name}-key", detail="from ssh.public_key"),
    ]
    if args.needs_hpc_cluster:
        out.append(
            PlannedResource(
                type=HPC_CLUSTER,
                name=f"{name}-hcc",
                detail=f"HPC cluster in {args.zone}; every HCC node is placed in it",
            )
        )
    out += planned_role(spec)
    for pool in args.pools:
        billing = pool.billing
        placed = ", in the HPC cluster" if pool.hcc else ""
        out.append(
            PlannedResource(
                type=INSTANCE,
                name=f"{name}-{pool.name}-*",
                count=pool.count,
                detail=f"{pool.instance_type}, {billing.instance_charge_type}{placed}, login {pool.login_user}",
            )
        )
        if billing.action_time is not None:
            out.append(
                PlannedResource(
                    type=ACTION_TIMER,
                    name=f"{name}-{pool.name}-*-ttl",
                    count=pool.count,
                    detail=f"TerminateInstances at creation + {spec.lifecycle.ttl}",
                )
            )
    return out


def planned_network(spec: ClusterSpec, note: str) -> list[PlannedResource]:
    """The VPC and its subnet (network.py `vpc_and_subnet`), `note` added to each line's detail."""
    assert spec.zone is not None  # ClusterSpec requires it for clouds
    name, network = spec.name, spec.network
    return [
        PlannedResource(type=VPC, name=f"{name}-vpc", detail=f"{network.vpc_cidr}{note}"),
        PlannedResource(type=SUBNET, name=f"{name}-subnet",
                        detail=f"{network.effective_subnet_cidr} in {spec.zone}{note}"),
    ]


def planned_role(spec: ClusterSpec) -> list[PlannedResource]:
    """The instances' CAM role (roles.py), where the spec asks for the agent or has object volumes."""
    if not needs_instance_role(spec):
        return []
    buckets = [v.bucket_name(spec.name) for v in spec.storage if v.kind == "object"]
    allows = []
    if spec.lifecycle.agent_wanted:
        allows.append("stop/terminate of the cluster's own instances")
    if buckets:
        allows.append("read/write on " + ", ".join(buckets) + " (COS)")
    name = spec.name
    return [
        PlannedResource(type=CAM_ROLE, name=f"{name}-node-role",
                        detail=f"CAM role gpuctl-{name}-<cluster id>-node, assumed by cvm.qcloud.com only"),
        PlannedResource(type=CAM_POLICY, name=f"{name}-node-policy", detail="allows " + "; ".join(allows)),
        PlannedResource(type=CAM_ATTACHMENT, name=f"{name}-node-policy-attach",
                        detail="the policy on the role; every instance carries the role"),
    ]
