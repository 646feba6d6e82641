"""What the first `up` pins in a stack's config, before Pulumi runs, and every later one reads back.

The cluster id (`gpuctl:clusterId`), creation time (`gpuctl:createdAt`) and owner (`gpuctl:owner`)
never change while the stack lives: a retry after a failed first `up` keeps the release time,
another operator's `up` keeps the owner, two clusters of the same name differ by their id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# Stack config gpuctl keeps (the same keys `stacks/<cloud>` reads by hand); never a credential.
CONFIG_CLUSTER_ID = "gpuctl:clusterId"
CONFIG_CREATED_AT = "gpuctl:createdAt"
CONFIG_OWNER = "gpuctl:owner"
CREATED_AT_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # UTC, the form both clouds' release-time APIs take
# Stack output an older gpuctl kept the creation time in, before it was pinned in the config.
OUT_CREATED_AT = "createdAt"


@dataclass(frozen=True)
class StackPins:
    """What the first `up` pinned in the stack's config and every later one reads back."""

    cluster_id: str
    created_at: datetime
    owner: str
    # The storage stack's `volumes` output (docs/storage.md), once it is up; None without storage.
    storage: tuple[Mapping[str, Any], ...] | None = None
    # Every output of the storage stack (plain values), once it is up: a cloud whose storage stack holds
    # more than the volumes reads it here (Tencent: the VPC and subnet of a created CFS).
    storage_outputs: Mapping[str, Any] | None = None


def parse_created_at(value: Any) -> datetime | None:
    """Read back a pinned creation time (stack config or output); None when absent, unreadable, or
    outside the years a gpuctl run can mean (toolkit/timestamps.py: year 9999 is no creation time)."""
    from toolkit.timestamps import plausible

    if not isinstance(value, str) or not value:
        return None
    try:
        return plausible(datetime.strptime(value, CREATED_AT_FORMAT).replace(tzinfo=UTC))
    except ValueError:
        return None

