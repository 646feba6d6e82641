"""Cost of the Tencent component: build the Tencent program for 10, 100 and 1,000 nodes under Pulumi
mocks, against a bare program that creates the same resources directly, flat, with no components, and
exports the same per-node outputs a hand-written program would (name, id, addresses): what is compared
is the cost of the component structure, not of computing outputs the bare program would otherwise skip.

    .venv/bin/python bench/pulumi_bench_tencent.py [--repeat 3] [--nodes 10 100 1000]

Prints the best of `--repeat` runs for each size and the ratio component / bare (target <= 1.2).
Nodes are HCCG5v on HCC RDMA, pay-as-you-go: per node an instance in the HPC cluster and its ActionTimer.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pulumi
import tencentcloud_iac_pulumi as tencentcloud
from pulumi_compare import compare

from toolkit.catalog import load_catalog
from toolkit.providers.tencentcloud.args import GpuClusterArgs
from toolkit.providers.tencentcloud.component import GpuCluster
from toolkit.spec.loader import load_spec_text

NOW = datetime(2026, 11, 29, 9, 0, 0, tzinfo=UTC)
POOL_MAX = 500  # a pool holds at most 512 nodes; larger clusters are split into pools
SPEC = """
name: bench
provider: tencentcloud
region: ap-shanghai
zone: ap-shanghai-5
owner: bench@example.com
node_pools:
{pools}
network: {{fabric: rdma, admin_cidr: 198.51.100.0/24, vpc_cidr: 10.0.0.0/8, subnet_cidr: 10.0.0.0/16}}
ssh: {{public_key: /dev/null}}
lifecycle: {{ttl: 8h}}
"""
POOL = """  - name: p{index}
    instance_type: HCCG5v
    count: {count}
    system_disk: {{size_gb: 200, category: CLOUD_BSSD}}"""
FIXED_RESOURCES = 6  # VPC, subnet, security group, rule set, key pair, HPC cluster (and one image lookup)


class BenchMocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[Any, Any]]:
        state = dict(args.inputs)
        if args.typ == "tencentcloud:Instance/instance:Instance":
            state.update(privateIp="10.0.0.1", publicIp="43.0.0.1")
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]]]:
        return {"images": [{"imageId": "img-bench", "createdTime": "2025-01-01T00:00:00Z"}]}, []


def cluster_args(nodes: int) -> GpuClusterArgs:
    counts = [POOL_MAX] * (nodes // POOL_MAX) + ([nodes % POOL_MAX] if nodes % POOL_MAX else [])
    pools = "\n".join(POOL.format(index=i, count=c) for i, c in enumerate(counts))
    spec = load_spec_text(SPEC.format(pools=pools))
    return GpuClusterArgs.from_spec(spec, load_catalog("tencentcloud"), now=NOW, public_key="ssh-rsa AAAA bench")


def component_program(args: GpuClusterArgs) -> Callable[[], pulumi.Output[Any]]:
    def program() -> pulumi.Output[Any]:
        return GpuCluster(args.cluster, args).nodes

    return program


def bare_program(args: GpuClusterArgs) -> Callable[[], pulumi.Output[Any]]:
    """The same resources and arguments, created flat at the top of the program."""

    def program() -> pulumi.Output[Any]:
        c, tags = args.cluster, args.tags
        vpc = tencentcloud.vpc.Instance(f"{c}-vpc", name=f"{c}-vpc", cidr_block=args.vpc_cidr, tags=tags)
        subnet = tencentcloud.subnet.Instance(f"{c}-subnet", name=f"{c}-subnet", vpc_id=vpc.id,
                                              cidr_block=args.subnet_cidr, availability_zone=args.zone, tags=tags)
        sg = tencentcloud.security.Group(f"{c}-sg", name=f"{c}-sg", tags=tags)
        tencentcloud.security.GroupRuleSet(
            f"{c}-sg-rules", security_group_id=sg.id,
            ingresses=[
                {"action": "ACCEPT", "protocol": "TCP", "port": "22", "cidr_block": args.admin_cidr},
                {"action": "ACCEPT", "protocol": "ALL", "port": "ALL", "source_security_id": sg.id},
                {"action": "ACCEPT", "protocol": "ICMP", "source_security_id": sg.id},
            ],
            egresses=[{"action": "ACCEPT", "protocol": "ALL", "port": "ALL", "cidr_block": "0.0.0.0/0"}],
        )
        key = tencentcloud.key.Pair(f"{c}-key", key_name=args.key_name, public_key=args.public_key, tags=tags)
        hpc = tencentcloud.cvm.HpcCluster(f"{c}-hcc", name=c, zone=args.zone)
        image = tencentcloud.images.get_instance_output(image_name_regex="^Ubuntu", image_types=["PUBLIC_IMAGE"])
        image_id = image.images.apply(lambda found: found[0].image_id)
        nodes: list[pulumi.Output[Any]] = []
        for pool in args.pools:
            for host in pool.hostnames(c):
                instance = tencentcloud.instance.Instance(
                    host, instance_name=host, hostname=host, availability_zone=args.zone,
                    instance_type=pool.instance_type, image_id=image_id, vpc_id=vpc.id, subnet_id=subnet.id,
                    orderly_security_groups=[sg.id], key_ids=[key.id], hpc_cluster_id=hpc.id,
                    system_disk_type=pool.system_disk_type, system_disk_size=pool.system_disk_size_gb,
                    instance_charge_type="POSTPAID_BY_HOUR", allocate_public_ip=True, tags=tags,
                )
                tencentcloud.cvm.ActionTimer(
                    f"{host}-ttl", instance_id=instance.id,
                    action_timer={"timer_action": "TerminateInstances", "action_time": pool.billing.action_time},
                )
                parts = pulumi.Output.all(instance.id, instance.private_ip, instance.public_ip)
                nodes.append(parts.apply(partial(node_dict, host)))
        return pulumi.Output.all(*nodes)

    return program


def node_dict(host: str, values: list[Any]) -> dict[str, Any]:
    instance_id, private_ip, public_ip = values
    return {"name": host, "instance_id": instance_id, "private_ip": private_ip, "public_ip": public_ip}


def main() -> int:
    return compare(
        description=__doc__.splitlines()[0] if __doc__ else "",
        mocks=BenchMocks,
        cluster_args=cluster_args,
        component_program=component_program,
        bare_program=bare_program,
        resources=lambda nodes: FIXED_RESOURCES + 2 * nodes,
    )


if __name__ == "__main__":
    raise SystemExit(main())
