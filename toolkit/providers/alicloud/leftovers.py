"""What `gpuctl up` and `down` ask the cloud: is anything tagged with the cluster there?

The question is put as a Pulumi program of data-source invokes only (no resource), filtered by the
tag `gpuctl:cluster=<name>` and, where the cluster's id is known, `gpuctl:cluster-id=<id>` too, run
on a throwaway stack (`<cluster>_leftovers`) beside the cluster's own: it reuses the Pulumi
alicloud provider and the credentials `up` used, and adds no dependency. An `up` of a program
without resources creates nothing; its outputs are the invoke results: the ids of each kind, and
the `gpuctl:owner` / `gpuctl:cluster-id` tags of what was found (`TAGS_OUTPUT`), so that a
resource found by name alone can be told apart from another team's cluster of the same name.

- `down` asks by name and id (what this cluster made); with the id unknown (no stack: state lost),
  by name only, and what it finds is not provably this cluster's.
- `up`, before the first create, asks by name only: anything live means a copy of the cluster
  already exists (another backend, a lost state) and `up` refuses to build a second one.

`find_leftovers` is pure: stack outputs in, leftovers out (each with the command that removes it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from toolkit.providers.tags import TAG_CLUSTER, TAG_CLUSTER_ID, TAG_OWNER

# Stack output: {kind output: {id: {tag: value}}}, the gpuctl tags below of every resource found.
TAGS_OUTPUT = "tags"
# The tags reported beside a resource found: whose it is, and which cluster of that name.
REPORTED_TAGS = (TAG_OWNER, TAG_CLUSTER_ID)


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
    owner: str | None = None  # its gpuctl:owner tag, where the invoke returned it
    cluster_id: str | None = None  # its gpuctl:cluster-id tag, where the invoke returned it

    def line(self) -> str:
        return f"{self.kind} {self.id}: {self.command}"

    def tagged_line(self) -> str:
        """`line()` with the owner and cluster-id tags, for resources found by name alone."""
        owner = self.owner or "not tagged"
        cluster_id = self.cluster_id or "not tagged"
        return f"{self.kind} {self.id} (owner {owner}, cluster-id {cluster_id}): {self.command}"


def find_leftovers(values: Mapping[str, Any], region: str) -> list[Leftover]:
    """Stack outputs of `leftovers_program` (plain values) -> what is left, in removal order."""
    found: list[Leftover] = []
    all_tags = values.get(TAGS_OUTPUT)
    all_tags = all_tags if isinstance(all_tags, Mapping) else {}
    for kind in KINDS:
        ids = values.get(kind.output)
        if ids is None:
            raise ValueError(f"the leftovers check did not export {kind.output}")
        if not isinstance(ids, list | tuple):
            raise ValueError(f"the leftovers check exported {kind.output} as {type(ids).__name__}, not a list")
        kind_tags = all_tags.get(kind.output)
        kind_tags = kind_tags if isinstance(kind_tags, Mapping) else {}
        for id_ in dict.fromkeys(str(i) for i in ids if i):  # keep order, drop repeats and blanks
            tags = kind_tags.get(id_)
            tags = tags if isinstance(tags, Mapping) else {}
            owner, cluster_id = (str(tags[key]) if tags.get(key) else None for key in REPORTED_TAGS)
            found.append(Leftover(kind.label, id_, kind.command(region, id_), owner=owner, cluster_id=cluster_id))
    return found


def search_tags(cluster: str, cluster_id: str | None) -> dict[str, str]:
    """The tag filter of the search: the name, and the id where it is known (the API ANDs them)."""
    tags = {TAG_CLUSTER: cluster}
    if cluster_id is not None:
        tags[TAG_CLUSTER_ID] = cluster_id
    return tags


def reported_tags(items: Sequence[Any] | None) -> dict[str, dict[str, str]]:
    """The detail list of a data source -> {id: the REPORTED_TAGS it carries}."""
    found: dict[str, dict[str, str]] = {}
    for item in items or ():
        tags = getattr(item, "tags", None) or {}
        found[str(item.id)] = {key: str(tags[key]) for key in REPORTED_TAGS if key in tags}
    return found


def _tags_of(items: Callable[[Any], Sequence[Any]], result: Any) -> dict[str, dict[str, str]]:
    return reported_tags(items(result))


def leftovers_program(cluster: str, cluster_id: str | None = None) -> None:
    """The Pulumi program: one invoke per kind, filtered by `search_tags`; exports the ids found and
    the owner / cluster-id tags of each."""
    import pulumi
    import pulumi_alicloud as alicloud

    tags = search_tags(cluster, cluster_id)
    # Each lookup: the invoke, and where its result lists the resources with their tags.
    lookups: dict[str, tuple[Callable[[], pulumi.Output[Any]], Callable[[Any], Sequence[Any]]]] = {
        "instances": (lambda: alicloud.ecs.get_instances_output(tags=tags), lambda r: r.instances),
        "networkInterfaces": (lambda: alicloud.ecs.get_ecs_network_interfaces_output(tags=tags),
                              lambda r: r.interfaces),
        "securityGroups": (lambda: alicloud.ecs.get_security_groups_output(tags=tags), lambda r: r.groups),
        "vswitches": (lambda: alicloud.vpc.get_switches_output(tags=tags), lambda r: r.vswitches),
        "vpcs": (lambda: alicloud.vpc.get_networks_output(tags=tags), lambda r: r.vpcs),
        # A key pair's id is its name, which is what DeleteKeyPairs takes.
        "keyPairs": (lambda: alicloud.ecs.get_ecs_key_pairs_output(tags=tags), lambda r: r.pairs),
    }
    found_tags: dict[str, pulumi.Output[dict[str, dict[str, str]]]] = {}
    for kind in KINDS:
        invoke, items = lookups[kind.output]
        result = invoke()
        pulumi.export(kind.output, result.apply(lambda r: list(r.ids or [])))
        found_tags[kind.output] = result.apply(partial(_tags_of, items))
    pulumi.export(TAGS_OUTPUT, found_tags)
