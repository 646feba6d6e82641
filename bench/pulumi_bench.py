"""Cost of the component: build the Alibaba program for 10, 100 and 1,000 nodes under Pulumi mocks,
against a bare program that creates the same resources directly, flat, with no components, and
exports the same per-node outputs a hand-written program would (name, id, addresses, ERI address):
what is compared is the cost of the component structure, not of computing outputs the bare
program would otherwise skip.

    .venv/bin/python bench/pulumi_bench.py [--repeat 3] [--nodes 10 100 1000]

Prints the best of `--repeat` runs for each size and the ratio component / bare (target <= 1.2).
Nodes are ecs.ebmgn7ex.32xlarge with eRDMA: per node an instance, a secondary ERI and its attachment.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from toolkit.catalog import load_catalog
from toolkit.providers.alicloud.args import GpuClusterArgs
from toolkit.providers.alicloud.component import GpuCluster
from toolkit.spec.loader import load_spec_text

NOW = datetime(2026, 11, 29, 9, 0, 0, tzinfo=UTC)
POOL_MAX = 500  # a pool holds at most 512 nodes; larger clusters are split into pools
SPEC = """
name: bench
provider: alicloud
region: cn-wulanchabu
zone: cn-wulanchabu-c
owner: bench@example.com
node_pools:
{pools}
network: {{fabric: erdma, admin_cidr: 198.51.100.0/24, vpc_cidr: 10.0.0.0/8, subnet_cidr: 10.0.0.0/16}}
ssh: {{public_key: /dev/null}}
lifecycle: {{ttl: 8h}}
"""
POOL = """  - name: p{index}
    instance_type: ecs.ebmgn7ex.32xlarge
    count: {count}
    billing: {{mode: spot}}"""


class BenchMocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[Any, Any]]:
        state = dict(args.inputs)
        if args.typ == "alicloud:ecs/instance:Instance":
            state.update(privateIp="10.0.0.1", publicIp="47.0.0.1")
        elif args.typ == "alicloud:ecs/ecsNetworkInterface:EcsNetworkInterface":
            state.update(primaryIpAddress="10.0.0.2")
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]]]:
        return {"ids": ["m-bench"], "images": []}, []


def cluster_args(nodes: int) -> GpuClusterArgs:
    counts = [POOL_MAX] * (nodes // POOL_MAX) + ([nodes % POOL_MAX] if nodes % POOL_MAX else [])
    pools = "\n".join(POOL.format(index=i, count=c) for i, c in enumerate(counts))
    spec = load_spec_text(SPEC.format(pools=pools))
    return GpuClusterArgs.from_spec(spec, load_catalog("alicloud"), now=NOW, public_key="ssh-ed25519 AAAA bench")


def component_program(args: GpuClusterArgs) -> Callable[[], pulumi.Output[Any]]:
    def program() -> pulumi.Output[Any]:
        return GpuCluster(args.cluster, args).nodes

    return program


def bare_program(args: GpuClusterArgs) -> Callable[[], pulumi.Output[Any]]:
    """The same resources and arguments, created flat at the top of the program."""

    def program() -> pulumi.Output[Any]:
        c, tags = args.cluster, args.tags
        vpc = alicloud.vpc.Network(f"{c}-vpc", vpc_name=f"{c}-vpc", cidr_block=args.vpc_cidr, tags=tags)
        vsw = alicloud.vpc.Switch(f"{c}-vsw", vswitch_name=f"{c}-vsw", vpc_id=vpc.id, cidr_block=args.subnet_cidr,
                                  zone_id=args.zone, tags=tags)
        sg = alicloud.ecs.SecurityGroup(f"{c}-sg", security_group_name=f"{c}-sg", vpc_id=vpc.id,
                                        inner_access_policy="Drop", tags=tags)
        alicloud.ecs.SecurityGroupRule(f"{c}-ssh", security_group_id=sg.id, type="ingress", ip_protocol="tcp",
                                       port_range="22/22", cidr_ip=args.admin_cidr, nic_type="intranet")
        for proto in ("all", "icmp"):
            alicloud.ecs.SecurityGroupRule(f"{c}-{proto}", security_group_id=sg.id, type="ingress",
                                           ip_protocol=proto, port_range="-1/-1", source_security_group_id=sg.id,
                                           nic_type="intranet")
        key = alicloud.ecs.EcsKeyPair(f"{c}-key", key_pair_name=f"{c}-key", public_key=args.public_key, tags=tags)
        image = alicloud.ecs.get_images_output(name_regex="^ubuntu_22_04_x64", owners="system", most_recent=True)
        image_id = image.ids.apply(lambda ids: ids[0])
        nodes: list[pulumi.Output[Any]] = []
        for pool in args.pools:
            for host in pool.hostnames(c):
                instance = alicloud.ecs.Instance(
                    host, instance_name=host, host_name=host, instance_type=pool.instance_type, image_id=image_id,
                    vswitch_id=vsw.id, security_groups=[sg.id], key_name=key.key_pair_name,
                    instance_charge_type="PostPaid", spot_strategy="SpotAsPriceGo",
                    auto_release_time=pool.billing.auto_release_time, network_interface_traffic_mode="HighPerformance",
                    network_card_index=0, tags=tags, volume_tags=tags,
                )
                eni = alicloud.ecs.EcsNetworkInterface(
                    f"{host}-eri1", vswitch_id=vsw.id, security_group_ids=[sg.id],
                    network_interface_traffic_mode="HighPerformance", tags=tags,
                )
                alicloud.ecs.EcsNetworkInterfaceAttachment(
                    f"{host}-eri1-attach", instance_id=instance.id, network_interface_id=eni.id, network_card_index=1,
                )
                parts = pulumi.Output.all(instance.id, instance.private_ip, instance.public_ip, eni.primary_ip_address)
                nodes.append(parts.apply(partial(node_dict, host)))
        return pulumi.Output.all(*nodes)

    return program


def node_dict(host: str, values: list[Any]) -> dict[str, Any]:
    instance_id, private_ip, public_ip, eri_ip = values
    return {"name": host, "instance_id": instance_id, "private_ip": private_ip, "public_ip": public_ip,
            "eri_ip": eri_ip}


def timed(program: Callable[[], pulumi.Output[Any]]) -> float:
    pulumi.runtime.set_mocks(BenchMocks(), project="bench", stack="bench", preview=False)
    decorate: Callable[[Callable[[], pulumi.Output[Any]]], Callable[[], None]] = pulumi.runtime.test
    start = time.perf_counter()
    decorate(program)()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--nodes", type=int, nargs="+", default=[10, 100, 1000])
    options = parser.parse_args()
    print(f"{'nodes':>6} {'resources':>9} {'component s':>12} {'bare s':>8} {'ratio':>6}")
    worst = 0.0
    # One untimed run of each first: the first program in a process pays for lazy imports and
    # Pulumi's runtime set-up, which would otherwise land on whichever program runs first.
    timed(component_program(cluster_args(2)))
    timed(bare_program(cluster_args(2)))
    for nodes in options.nodes:
        args = cluster_args(nodes)
        resources = 8 + 3 * nodes
        # Interleave the two so that drift (caches, CPU frequency) hits both alike.
        component_times, bare_times = [], []
        for _ in range(options.repeat):
            component_times.append(timed(component_program(args)))
            bare_times.append(timed(bare_program(args)))
        component, bare = min(component_times), min(bare_times)
        ratio = component / bare
        worst = max(worst, ratio)
        print(f"{nodes:>6} {resources:>9} {component:>12.3f} {bare:>8.3f} {ratio:>6.2f}")
    print(f"worst ratio {worst:.2f} (target <= 1.20)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
