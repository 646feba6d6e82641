"""One node pool on Tencent Cloud: its CVM instances and, for each hourly or spot one, an ActionTimer.

HCC types (the catalog's `hcc`) are placed in the cluster's HPC cluster (`hpc_cluster_id`): "if the
instance created is a high-performance computing instance, you need to specify the cluster in which
the instance is placed" (tencentcloud-iac-pulumi instance.Instance). Their RDMA NICs and addresses are
Tencent's own network, not Pulumi resources: configure finds them on the node.

The cloud-side TTL: each POSTPAID_BY_HOUR / SPOTPAID instance gets a `cvm.ActionTimer` that terminates
it at the cluster's expiry (creation + lifecycle.ttl, pinned at the first `up`), so a forgotten cluster
is released by Tencent even if `gpuctl down` never runs. PREPAID instances get none (paid for the months).

A later `up` never touches a node's disk: `image_id` is in `ignore_changes` ("modifications may lead to
the reinstallation of the instance's operating system"), so a newer public image matching the lookup
does not reinstall a node. Not a ComponentResource per node on purpose (see bench/pulumi_bench_tencent.py).
"""

from __future__ import annotations

from typing import Any

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from toolkit.providers.tencentcloud.args import (
    INTERNET_CHARGE_TYPE,
    PUBLIC_BANDWIDTH_MBPS,
    TIMER_ACTION,
    GpuClusterArgs,
    PoolArgs,
)

NODE_POOL_TYPE = "gpuctl:tencentcloud:NodePool"

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
        vpc_id: pulumi.Input[str],
        subnet_id: pulumi.Input[str],
        security_group_id: pulumi.Input[str],
        key_id: pulumi.Input[str],
        hpc_cluster_id: pulumi.Input[str] | None,
        cam_role_name: pulumi.Input[str] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(NODE_POOL_TYPE, name, None, opts)
        if pool.hcc and hpc_cluster_id is None:
            # args never builds this; a guard so no HCC instance is ever created outside an HPC cluster.
            raise ValueError(f"node pool {pool.name}: {pool.instance_type} is an HCC type and needs an HPC cluster")
        self._cluster = cluster
        self._pool = pool
        self._shared: dict[str, Any] = {
            "availability_zone": cluster.zone,
            "instance_type": pool.instance_type,
            "image_id": image_id,
            "vpc_id": vpc_id,
            "subnet_id": subnet_id,
            "orderly_security_groups": [security_group_id],
            "key_ids": [key_id],
            "hpc_cluster_id": hpc_cluster_id if pool.hcc else None,
            # The cluster's CAM role (roles.py), at creation: its credentials are there from first boot.
            "cam_role_name": cam_role_name,
        }
        create = pool.custom_create_timeout
        self._instance_opts = pulumi.ResourceOptions(
            parent=self,
            ignore_changes=["image_id"],
            custom_timeouts=pulumi.CustomTimeouts(create=create) if create is not None else None,
        )
        self._child = pulumi.ResourceOptions(parent=self)
        self.nodes = [self._node(hostname) for hostname in pool.hostnames(cluster.cluster)]
        # The nodes go out once, through GpuCluster (a second copy here costs at 1,000 nodes).
        self.register_outputs({"nodes": len(self.nodes)})

    def _node(self, hostname: str) -> pulumi.Output[NodeDict]:
        cluster, pool, billing = self._cluster, self._pool, self._pool.billing
        instance = tencentcloud.instance.Instance(
            hostname,
            instance_name=hostname,
            hostname=hostname,
            system_disk_type=pool.system_disk_type,
            system_disk_size=pool.system_disk_size_gb,
            instance_charge_type=billing.instance_charge_type,
            spot_instance_type=billing.spot_instance_type,
            spot_max_price=billing.spot_max_price,
            instance_charge_type_prepaid_period=billing.prepaid_period,
            instance_charge_type_prepaid_renew_flag=billing.prepaid_renew_flag,
            force_delete=billing.force_delete,
            allocate_public_ip=cluster.public_ip,
            internet_charge_type=INTERNET_CHARGE_TYPE if cluster.public_ip else None,
            internet_max_bandwidth_out=PUBLIC_BANDWIDTH_MBPS if cluster.public_ip else None,
            disable_api_termination=False,
            tags=cluster.tags,
            opts=self._instance_opts,
            **self._shared,
        )
        if billing.action_time is not None:
            tencentcloud.cvm.ActionTimer(
                f"{hostname}-ttl",
                instance_id=instance.id,
                action_timer={"timer_action": TIMER_ACTION, "action_time": billing.action_time},
                opts=self._child,
            )
        return _node_output(pool, hostname, instance)


def _node_output(pool: PoolArgs, hostname: str, instance: tencentcloud.instance.Instance) -> pulumi.Output[NodeDict]:
    """The node as ClusterOutputs wants it (toolkit.providers.base.NodeOutput), with its login user."""

    def shape(values: list[Any]) -> NodeDict:
        instance_id, private_ip, public_ip = values
        return {
            "name": hostname,
            "pool": pool.name,
            "instance_id": instance_id,
            "instance_type": pool.instance_type,
            "private_ip": private_ip,
            "public_ip": public_ip or None,
            "ssh_user": pool.login_user,
            # HCC RDMA NICs sit on Tencent's RDMA network with addresses Pulumi does not see: configure
            # detects them (mlx5_*) on the node.
            "fabric_interfaces": [],
        }

    return pulumi.Output.all(instance.id, instance.private_ip, instance.public_ip).apply(shape)
