"""What `gpuctl down` asks the cloud after destroy: is anything tagged with the cluster still there?

The question is put as a Pulumi program of data-source invokes only (no resource), filtered by the
tag `gpuctl:cluster=<name>`, run on a throwaway stack (`<cluster>_leftovers`) beside the cluster's
own: it reuses the Pulumi alicloud provider and the credentials `up` used, and adds no dependency.
An `up` of a program without resources creates nothing; its outputs are the invoke results.

`find_leftovers` is pure: stack outputs in, leftovers out (each with the command that removes it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The stack is named so that no cluster can own it: cluster names are [a-z0-9-] (spec/models.py).
STACK_SUFFIX = "_leftovers"


def leftovers_stack_name(cluster: str) -> str:
    return f"{cluster}{STACK_SUFFIX}"


@dataclass(frozen=True)
class LeftoverKind:
    """One kind of taggable resource gpuctl creates, and how to look for it and remove it."""

    output: str  # stack output holding the ids found
    label: str  # what the user reads
    token: str  # the Pulumi invoke token (pulumi_alicloud calls it under this name)
    remove: str  # aliyun CLI command; {region} and {id} are filled in

    def command(self, region: str, id_: str) -> str:
        return self.remove.format(region=region, id=id_)


# In the order they can be removed: instances free their ENIs, ENIs free the security group and the
# vSwitch, the vSwitch frees the VPC; the key pair depends on nothing.
KINDS: tuple[LeftoverKind, ...] = (
    LeftoverKind("instances", "ECS instance", "alicloud:ecs/getInstances:getInstances",
                 "aliyun ecs DeleteInstance --RegionId {region} --InstanceId {id} --Force true"),
    LeftoverKind("networkInterfaces", "ENI", "alicloud:ecs/getEcsNetworkInterfaces:getEcsNetworkInterfaces",
                 "aliyun ecs DeleteNetworkInterface --RegionId {region} --NetworkInterfaceId {id}"),
    LeftoverKind("securityGroups", "security group", "alicloud:ecs/getSecurityGroups:getSecurityGroups",
                 "aliyun ecs DeleteSecurityGroup --RegionId {region} --SecurityGroupId {id}"),
    LeftoverKind("vswitches", "vSwitch", "alicloud:vpc/getSwitches:getSwitches",
                 "aliyun vpc DeleteVSwitch --RegionId {region} --VSwitchId {id}"),
    LeftoverKind("vpcs", "VPC", "alicloud:vpc/getNetworks:getNetworks",
                 "aliyun vpc DeleteVpc --RegionId {region} --VpcId {id}"),
    LeftoverKind("keyPairs", "key pair", "alicloud:ecs/getEcsKeyPairs:getEcsKeyPairs",
                 "aliyun ecs DeleteKeyPairs --RegionId {region} --KeyPairNames '[\"{id}\"]'"),
)


@dataclass(frozen=True)
class Leftover:
    kind: str  # the kind's label
    id: str
    command: str  # how to remove it

    def line(self) -> str:
        return f"{self.kind} {self.id}: {self.command}"


def find_leftovers(values: Mapping[str, Any], region: str) -> list[Leftover]:
    """Stack outputs of `leftovers_program` (plain values) -> what is left, in removal order."""
    found: list[Leftover] = []
    for kind in KINDS:
        ids = values.get(kind.output)
        if ids is None:
            raise ValueError(f"the leftovers check did not export {kind.output}")
        if not isinstance(ids, list | tuple):
            raise ValueError(f"the leftovers check exported {kind.output} as {type(ids).__name__}, not a list")
        for id_ in dict.fromkeys(str(i) for i in ids if i):  # keep order, drop repeats and blanks
            found.append(Leftover(kind.label, id_, kind.command(region, id_)))
    return found


def leftovers_program(cluster: str) -> None:
    """The Pulumi program: one invoke per kind, filtered by the cluster tag; exports the ids found."""
    import pulumi
    import pulumi_alicloud as alicloud

    from toolkit.providers.alicloud_args import TAG_CLUSTER

    tags = {TAG_CLUSTER: cluster}
    lookups: dict[str, Callable[[], pulumi.Output[Sequence[str]]]] = {
        "instances": lambda: alicloud.ecs.get_instances_output(tags=tags).ids,
        "networkInterfaces": lambda: alicloud.ecs.get_ecs_network_interfaces_output(tags=tags).ids,
        "securityGroups": lambda: alicloud.ecs.get_security_groups_output(tags=tags).ids,
        "vswitches": lambda: alicloud.vpc.get_switches_output(tags=tags).ids,
        "vpcs": lambda: alicloud.vpc.get_networks_output(tags=tags).ids,
        # A key pair's id is its name, which is what DeleteKeyPairs takes.
        "keyPairs": lambda: alicloud.ecs.get_ecs_key_pairs_output(tags=tags).ids,
    }
    for kind in KINDS:
        pulumi.export(kind.output, lookups[kind.output]())
