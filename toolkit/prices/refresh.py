"""`gpuctl prices refresh`: ask the clouds what the catalog's instance types cost now, and keep it.

Which regions: the one named (`--provider P --region R`), else every (provider, region) the cache
already holds; with neither there is nothing to refresh and the user is told how to name one.
Which types: the catalog's for that provider (or the one `--instance-type` names, which must be in
it). A type the region does not sell or price is a `not_priced` row, not a failure; an error that
would fail every call (credentials, permission, network) stops the refresh before anything is
written, so the cache never mixes a half refresh with old entries silently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from toolkit import hints
from toolkit.errors import UsageError
from toolkit.prices.cache import PriceCache, PriceEntry, cache_path, load_cache, save_cache
from toolkit.vocabulary import PROVIDERS

CLOUDS = ("alicloud", "tencentcloud")


class NotPriced(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str
    region: str
    instance_type: str
    reason: str = Field(description="why no price was read, with the API's code when it gave one")


class PricesReport(BaseModel):
    """`gpuctl prices refresh --json`: what was read and written."""

    model_config = ConfigDict(extra="forbid")

    cache: str = Field(description="the price cache file that was written")
    read_at: str = Field(description="when the prices were read, UTC")
    entries: list[PriceEntry] = Field(description="the prices read now, one per provider/region/zone/type/billing")
    not_priced: list[NotPriced] = Field(description="catalog types the region did not price, and why")


@dataclass
class Refreshed:
    entries: list[PriceEntry] = field(default_factory=list)
    not_priced: list[NotPriced] = field(default_factory=list)


def targets(provider: str | None, region: str | None, cache: PriceCache) -> list[tuple[str, str]]:
    """(provider, region) pairs to refresh."""
    if provider is not None and provider not in CLOUDS:
        raise UsageError(f"--provider {provider}: prices are read from {' and '.join(CLOUDS)} only",
                         hint=f"known providers: {', '.join(p for p in PROVIDERS if p in CLOUDS)}")
    if region is not None:
        if provider is None:
            raise UsageError(f"--region {region} needs --provider: region names are the cloud's own",
                             hint=hints.command("prices", "refresh", "--provider", "alicloud", "--region", region))
        return [(provider, region)]
    known = [(p, r) for p, r in cache.regions() if provider is None or p == provider]
    if not known:
        raise UsageError("no region to refresh: the price cache is empty",
                         hint="name one: " + hints.command("prices", "refresh", "--provider", "alicloud",
                                                           "--region", "cn-wulanchabu"))
    return known


def catalog_types(provider: str, instance_type: str | None) -> list[str]:
    from toolkit.catalog.store import load_catalog

    names = [row.name for row in load_catalog(provider).instance_types]
    if instance_type is None:
        return names
    if instance_type not in names:
        raise UsageError(f"--instance-type {instance_type} is not in the {provider} catalog",
                         hint=f"{hints.command('catalog', provider)} lists the types gpuctl knows")
    return [instance_type]


def read_alicloud(region: str, types: list[str], now: datetime, env: Mapping[str, str] | None) -> Refreshed:
    from toolkit.providers.alicloud import prices
    from toolkit.providers.alicloud.sdk import ApiError, connect

    api = connect(region, env=env)
    done = Refreshed()
    for name in types:
        try:
            done.entries += prices.read_prices(api, name, now)
        except ApiError as exc:
            if not exc.not_sold:
                raise
            done.not_priced.append(NotPriced(provider="alicloud", region=region, instance_type=name,
                                             reason=f"{exc.code}: {exc.api_message or 'no price'}"))
    return done


def read_tencentcloud(region: str, types: list[str], now: datetime, env: Mapping[str, str] | None) -> Refreshed:
    from toolkit.providers.tencentcloud import prices
    from toolkit.providers.tencentcloud.sdk import connect

    api = connect(region, env=env)
    done = Refreshed(entries=prices.zone_prices(api, types, now))
    priced = {e.instance_type for e in done.entries}
    done.not_priced += [NotPriced(provider="tencentcloud", region=region, instance_type=name,
                                  reason="not offered with an hourly price in any zone of the region now")
                        for name in types if name not in priced]
    return done


Reader = Callable[[str, list[str], datetime, "Mapping[str, str] | None"], Refreshed]
READERS: dict[str, Reader] = {"alicloud": read_alicloud, "tencentcloud": read_tencentcloud}


def refresh(provider: str | None, region: str | None, instance_type: str | None, *, now: datetime,
            env: Mapping[str, str] | None = None, path: Path | None = None) -> tuple[Refreshed, Path]:
    """Read, then write the merged cache once every read succeeded."""
    path = path or cache_path()
    cache = load_cache(path)
    done = Refreshed()
    for cloud, name in targets(provider, region, cache):
        part = READERS[cloud](name, catalog_types(cloud, instance_type), now, env)
        done.entries += part.entries
        done.not_priced += part.not_priced
    save_cache(cache.merged(done.entries), path)
    return done, path
