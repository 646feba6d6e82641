"""The tags gpuctl writes on every cloud resource that takes tags, the same on every cloud.

`down`, the leftover search and the reaper find a cluster's resources by them: the name
(`gpuctl:cluster`) says whose it may be, the cluster id (`gpuctl:cluster-id`) proves it.
"""

from __future__ import annotations

import getpass
import hashlib
import re
import uuid
from datetime import UTC, datetime, timedelta

from toolkit.errors import UsageError
from toolkit.spec.models import ClusterSpec

TAG_CLUSTER = "gpuctl:cluster"
# The cluster's unique id, made by the first `gpuctl up` and kept in the stack's config: two clusters
# of the same name (two teams, two backends) differ by it, so `down` never takes another's resources.
TAG_CLUSTER_ID = "gpuctl:cluster-id"
TAG_OWNER = "gpuctl:owner"
TAG_EXPIRES = "gpuctl:expires"
TAG_MANAGED_BY = "gpuctl:managed-by"
# On the storage stack's resources only (docs/storage.md): shared volumes, and on Tencent the VPC and
# subnet a created CFS lives in. "true" when `down` keeps it. They carry no `gpuctl:expires`: they
# outlive the cluster, and nothing that reaps by expiry may ever take them.
TAG_KEEP_ON_DOWN = "gpuctl:keep-on-down"
CLUSTER_ID_LENGTH = 12
_CLUSTER_ID = re.compile(r"[0-9a-z][0-9a-z-]{0,63}")


def default_owner(spec: ClusterSpec) -> str:
    """The owner the first `up` pins: the spec's, else the local user."""
    return spec.owner or _local_user()


def cluster_tags(
    spec: ClusterSpec, *, expires_at: str, cluster_id: str | None = None, owner: str | None = None
) -> dict[str, str]:
    owner = owner or default_owner(spec)
    tags = {
        **spec.tags,
        TAG_CLUSTER: spec.name,
        TAG_OWNER: owner,
        TAG_EXPIRES: expires_at,
        TAG_MANAGED_BY: "gpuctl",
    }
    if cluster_id is not None:
        tags[TAG_CLUSTER_ID] = check_cluster_id(cluster_id)
    return tags


def storage_tags(
    spec: ClusterSpec, *, keep_on_down: bool, cluster_id: str | None = None, owner: str | None = None
) -> dict[str, str]:
    """The tags of one shared volume: the cluster's, without an expiry, with whether `down` keeps it."""
    tags = {
        **spec.tags,
        TAG_CLUSTER: spec.name,
        TAG_OWNER: owner or default_owner(spec),
        TAG_MANAGED_BY: "gpuctl",
        TAG_KEEP_ON_DOWN: "true" if keep_on_down else "false",
    }
    if cluster_id is not None:
        tags[TAG_CLUSTER_ID] = check_cluster_id(cluster_id)
    return tags


def utc(moment: datetime) -> datetime:
    """`moment` in UTC; a naive time is refused (the cloud programs never guess a time zone)."""
    if moment.tzinfo is None:
        raise ValueError("times given to gpuctl's cloud programs must carry a time zone")
    return moment.astimezone(UTC)


def expiry_time(anchor: datetime, ttl: timedelta) -> datetime:
    """The `gpuctl:expires` moment: anchor + ttl, UTC, on a whole minute rounded up (the clouds drop
    the seconds of a release or timer time; rounding up keeps the user's TTL as a floor)."""
    expires = utc(anchor) + ttl
    if expires.second or expires.microsecond:
        expires = expires.replace(second=0, microsecond=0) + timedelta(minutes=1)
    return expires


def new_cluster_id() -> str:
    """A fresh cluster id: 12 hex digits (48 random bits), made once, at the first `up`."""
    return uuid.uuid4().hex[:CLUSTER_ID_LENGTH]


def stack_cluster_id(organization: str, project: str, stack: str) -> str:
    """The cluster id of a stack run by hand without `gpuctl:clusterId`: derived from the stack's
    full name, so it stays the same on every run of that stack (12 hex digits, as gpuctl makes)."""
    digest = hashlib.sha256(f"{organization}/{project}/{stack}".encode()).hexdigest()
    return digest[:CLUSTER_ID_LENGTH]


def check_cluster_id(value: str) -> str:
    """A cluster id as gpuctl writes it into tags: [0-9a-z-], 1 to 64 characters."""
    if not _CLUSTER_ID.fullmatch(value):
        raise UsageError(
            f"cluster id {value!r} is not usable as a tag value",
            hint="a cluster id is 1-64 characters of a-z, 0-9 and '-' (gpuctl makes 12 hex digits)",
        )
    return value


def _local_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
