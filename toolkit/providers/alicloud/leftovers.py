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

Besides the network and the nodes, the search covers what the cluster's stack makes for its role
and its volumes, so an interrupted `up` leaves nothing unseen:

- RAM roles and policies: by the cluster's tags (RAM ListRoles / ListPolicies take a Tag filter,
  aliyun/terraform-provider-alicloud@v1.289.0:alicloud/data_source_alicloud_ram_roles.go:106 and
  data_source_alicloud_ram_policies.go:146). RAM is global: the region plays no part.
- NAS permission groups take no tags: found by name (`<cluster>-<cluster id>-<volume>`, storage.py)
  and kept only where their description, `gpuctl:<cluster>:<cluster id>:<volume>`, names this cluster
  (and its id, where known). Their mount targets take no tags either: where a group found has mount
  targets (its MountTargetCount), each general-purpose file system of the region is asked for its
  mount targets in that group (DescribeMountTargets needs a FileSystemId, data_source_alicloud_nas_
  mount_targets.go:108; the account holds a few tens of file systems per region at most).
- OSS buckets belong to the storage stack (`<cluster>_storage`), which `down` handles after the
  cluster and which outlives it for kept volumes: they are asked apart, once that stack is done
  (`storage_leftovers_program`), by the cluster's tags read from each bucket (OSS ListBuckets has no
  tag filter: data_source_alicloud_oss_buckets.go:259 lists, GetBucketTagging reads each bucket's
  tags) among the buckets named after the cluster (`<cluster>-...`, the default bucket name); a bucket
  the spec names otherwise (`bucket:`) is only in the storage stack's state. A kept bucket
  (`gpuctl:keep-on-down=true`) is not a leftover unless the storage is being deleted.

`find_leftovers` is pure: stack outputs in, leftovers out (each with the command that removes it).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolkit.providers.tags import TAG_CLUSTER, TAG_CLUSTER_ID, TAG_KEEP_ON_DOWN, TAG_OWNER

# Stack output: {kind output: {id: {tag: value}}}, the gpuctl tags below of every resource found.
TAGS_OUTPUT = "tags"
# Stack output naming which search ran: the cluster's (default) or its storage stack's.
SEARCH_OUTPUT = "search"
STORAGE_SEARCH = "storage"
# The tags reported beside a resource found: whose it is, and which cluster of that name.
REPORTED_TAGS = (TAG_OWNER, TAG_CLUSTER_ID)
# gpuctl's NAS permission groups say whose they are in their description (storage.py), the one field
# besides the name that the API keeps and lists: gpuctl:<cluster>:<cluster id>:<volume>.
GROUP_MARK = "gpuctl"
FILE_SYSTEM_KIND = "standard"  # storage.FILE_SYSTEM_KIND (not imported: storage.py imports Pulumi)


@dataclass(frozen=True)
class LeftoverKind:
    """One kind of resource gpuctl creates, and how to look for it and remove it."""

    output: str  # stack output holding the ids found
    label: str  # what the user reads
    token: str  # the Pulumi invoke token (pulumi_alicloud calls it under this name)
    remove: str  # aliyun CLI command; {region}, {id}, {ids} (a JSON list) and, for an id "<a>:<b>", {a} and {b}

    def command(self, region: str, id_: str) -> str:
        # Every value shell-quoted: the command is printed for pasting and the ids come from the cloud.
        first, _, second = id_.partition(":")
        return self.remove.format(region=shlex.quote(region), id=shlex.quote(id_), ids=shlex.quote(json.dumps([id_])),
                                  a=shlex.quote(first), b=shlex.quote(second or first))


# In the order they can be removed: instances free their ENIs and their role, mount targets free the
# permission group and the vSwitch, ENIs free the security group and the vSwitch, the vSwitch frees
# the VPC; the key pair depends on nothing; a RAM policy is detached from the role before either goes.
KINDS: tuple[LeftoverKind, ...] = (
    LeftoverKind("instances", "ECS instance", "alicloud:ecs/getInstances:getInstances",
                 "aliyun ecs DeleteInstance --RegionId {region} --InstanceId {id} --Force true"),
    LeftoverKind("networkInterfaces", "ENI", "alicloud:ecs/getEcsNetworkInterfaces:getEcsNetworkInterfaces",
                 "aliyun ecs DeleteNetworkInterface --RegionId {region} --NetworkInterfaceId {id}"),
    LeftoverKind("mountTargets", "NAS mount target", "alicloud:nas/getMountTargets:getMountTargets",
                 "aliyun nas DeleteMountTarget --RegionId {region} --FileSystemId {a} --MountTargetDomain {b}"),
    LeftoverKind("accessGroups", "NAS permission group", "alicloud:nas/getAccessGroups:getAccessGroups",
                 "aliyun nas DeleteAccessGroup --RegionId {region} --AccessGroupName {id} --FileSystemType standard"),
    LeftoverKind("securityGroups", "security group", "alicloud:ecs/getSecurityGroups:getSecurityGroups",
                 "aliyun ecs DeleteSecurityGroup --RegionId {region} --SecurityGroupId {id}"),
    LeftoverKind("vswitches", "vSwitch", "alicloud:vpc/getSwitches:getSwitches",
                 "aliyun vpc DeleteVSwitch --RegionId {region} --VSwitchId {id}"),
    LeftoverKind("vpcs", "VPC", "alicloud:vpc/getNetworks:getNetworks",
                 "aliyun vpc DeleteVpc --RegionId {region} --VpcId {id}"),
    LeftoverKind("keyPairs", "key pair", "alicloud:ecs/getEcsKeyPairs:getEcsKeyPairs",
                 "aliyun ecs DeleteKeyPairs --RegionId {region} --KeyPairNames {ids}"),
    # gpuctl names the policy after the role (roles.py): detach it from that role, then delete it.
    LeftoverKind("ramPolicies", "RAM policy", "alicloud:ram/getPolicies:getPolicies",
                 "aliyun ram DetachPolicyFromRole --PolicyType Custom --PolicyName {id} --RoleName {id}; "
                 "aliyun ram DeletePolicy --PolicyName {id}"),
    LeftoverKind("ramRoles", "RAM role", "alicloud:ram/getRoles:getRoles", "aliyun ram DeleteRole --RoleName {id}"),
)
# The storage stack's: asked once that stack is done (see the module's docstring).
STORAGE_KINDS: tuple[LeftoverKind, ...] = (
    # gpuctl never empties a bucket: `rm -b` removes an empty one only.
    LeftoverKind("buckets", "OSS bucket", "alicloud:oss/getBuckets:getBuckets", "aliyun oss rm oss://{id} -b"),
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
    """Stack outputs of `leftovers_program` or `storage_leftovers_program` (plain values) -> what is
    left, in removal order."""
    kinds = STORAGE_KINDS if values.get(SEARCH_OUTPUT) == STORAGE_SEARCH else KINDS
    found: list[Leftover] = []
    all_tags = values.get(TAGS_OUTPUT)
    all_tags = all_tags if isinstance(all_tags, Mapping) else {}
    for kind in kinds:
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


def _by_id(item: Any) -> str:
    return str(item.id)


def reported_tags(items: Sequence[Any] | None, key: Callable[[Any], str] = _by_id) -> dict[str, dict[str, str]]:
    """The detail list of a data source -> {id: the REPORTED_TAGS it carries}."""
    found: dict[str, dict[str, str]] = {}
    for item in items or ():
        tags = getattr(item, "tags", None) or {}
        found[key(item)] = {name: str(tags[name]) for name in REPORTED_TAGS if name in tags}
    return found


# --- NAS permission groups and their mount targets -------------------------------------------


def access_group_description(cluster: str, cluster_id: str, volume: str) -> str:
    """What gpuctl writes into a permission group's description (storage.py) and finds it by."""
    return f"{GROUP_MARK}:{cluster}:{cluster_id}:{volume}"


def group_owner(description: Any, cluster: str, cluster_id: str | None) -> str | None:
    """The cluster id a permission group's description names, when it is this cluster's (and of
    `cluster_id`, where known); None for any other group."""
    parts = str(description or "").split(":")
    if len(parts) != 4 or parts[0] != GROUP_MARK or parts[1] != cluster:
        return None
    if cluster_id is not None and parts[2] != cluster_id:
        return None
    return parts[2]


def cluster_groups(groups: Sequence[Any] | None, cluster: str, cluster_id: str | None
                   ) -> dict[str, tuple[str, int]]:
    """{permission group name: (cluster id, mount targets)} of the groups that are this cluster's."""
    found: dict[str, tuple[str, int]] = {}
    for group in groups or ():
        owner = group_owner(getattr(group, "description", None), cluster, cluster_id)
        if owner is not None:
            found[str(group.access_group_name)] = (owner, int(getattr(group, "mount_target_count", 0) or 0))
    return found


def mount_targets(groups: Mapping[str, tuple[str, int]]) -> dict[str, str]:
    """{"<file system id>:<mount target domain>": cluster id} of the mount targets in `groups`; asks
    the file systems only when a group has mount targets (invokes inside the program's apply)."""
    import pulumi_alicloud as alicloud

    if not any(count for _, count in groups.values()):
        return {}
    found: dict[str, str] = {}
    systems = alicloud.nas.get_file_systems(file_system_type=FILE_SYSTEM_KIND)
    for system_id in systems.ids or []:
        for target in alicloud.nas.get_mount_targets(file_system_id=system_id).targets or []:
            group = groups.get(str(target.access_group_name))
            if group is not None:
                found[f"{system_id}:{target.mount_target_domain}"] = group[0]
    return found


def access_group_pattern(cluster: str) -> str:
    """A name_regex (Go RE2) for the permission groups named after `cluster` (the description decides)."""
    return f"^{re.escape(cluster)}-"


# --- the programs --------------------------------------------------------------------------------


Lookup = tuple[Callable[[], Any], Callable[[Any], Sequence[Any]], Callable[[Any], str]]


def leftovers_program(cluster: str, cluster_id: str | None = None) -> None:
    """The Pulumi program: one invoke per kind, filtered by `search_tags` (permission groups by name
    and description); exports the ids found and the owner / cluster-id tags of each."""
    import pulumi
    import pulumi_alicloud as alicloud

    tags = search_tags(cluster, cluster_id)
    # Each lookup: the invoke, where its result lists the resources, and the id `remove` takes.
    lookups: dict[str, Lookup] = {
        "instances": (lambda: alicloud.ecs.get_instances_output(tags=tags), lambda r: r.instances, _by_id),
        "networkInterfaces": (lambda: alicloud.ecs.get_ecs_network_interfaces_output(tags=tags),
                              lambda r: r.interfaces, _by_id),
        "securityGroups": (lambda: alicloud.ecs.get_security_groups_output(tags=tags), lambda r: r.groups, _by_id),
        "vswitches": (lambda: alicloud.vpc.get_switches_output(tags=tags), lambda r: r.vswitches, _by_id),
        "vpcs": (lambda: alicloud.vpc.get_networks_output(tags=tags), lambda r: r.vpcs, _by_id),
        # A key pair's id is its name, which is what DeleteKeyPairs takes.
        "keyPairs": (lambda: alicloud.ecs.get_ecs_key_pairs_output(tags=tags), lambda r: r.pairs, _by_id),
        # DeletePolicy and DeleteRole take names; a role's id is its RoleId.
        # enable_details off: no GetPolicy per policy (the tags come with ListPolicies).
        "ramPolicies": (lambda: alicloud.ram.get_policies_output(tags=tags, type="Custom", enable_details=False),
                        lambda r: r.policies, lambda item: str(item.policy_name or item.name)),
        "ramRoles": (lambda: alicloud.ram.get_roles_output(tags=tags), lambda r: r.roles, lambda item: str(item.name)),
    }
    found_tags: dict[str, Any] = {}
    for kind in KINDS:
        if kind.output not in lookups:
            continue
        invoke, items, key = lookups[kind.output]
        result = invoke()
        pulumi.export(kind.output, result.apply(lambda r, items=items, key=key: [key(i) for i in items(r) or []]))
        found_tags[kind.output] = result.apply(lambda r, items=items, key=key: reported_tags(items(r), key))
    groups = alicloud.nas.get_access_groups_output(name_regex=access_group_pattern(cluster),
                                                    file_system_type=FILE_SYSTEM_KIND)
    ours = groups.apply(lambda r: cluster_groups(r.groups, cluster, cluster_id))
    pulumi.export("accessGroups", ours.apply(list))
    found_tags["accessGroups"] = ours.apply(lambda g: {name: {TAG_CLUSTER_ID: owner} for name, (owner, _) in g.items()})
    targets = ours.apply(mount_targets)
    pulumi.export("mountTargets", targets.apply(list))
    found_tags["mountTargets"] = targets.apply(lambda t: {id_: {TAG_CLUSTER_ID: owner} for id_, owner in t.items()})
    pulumi.export(TAGS_OUTPUT, found_tags)


def bucket_pattern(cluster: str) -> str:
    """A name_regex (Go RE2) for the buckets named after `cluster` (spec/models.py bucket_name)."""
    return f"^{re.escape(cluster)}-"


def cluster_buckets(buckets: Sequence[Any] | None, cluster: str, cluster_id: str | None, *, kept_too: bool
                    ) -> dict[str, dict[str, str]]:
    """{bucket: reported tags} of the buckets whose own tags say they are this cluster's (all of the
    filter's tags must match), leaving out the kept ones unless `kept_too`."""
    wanted = search_tags(cluster, cluster_id)
    found: dict[str, dict[str, str]] = {}
    for bucket in buckets or ():
        tags = getattr(bucket, "tags", None) or {}
        if any(tags.get(key) != value for key, value in wanted.items()):
            continue
        if tags.get(TAG_KEEP_ON_DOWN) == "true" and not kept_too:
            continue
        found[str(bucket.name)] = {name: str(tags[name]) for name in REPORTED_TAGS if name in tags}
    return found


def storage_leftovers_program(cluster: str, cluster_id: str | None = None, *, kept_too: bool = False) -> None:
    """The storage stack's search: the cluster's buckets that are still there (kept ones only with
    `kept_too`, when the storage is being deleted)."""
    import pulumi
    import pulumi_alicloud as alicloud

    result = alicloud.oss.get_buckets_output(name_regex=bucket_pattern(cluster))
    ours = result.apply(lambda r: cluster_buckets(r.buckets, cluster, cluster_id, kept_too=kept_too))
    pulumi.export(SEARCH_OUTPUT, STORAGE_SEARCH)
    pulumi.export("buckets", ours.apply(list))
    pulumi.export(TAGS_OUTPUT, {"buckets": ours})
