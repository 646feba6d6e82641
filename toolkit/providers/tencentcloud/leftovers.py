"""After `down` (and before a first `up`): is anything of this cluster still on Tencent Cloud?

Asked through the SDK (sdk.py), one paged Describe* per kind, filtered by the tag
`gpuctl:cluster=<name>` (filter `tag:gpuctl:cluster`, which every one of these actions takes):
CVM instances, HPC clusters, security groups, subnets, VPCs, key pairs. Each resource found is
then judged by its `gpuctl:cluster-id` tag:

- the id of this cluster: proven this cluster's (`proven=True`);
- no id tag (or the id is unknown, state lost): reported, not provably this cluster's;
- another id: another cluster of the same name (another team, another backend): not reported;
- a `gpuctl:keep-on-down` tag: the storage stack's (the VPC and subnet of a created CFS, storage.py),
  which outlives `down` by design and is checked by its own destroy: not reported, and not a second
  copy of the cluster when the next `up` looks.

HPC clusters: Pulumi's `tencentcloud.cvm.HpcCluster` takes no tags (zone, name, remark only), so
besides the tag filter they are matched by name, as the component (args.py `hpc_cluster_name`)
names them: `<cluster>-<cluster id>` (proof: the id), or `<cluster>` where the id is unknown. Any
other name starting with `<cluster>-` is reported too, found by name, unproven, unless its name or
remark (the component writes "gpuctl cluster <name> (<id>): ...") says it is another cluster's.

ActionTimers (the timed release) belong to their instance and go with it: no kind of their own.
gpuctl never deletes a leftover itself: each one comes with the tccli command that would.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

from toolkit.providers.tags import TAG_CLUSTER, TAG_CLUSTER_ID, TAG_KEEP_ON_DOWN, TAG_OWNER
from toolkit.providers.tencentcloud.sdk import Service, TencentApi, tag_filter, tags_of

# The remark the component writes on its HPC cluster: "gpuctl cluster <name> (<id>): ...".
_REMARK = re.compile(r"gpuctl cluster ([a-z0-9-]{1,32}) \(([^()]{1,64})\)")
NO_CLUSTER_ID = "no cluster id"  # what the remark says where the id was unknown
# The cluster id gpuctl makes (tags.new_cluster_id): 12 hex digits, the suffix of an HPC cluster's name.
_NEW_ID = re.compile(r"[0-9a-f]{12}")


@dataclass(frozen=True)
class LeftoverKind:
    label: str  # what the user reads
    service: Service
    action: str  # the Describe* action
    set_key: str  # where its answer lists the resources
    id_field: str
    name_field: str
    remove: str  # tccli command; {region} and {ids} (a JSON list) or {id} are filled in, shell-quoted
    text_paging: bool = False  # VPC's Describe* take Offset/Limit as strings

    def command(self, region: str, id_: str) -> str:
        return self.remove.format(region=shlex.quote(region), id=shlex.quote(id_), ids=shlex.quote(json.dumps([id_])))


# In the order they can be removed: instances (with their ActionTimers) free the HPC cluster, the
# security group and the subnet; the subnet frees the VPC; the key pair depends on nothing.
INSTANCES = LeftoverKind("CVM instance", "cvm", "DescribeInstances", "InstanceSet", "InstanceId", "InstanceName",
                         "tccli cvm TerminateInstances --region {region} --InstanceIds {ids}")
HPC_CLUSTERS = LeftoverKind("HPC cluster", "cvm", "DescribeHpcClusters", "HpcClusterSet", "HpcClusterId", "Name",
                            "tccli cvm DeleteHpcClusters --region {region} --HpcClusterIds {ids}")
KINDS: tuple[LeftoverKind, ...] = (
    INSTANCES,
    HPC_CLUSTERS,
    LeftoverKind("security group", "vpc", "DescribeSecurityGroups", "SecurityGroupSet", "SecurityGroupId",
                 "SecurityGroupName", "tccli vpc DeleteSecurityGroup --region {region} --SecurityGroupId {id}",
                 text_paging=True),
    LeftoverKind("subnet", "vpc", "DescribeSubnets", "SubnetSet", "SubnetId", "SubnetName",
                 "tccli vpc DeleteSubnet --region {region} --SubnetId {id}", text_paging=True),
    LeftoverKind("VPC", "vpc", "DescribeVpcs", "VpcSet", "VpcId", "VpcName",
                 "tccli vpc DeleteVpc --region {region} --VpcId {id}", text_paging=True),
    LeftoverKind("key pair", "cvm", "DescribeKeyPairs", "KeyPairSet", "KeyId", "KeyName",
                 "tccli cvm DeleteKeyPairs --region {region} --KeyIds {ids}"),
)


@dataclass(frozen=True)
class Leftover:
    kind: str  # the kind's label
    id: str
    name: str
    region: str
    proven: bool  # carries this cluster's gpuctl:cluster-id (tag, or an HPC cluster's remark)
    command: str  # how to remove it (gpuctl does not)
    cluster_id: str | None = None  # the cluster id it carries, if any
    owner: str | None = None  # its gpuctl:owner tag, if any
    by_name: bool = False  # found by its name, not by a tag (an HPC cluster: they take no tags)

    def line(self) -> str:
        if self.proven:
            return f"{self.kind} {self.id} ({self.name}): {self.command}"
        found = "found by name, " if self.by_name else ""
        return (f"{self.kind} {self.id} ({self.name}; {found}not provably this cluster's: owner "
                f"{self.owner or 'not tagged'}, cluster-id {self.cluster_id or 'not tagged'}): {self.command}")

    def tagged_line(self) -> str:
        """For what was found by name alone: `line()` names the owner and cluster-id tags already."""
        return self.line() if not self.proven else (
            f"{self.kind} {self.id} ({self.name}; owner {self.owner or 'not tagged'}, cluster-id "
            f"{self.cluster_id}): {self.command}")


def hpc_name_matches(cluster: str, name: str) -> bool:
    return name == cluster or name.startswith(f"{cluster}-")


def hpc_owner(cluster: str, item: dict[str, Any]) -> tuple[str | None, str | None]:
    """(cluster name, cluster id) an untagged HPC cluster says it belongs to: its remark first, then
    its name (`<cluster>-<12 hex digits>`); None where it says nothing."""
    match = _REMARK.search(str(item.get("Remark") or ""))
    if match:
        return match.group(1), match.group(2) if match.group(2) != NO_CLUSTER_ID else None
    suffix = str(item.get("Name") or "").removeprefix(f"{cluster}-")
    if _NEW_ID.fullmatch(suffix):
        return cluster, suffix
    return None, None


def judge(kind: LeftoverKind, item: dict[str, Any], region: str, cluster: str, cluster_id: str | None,
          *, by_name: bool = False) -> Leftover | None:
    """One resource found -> a Leftover, or None when it is another cluster's (same name, other id;
    or, for an HPC cluster found by name, another cluster's name in its tags or remark)."""
    tags = tags_of(item)
    if TAG_KEEP_ON_DOWN in tags:
        return None  # the storage stack's: kept past `down` on purpose, removed by --delete-storage
    found_name, found_id = tags.get(TAG_CLUSTER), tags.get(TAG_CLUSTER_ID)
    if kind is HPC_CLUSTERS and found_name is None:
        found_name, found_id = hpc_owner(cluster, item)
    if found_name is not None and found_name != cluster:
        return None  # "hcc-v100-hpc" matches the prefix of cluster "hcc", but says it is hcc-v100's
    if cluster_id is not None and found_id is not None and found_id != cluster_id:
        return None
    id_ = str(item.get(kind.id_field) or "")
    if not id_:
        return None
    return Leftover(kind.label, id_, str(item.get(kind.name_field) or ""), region,
                    proven=cluster_id is not None and found_id == cluster_id, command=kind.command(region, id_),
                    cluster_id=found_id, owner=tags.get(TAG_OWNER) or None, by_name=by_name)


def find_leftovers(api: TencentApi, cluster: str, cluster_id: str | None = None) -> list[Leftover]:
    """Everything in `api.region` tagged `gpuctl:cluster=<cluster>` (and HPC clusters named after it),
    less what carries another cluster id, in removal order."""
    found: list[Leftover] = []
    for kind in KINDS:
        by_tag = api.pages(kind.service, kind.action, {"Filters": [tag_filter(TAG_CLUSTER, cluster)]}, kind.set_key,
                           text_paging=kind.text_paging)
        items = [(item, False) for item in by_tag]
        if kind is HPC_CLUSTERS:
            seen = {str(item.get(kind.id_field)) for item in by_tag}
            every = api.pages(kind.service, kind.action, {}, kind.set_key)
            items += [(item, True) for item in every if str(item.get(kind.id_field)) not in seen
                      and hpc_name_matches(cluster, str(item.get("Name") or ""))]
        for item, by_name in items:
            leftover = judge(kind, item, api.region, cluster, cluster_id, by_name=by_name)
            if leftover is not None and leftover.id not in {f.id for f in found}:
                found.append(leftover)
    return found
