"""The dated price cache: `$GPUCTL_HOME/prices.json`, one entry per (provider, region, zone, instance type, billing).

Each entry says what one instance costs per hour under one billing mode, in the currency the API
answered in, when it was read (`read_at`, UTC) and from which API (`source`). An entry older than
`MAX_AGE_DAYS` is old: it is still shown, always as old, never as the current price. The file
holds prices only, never a credential; it is written atomically (temporary file + rename), so a
reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolkit import hints
from toolkit.errors import UsageError
from toolkit.files import FileError, read_text_bounded, write_atomic
from toolkit.state import gpuctl_home, own_dir

FILE_NAME = "prices.json"
# A cache of every region of both clouds is well under 1 MiB; a larger file is not one gpuctl wrote.
MAX_CACHE_BYTES = 16 * 1024 * 1024
SCHEMA_VERSION = 1
# A price read more than this many days ago is old. Spot prices move by the hour and list prices
# change with the clouds' price notices (a few times a year); a week keeps both honest enough.
MAX_AGE_DAYS = 7
CachedBilling = Literal["pay_as_you_go", "spot"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SpotPoint(_Model):
    at: datetime  # UTC, as the API stamped it
    value: float


class PriceEntry(_Model):
    provider: str
    region: str
    zone: str | None = Field(description="null: the price holds for the whole region")
    instance_type: str
    billing: CachedBilling
    currency: str = Field(description="as the API answered: CNY on Alibaba's and Tencent's China sites")
    value: float = Field(description="per instance-hour, the instance alone, what the account pays (after discounts)")
    list_value: float | None = Field(default=None, description="the same before discounts, when the API says")
    system_disk: str | None = Field(default=None,
                                    description="the system disk priced beside it, e.g. cloud_essd 200 GiB")
    system_disk_per_hour: float | None = Field(default=None, description="that disk's part, when the API splits it")
    history: list[SpotPoint] = Field(default_factory=list, description="spot: recent prices, oldest first")
    # Spot: what the cloud reports about interruptions (toolkit/prices/spot.py reads these for plan).
    interruption_rate: str | None = Field(
        default=None, description='spot: the interruption-rate band in the cloud\'s words, e.g. "0-3%"; '
        "null: none reported (see interruption_source)")
    interruption_average_percent: float | None = Field(
        default=None, description="spot: the average interruption rate the cloud reports for the same period, in %")
    spot_average_percent: float | None = Field(
        default=None, description="spot: the average spot price of the same period as % of pay-as-you-go, "
        "as the cloud reports it")
    interruption_source: str | None = Field(
        default=None, description='the API the interruption figures came from, e.g. "live: Alibaba '
        'DescribeSpotAdvice, last 30 days"; read with the price (read_at); null: not asked')
    read_at: datetime
    source: str = Field(description='the API it came from, e.g. "live: Alibaba DescribePrice"')
    note: str | None = None

    def key(self) -> tuple[str, str, str, str, str]:
        return (self.provider, self.region, self.zone or "", self.instance_type, self.billing)

    def age(self, now: datetime) -> timedelta:
        return now - self.read_at

    def is_old(self, now: datetime, max_age_days: int = MAX_AGE_DAYS) -> bool:
        return self.age(now) > timedelta(days=max_age_days)

    def describe(self, now: datetime, max_age_days: int = MAX_AGE_DAYS, source: str | None = None) -> str:
        """Where the price came from, for people: "live, read 2026-12-01 10:02 UTC (Alibaba DescribePrice)",
        or "OLD (9 days, more than 7): live, read ..." when it is past `max_age_days`. No command in
        it: it goes into the plan's JSON, which must not depend on how gpuctl was invoked. `source`:
        another API read at the same time (the interruption figures), instead of the price's."""
        api = (source or self.source).removeprefix("live: ")
        text = f"live, read {self.read_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC ({api})"
        if self.is_old(now, max_age_days):
            days = self.age(now).days
            text = f"OLD ({days} days, more than {max_age_days}): {text}"
        return text


class PriceCache(_Model):
    version: int = SCHEMA_VERSION
    entries: list[PriceEntry] = Field(default_factory=list)

    def merged(self, fresh: list[PriceEntry]) -> PriceCache:
        """This cache with `fresh` entries replacing those of the same key; sorted for stable diffs."""
        by_key = {entry.key(): entry for entry in self.entries}
        by_key.update({entry.key(): entry for entry in fresh})
        return PriceCache(entries=[by_key[key] for key in sorted(by_key)])

    def find(self, provider: str, region: str | None, zone: str | None, instance_type: str,
             billing: str) -> PriceEntry | None:
        """The entry for this zone, else the region-wide one (zone null); None when neither exists."""
        if region is None:
            return None
        candidates = [e for e in self.entries if (e.provider, e.region, e.instance_type, e.billing)
                      == (provider, region, instance_type, billing)]
        exact = [e for e in candidates if zone is not None and e.zone == zone]
        regional = [e for e in candidates if e.zone is None]
        found = exact or regional
        return max(found, key=lambda e: e.read_at) if found else None

    def regions(self) -> list[tuple[str, str]]:
        """(provider, region) pairs the cache holds, for `refresh` without --region."""
        return sorted({(e.provider, e.region) for e in self.entries})


def cache_path() -> Path:
    return gpuctl_home() / FILE_NAME


def load_cache(path: Path | None = None) -> PriceCache:
    """The cache, or an empty one when there is none. A damaged file is a UsageError naming it."""
    path = path or cache_path()
    if not os.path.lexists(path):
        return PriceCache()
    try:
        # In the gpuctl home: bounded, never through a link, never a FIFO that would block.
        text = read_text_bounded(path, limit=MAX_CACHE_BYTES, what="price cache", follow=False)
    except FileError as problem:
        raise UsageError(f"the price cache {problem}",
                         hint=f"remove it and run `{hints.command('prices', 'refresh')}`: rm {path}") from None
    try:
        cache = PriceCache.model_validate_json(text)
    except ValidationError as exc:
        raise UsageError(f"the price cache {path} is damaged ({exc.error_count()} problems)",
                         hint=f"remove it and run `{hints.command('prices', 'refresh')}`: rm {path}") from None
    if cache.version != SCHEMA_VERSION:
        raise UsageError(f"the price cache {path} has version {cache.version}; this gpuctl reads {SCHEMA_VERSION}",
                         hint=f"remove it and run `{hints.command('prices', 'refresh')}`: rm {path}")
    return cache


def save_cache(cache: PriceCache, path: Path | None = None) -> Path:
    """Write atomically: a temporary file in the same folder, fsync, then rename over the old one."""
    path = path or cache_path()
    own_dir(path.parent)
    write_atomic(path, cache.model_dump_json(indent=2) + "\n")
    return path


def utc_now() -> datetime:
    return datetime.now(UTC)
