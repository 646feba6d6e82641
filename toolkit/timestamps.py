"""Times read back from files and cloud answers: only those a gpuctl run can mean.

A creation time, an expiry tag or a price's `read_at` was written by gpuctl or by a cloud, now or
within a lifetime of now. One from year 9999 (or 1) is damage or a trap: adding a TTL to it
overflows `datetime`, and comparing it as "past" or "not yet" decides what reap removes. So a
time outside [EARLIEST, LATEST) reads as unreadable (None), which every caller already treats as
unknown, and an unknown expiry is never past. The window is far wider than any TTL (at most 90
days) on either side of today, so adding one to a time inside it never overflows.
"""

from __future__ import annotations

from datetime import UTC, datetime

EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)


def plausible(moment: datetime) -> datetime | None:
    """`moment` in UTC when it lies in [EARLIEST, LATEST), else None; a time without a zone is UTC."""
    try:
        aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
        utc = aware.astimezone(UTC)
    except (OverflowError, ValueError):  # 9999-12-31T23:00-05:00 is past datetime.max in UTC
        return None
    return utc if EARLIEST <= utc < LATEST else None


def parse_iso(value: object) -> datetime | None:
    """A time as gpuctl writes it (or any ISO 8601 form; without a zone: UTC), in UTC; None when
    absent, unreadable, or not `plausible`."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return plausible(moment)


def outside_window(moment: datetime) -> str | None:
    """Why `moment` is refused (for a validator's message), or None when it is plausible."""
    if moment.tzinfo is None:
        return "has no time zone (gpuctl writes UTC times with Z)"
    if plausible(moment) is None:
        return f"is outside {EARLIEST:%Y}-{LATEST:%Y}, not a time gpuctl or a cloud wrote"
    return None
