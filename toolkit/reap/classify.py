"""Local state + cloud tags -> one row per cluster, each `expired`, `live`, `orphaned` or `unknown`.

Pure: no I/O, the clock given. Matching: a cloud instance belongs to a cluster of the state when
the provider, region and `gpuctl:cluster` name agree and the `gpuctl:cluster-id` tag is the state's
id (or either id is unknown: a stack made by a gpuctl without ids). Instances that match no state
are grouped by (provider, region, name, id) into orphaned clusters: tagged by gpuctl, but no stack
here holds them (another backend, a lost state, or another team's cluster of the same name).

Expiry: the stack's `expiresAt` output, else what its instances' own `gpuctl:expires` tags say,
else (a lab, given its spec) its creation time + lifecycle.ttl. From tags, a group is past its
expiry only when every instance is past its own: the expiry is the latest tag, and unknown when
any instance's tag is missing or unreadable (an unreadable expiry is never "expired"). What may be
released is judged instance by instance anyway (`act.releasable`). Creation: the stack's pinned
`gpuctl:createdAt`, else the earliest instance creation time the cloud reports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from toolkit.reap.cloud import CloudInstance
from toolkit.reap.local import StateCluster

Status = Literal["expired", "live", "orphaned", "unknown"]


@dataclass
class Cluster:
    name: str
    provider: str
    region: str | None
    cluster_id: str | None
    owner: str | None
    status: Status
    created_at: datetime | None
    expires_at: datetime | None
    expired: bool | None  # past expires_at; None when the expiry is unknown
    state: StateCluster | None  # None: orphaned
    instances: list[CloudInstance] = field(default_factory=list)

    @property
    def instance_types(self) -> list[str]:
        """What it runs: the cloud's answer where the cloud was asked, else the stack's node list."""
        if self.instances:
            return [i.instance_type for i in self.instances]
        return list(self.state.instance_types) if self.state is not None else []


def _earliest(values: Iterable[datetime | None]) -> datetime | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


def tag_expiry(instances: Iterable[CloudInstance]) -> datetime | None:
    """When every one of `instances` is past its own expiry tag: the latest of them; None when there
    is none or any tag is missing or unreadable."""
    values = [i.expires_at for i in instances]
    if not values or any(v is None for v in values):
        return None
    return max(v for v in values if v is not None)


def belongs(instance: CloudInstance, state: StateCluster) -> bool:
    if (instance.provider, instance.region, instance.cluster) != (state.provider, state.region, state.name):
        return False
    return state.cluster_id is None or instance.cluster_id is None or instance.cluster_id == state.cluster_id


def classify(states: Iterable[StateCluster], instances: Iterable[CloudInstance], now: datetime,
             *, lab_expiry: Mapping[str, datetime] | None = None) -> list[Cluster]:
    """Every cluster, state first (in name order), then the orphaned ones. `lab_expiry`: cluster ->
    expiry, for labs whose spec was given (a lab records no TTL)."""
    pending = list(instances)
    found: list[Cluster] = []
    for state in states:
        mine = [i for i in pending if belongs(i, state)]
        pending = [i for i in pending if i not in mine]
        expires = state.expires_at or tag_expiry(mine)
        if expires is None and state.provider == "local" and lab_expiry:
            expires = lab_expiry.get(state.name)
        created = state.created_at or _earliest(i.created_at for i in mine)
        past = None if expires is None else now >= expires
        status: Status = "unknown" if past is None else "expired" if past else "live"
        found.append(Cluster(state.name, state.provider, state.region, state.cluster_id,
                             state.owner or next((i.owner for i in mine if i.owner), None), status,
                             created, expires, past, state, mine))
    groups: dict[tuple[str, str, str, str | None], list[CloudInstance]] = {}
    for one in pending:
        groups.setdefault((one.provider, one.region, one.cluster, one.cluster_id), []).append(one)
    for (provider, region, name, cluster_id), members in sorted(groups.items(), key=lambda kv: str(kv[0])):
        expires = tag_expiry(members)
        found.append(Cluster(name, provider, region, cluster_id, next((i.owner for i in members if i.owner), None),
                             "orphaned", _earliest(i.created_at for i in members), expires,
                             None if expires is None else now >= expires, None, members))
    return found
