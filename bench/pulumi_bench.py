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

from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pulumi
import pulumi_alicloud as alicloud
from pulumi_compare import compare

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


def main() -> int:
    return compare(
        description=__doc__.splitlines()[0] if __doc__ else "",
        mocks=BenchMocks,
        cluster_args=cluster_args,
        component_program=component_program,
        bare_program=bare_program,
        resources=lambda nodes: 8 + 3 * nodes,
    )


if __name__ == "__main__":
    raise SystemExit(main())
