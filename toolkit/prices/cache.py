"""The dated price cache: `$GPUCTL_HOME/prices.json`, one entry per (provider, region, zone, instance type, billing).

Each entry says what one instance costs per hour under one billing mode, in the currency the API
answered in, when it was read (`read_at`, UTC) and from which API (`source`). An entry older than
`MAX_AGE_DAYS` is old: it is still shown, always as old, never as the current price. The file
holds prices only, never a credential; it is written atomically (temporary file + rename), so a
reader sees the old file or the new one, never half of one.

The model is the boundary, both ways: a price must be a finite number in [0, MAX_PRICE_PER_HOUR]
(NaN, infinities, negatives and 1e308 are refused), a percentage in [0, 100], a time must carry
its zone and lie in the years a run can mean (toolkit/timestamps.py). A cache file that breaks a
rule is refused with the entry and field named (`load_cache`); a cloud answer that would break one
never becomes an entry (`make_entry` raises `BadPriceError`, which `refresh` reports as not priced).
"""

from __future__ import annotations

import json
import math
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, Strict, ValidationError

from toolkit import hints
from toolkit.errors import ProviderError, UsageError
from toolkit.files import FileError, read_text_bounded, write_atomic
from toolkit.providers.cloud_api import REGION_ID
from toolkit.state import gpuctl_home, own_dir
from toolkit.timestamps import outside_window

FILE_NAME = "prices.json"
# A cache of every region of both clouds is well under 1 MiB; a larger file is not one gpuctl wrote.
MAX_CACHE_BYTES = 16 * 1024 * 1024
SCHEMA_VERSION = 1
# A price read more than this many days ago is old. Spot prices move by the hour and list prices
# change with the clouds' price notices (a few times a year); a week keeps both honest enough.
MAX_AGE_DAYS = 7
CachedBilling = Literal["pay_as_you_go", "spot"]
# No instance costs this much an hour in any currency the clouds answer in (the dearest 8-GPU types
# list at a few hundred CNY); a larger figure is damage, a unit mix-up, or a trap (1e308 x hours is inf).
MAX_PRICE_PER_HOUR = 100_000.0


def _price(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{value} is not a finite price")
    if value < 0:
        raise ValueError(f"{value:g} is negative; no price is")
    if value > MAX_PRICE_PER_HOUR:
        raise ValueError(f"{value:g} per hour is more than any instance costs (at most {MAX_PRICE_PER_HOUR:,.0f})")
    return value


def _percent(value: float) -> float:
    if not (math.isfinite(value) and 0.0 <= value <= 100.0):
        raise ValueError(f"{value:g} is not a percentage in [0, 100]")
    return value


def _moment(value: datetime) -> datetime:
    problem = outside_window(value)
    if problem is not None:
        raise ValueError(f"{value.isoformat()} {problem}")
    return value.astimezone(UTC)


# Strict: a price written as text or a time as a number is not what gpuctl writes, so no cache entry.
Price = Annotated[float, Strict(), AfterValidator(_price)]
Percent = Annotated[float, Strict(), AfterValidator(_percent)]
Moment = Annotated[AwareDatetime, Strict(), AfterValidator(_moment)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SpotPoint(_Model):
    at: Moment  # UTC, as the API stamped it
    value: Price


class PriceEntry(_Model):
    provider: Literal["alicloud", "tencentcloud"]
    region: str = Field(pattern=REGION_ID.pattern, description="the cloud's region id")
    zone: str | None = Field(description="null: the price holds for the whole region")
    instance_type: str
    billing: CachedBilling
    currency: str = Field(description="as the API answered: CNY on Alibaba's and Tencent's China sites")
    value: Price = Field(description="per instance-hour, the instance alone, what the account pays (after discounts)")
    list_value: Price | None = Field(default=None, description="the same before discounts, when the API says")
    system_disk: str | None = Field(default=None,
                                    description="the system disk priced beside it, e.g. cloud_essd 200 GiB")
    system_disk_per_hour: Price | None = Field(default=None, description="that disk's part, when the API splits it")
    history: list[SpotPoint] = Field(default_factory=list, description="spot: recent prices, oldest first")
    # Spot: what the cloud reports about interruptions (toolkit/prices/spot.py reads these for plan).
    interruption_rate: str | None = Field(
        default=None, description='spot: the interruption-rate band in the cloud\'s words, e.g. "0-3%"; '
        "null: none reported (see interruption_source)")
    interruption_average_percent: Percent | None = Field(
        default=None, description="spot: the average interruption rate the cloud reports for the same period, in %")
    spot_average_percent: Percent | None = Field(
        default=None, description="spot: the average spot price of the same period as % of pay-as-you-go, "
        "as the cloud reports it")
    interruption_source: str | None = Field(
        default=None, description='the API the interruption figures came from, e.g. "live: Alibaba '
        'DescribeSpotAdvice, last 30 days"; read with the price (read_at); null: not asked')
    read_at: Moment
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
    version: int = Field(default=SCHEMA_VERSION, ge=0, le=1_000_000)
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
    """The cache, or an empty one when there is none. A damaged file is a UsageError naming it, and
    the entry and field that are wrong."""
    path = path or cache_path()
    if not os.path.lexists(path):
        return PriceCache()
    fix = f"remove it and run `{hints.command('prices', 'refresh')}`: rm {path}"
    try:
        # In the gpuctl home: bounded, never through a link, never a FIFO that would block.
        text = read_text_bounded(path, limit=MAX_CACHE_BYTES, what="price cache", follow=False)
    except FileError as problem:
        raise UsageError(f"the price cache {problem}", hint=fix) from None
    try:
        cache = PriceCache.model_validate_json(text)
    except ValidationError as exc:
        raise UsageError(f"the price cache {path} is damaged: {problems(exc, text)}", hint=fix) from None
    if cache.version != SCHEMA_VERSION:
        raise UsageError(f"the price cache {path} has version {cache.version}; this gpuctl reads {SCHEMA_VERSION}",
                         hint=fix)
    return cache


def problems(exc: ValidationError, text: str | None = None, *, shown: int = 3) -> str:
    """The first problems of a validation, each with where it is: `entries[3] (alicloud cn-hangzhou
    ecs.x pay_as_you_go) value: ...`; the entry named from `text` where it can be read back."""
    try:
        raw = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):
        raw = None
    entries = raw.get("entries") if isinstance(raw, dict) else None
    lines = []
    for error in exc.errors()[:shown]:
        loc = list(error["loc"])
        where = ".".join(str(part) for part in loc) or "the file"
        if len(loc) >= 2 and loc[0] == "entries" and isinstance(loc[1], int):
            where = f"entries[{loc[1]}]"
            item = entries[loc[1]] if isinstance(entries, list) and loc[1] < len(entries) else None
            if isinstance(item, dict):
                named = " ".join(str(item.get(key))[:60] for key in ("provider", "region", "zone", "instance_type",
                                                                      "billing") if isinstance(item.get(key), str))
                where += f" ({named})" if named else ""
            where += "".join(f".{part}" if isinstance(part, str) else f"[{part}]" for part in loc[2:])
        lines.append(f"{where}: {error['msg']}")
    more = exc.error_count() - len(lines)
    return "; ".join(lines) + (f" (and {more} more)" if more > 0 else "")


class BadPriceError(ProviderError):
    """A cloud answer that would make an entry the cache refuses (a NaN, negative or absurd price)."""


def make_entry(**fields: Any) -> PriceEntry:
    """A PriceEntry from what a cloud answered; BadPriceError naming the entry and the field when the
    answer breaks the cache's rules (it is then never stored or shown)."""
    try:
        return PriceEntry(**fields)
    except ValidationError as exc:
        named = " ".join(str(fields.get(key)) for key in ("provider", "region", "zone", "instance_type", "billing")
                         if fields.get(key))
        raise BadPriceError(f"{named}: the API answered a price gpuctl refuses: {problems(exc)}") from None


def save_cache(cache: PriceCache, path: Path | None = None) -> Path:
    """Write atomically: a temporary file in the same folder, fsync, then rename over the old one."""
    path = path or cache_path()
    own_dir(path.parent)
    write_atomic(path, cache.model_dump_json(indent=2) + "\n")
    return path


def utc_now() -> datetime:
    return datetime.now(UTC)
