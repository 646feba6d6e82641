"""One node pool on Alibaba Cloud: its ECS instances and, for eRDMA, their ERIs.

eRDMA (Alibaba "ERIs", https://help.aliyun.com/en/ecs/user-guide/elastic-rdma-network-interface-card-eri):
an ERI is an ENI whose traffic mode is `HighPerformance`. The primary ENI of each instance is made
an ERI at creation (`network_interface_traffic_mode` on the instance). Where the catalog says the
type takes more than one ERI (`EriQuantity` of DescribeInstanceTypes), each further one is a
secondary ENI created with `HighPerformance` and attached to the instance. `queue_pair_number` is
sent only when the pool sets one; otherwise the cloud picks the type's default.

The cluster's RAM role (roles.py), where the spec needs one, goes on each instance through its own
`ecs.RamRoleAttachment` (terraform alicloud_ecs_ram_role_attachment: AttachInstanceRamRole on create,
DetachInstanceRamRole on delete). The instance's `role_name` argument is not used: pulumi-alicloud
4.0.0 marks it deprecated ("Field `role_name` has been deprecated from provider version 1.275.0.
New resource `ecs.RamRoleAttachment` instead.", pulumi_alicloud/ecs/instance.py:397) and warns on
every run; `ram.RoleAttachment`, the older many-instance form, is deprecated since 1.250.0
(pulumi_alicloud/ram/role_attachment.py:113). The attachment follows the instance's creation, so
the role's credentials appear in the metadata service some seconds after boot: nothing reads them
before `configure` (the lifecycle agent, ossfs mounts).

A later `up` never touches a node's disk: `image_id` is in `ignore_changes`, so a newer public image
matching the lookup (Alibaba publishes them often) does not replace the instance. Bare-metal types
get longer create/delete timeouts than the provider's defaults (`PoolArgs.instance_timeouts`).

Not a ComponentResource per node on purpose: a pool is one concern, and a component per node would
double the registrations of a 1,000-node program (see bench/pulumi_bench.py).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from toolkit.providers.alicloud.args import PUBLIC_BANDWIDTH_MBPS, GpuClusterArgs, PoolArgs

NODE_POOL_TYPE = "gpuctl:alicloud:NodePool"
# pulumi-alicloud type token of the role attachment (the plan lists it; the tests assert it).
ROLE_ATTACHMENT = "alicloud:ecs/ramRoleAttachment:RamRoleAttachment"
ERI_TRAFFIC_MODE = "HighPerformance"

NodeDict = dict[str, Any]


class NodePoolResources(pulumi.ComponentResource):
    """The instances of one pool; `nodes` holds one output dict per node (see `_node_output`)."""

    nodes: list[pulumi.Output[NodeDict]]

    def __init__(
        self,
        name: str,
        cluster: GpuClusterArgs,
        pool: PoolArgs,
        *,
        image_id: pulumi.Input[str],
        vswitch_id: pulumi.Input[str],
        security_group_id: pulumi.Input[str],
        key_name: pulumi.Input[str],
        role_name: pulumi.Input[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(NODE_POOL_TYPE, name, None, opts)
        self._cluster = cluster
        self._pool = pool
        self._vswitch_id = vswitch_id
        self._security_group_id = security_group_id
        self._role_name = role_name
        self._child = pulumi.ResourceOptions(parent=self)
        self._instance_opts = pulumi.ResourceOptions(
            parent=self, ignore_changes=["image_id"], custom_timeouts=_timeouts(pool.instance_timeouts)
        )
        self._attachment_opts = pulumi.ResourceOptions(parent=self, custom_timeouts=_timeouts(pool.attachment_timeouts))
        self.nodes = [
            self._node(hostname, image_id=image_id, key_name=key_name)
            for hostname in pool.hostnames(cluster.cluster)
        ]
        # The nodes go out once, through GpuCluster; registering them here too would serialise the
        # whole list a second time (measurable at 1,000 nodes, see bench/pulumi_bench.py).
        self.register_outputs({"nodes": len(self.nodes)})

    def _node(
        self, hostname: str, *, image_id: pulumi.Input[str], key_name: pulumi.Input[str]
    ) -> pulumi.Output[NodeDict]:
        cluster, pool, billing = self._cluster, self._pool, self._pool.billing
        erdma = pool.eri_count > 0
        instance = alicloud.ecs.Instance(
            hostname,
            instance_name=hostname,
            host_name=hostname,
            instance_type=pool.instance_type,
            image_id=image_id,
            vswitch_id=self._vswitch_id,
            security_groups=[self._security_group_id],
            key_name=key_name,
            system_disk_category=pool.system_disk_category,
            system_disk_size=pool.system_disk_size_gb,
            instance_charge_type=billing.instance_charge_type,
            spot_strategy=billing.spot_strategy,
            spot_price_limit=billing.spot_price_limit,
            period=billing.period,
            period_unit=billing.period_unit,
            auto_release_time=billing.auto_release_time,
            force_delete=billing.force_delete,
            internet_charge_type="PayByTraffic" if cluster.public_ip else None,
            internet_max_bandwidth_out=PUBLIC_BANDWIDTH_MBPS if cluster.public_ip else 0,
            network_interface_traffic_mode=ERI_TRAFFIC_MODE if erdma else None,
            queue_pair_number=pool.queue_pair_number if erdma else None,
            network_card_index=pool.network_card_index(0) if erdma else None,
            enable_jumbo_frame=True if pool.jumbo_frames else None,
            deletion_protection=False,
            description=f"gpuctl cluster {cluster.cluster}, pool {pool.name}",
            tags=cluster.tags,
            volume_tags=cluster.tags,
            opts=self._instance_opts,
        )
        if self._role_name is not None:
            alicloud.ecs.RamRoleAttachment(
                f"{hostname}-role",
                instance_id=instance.id,
                ram_role_name=self._role_name,
                opts=self._child,
            )
        secondaries = [self._secondary_eri(hostname, index, instance) for index in range(1, pool.eri_count)]
        return _node_output(cluster, pool, hostname, instance, secondaries, erdma=erdma)

    def _secondary_eri(
        self, hostname: str, index: int, instance: alicloud.ecs.Instance
    ) -> alicloud.ecs.EcsNetworkInterface:
        eri = alicloud.ecs.EcsNetworkInterface(
            f"{hostname}-eri{index}",
            network_interface_name=f"{hostname}-eri{index}",
            vswitch_id=self._vswitch_id,
            security_group_ids=[self._security_group_id],
            network_interface_traffic_mode=ERI_TRAFFIC_MODE,
            delete_on_release=True,
            description=f"gpuctl: ERI {index} of {hostname}",
            tags=self._cluster.tags,
            opts=self._child,
        )
        alicloud.ecs.EcsNetworkInterfaceAttachment(
            f"{hostname}-eri{index}-attach",
            instance_id=instance.id,
            network_interface_id=eri.id,
            network_card_index=self._pool.network_card_index(index),
            wait_for_network_configuration_ready=True,
            opts=self._attachment_opts,
        )
        return eri


def _timeouts(create_delete: tuple[str, str] | None) -> pulumi.CustomTimeouts | None:
    if create_delete is None:
        return None
    create, delete = create_delete
    return pulumi.CustomTimeouts(create=create, delete=delete)


def _node_output(
    cluster: GpuClusterArgs,
    pool: PoolArgs,
    hostname: str,
    instance: alicloud.ecs.Instance,
    secondaries: list[alicloud.ecs.EcsNetworkInterface],
    *,
    erdma: bool,
) -> pulumi.Output[NodeDict]:
    """The node as ClusterOutputs wants it (see toolkit.providers.base.NodeOutput)."""
    prefix = cluster.subnet_prefixlen

    def shape(values: list[Any]) -> NodeDict:
        instance_id, private_ip, public_ip, *eri_ips = values
        interfaces = []
        if erdma:
            # Interface names are the order the cloud attaches them in; configure detects the
            # real netdev and erdma_* device on the node.
            addresses = [private_ip, *eri_ips]
            interfaces = [
                {"name": f"eth{i}", "ipv4": f"{ip}/{prefix}" if ip else None, "rdma_device": None}
                for i, ip in enumerate(addresses)
            ]
        return {
            "name": hostname,
            "pool": pool.name,
            "instance_id": instance_id,
            "instance_type": pool.instance_type,
            "private_ip": private_ip,
            "public_ip": public_ip or None,
            "fabric_interfaces": interfaces,
        }

    parts: list[pulumi.Input[Any]] = [instance.id, instance.private_ip, instance.public_ip]
    parts += [eri.primary_ip_address for eri in secondaries]
    return pulumi.Output.all(*parts).apply(shape)
