"""`gpuctl prices refresh`: ask the clouds what the catalog's instance types cost now, and keep it.

Which regions: the one named (`--provider P --region R`), else every (provider, region) the cache
already holds; with neither there is nothing to refresh and the user is told how to name one.
Which types: the catalog's for that provider (or the one `--instance-type` names, which must be in
it). A type the region does not sell or price, or prices with a figure the cache refuses (NaN,
negative, absurd: `cache.make_entry`), is a `not_priced` row, not a failure. A region whose calls
fail (an HTTP 5xx, an answer that is not the API's, the command's time budget spent) is a
`not_refreshed` row naming it and why; the other regions are still read and written, and the
command exits 6. An error that would fail every call (refused credentials or permission) stops the
refresh before anything is written. Either way the cache never mixes half a region's refresh with
its old entries, and never silently: one `cloud_api.Budget` bounds every call of the command.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from toolkit import hints
from toolkit.errors import UsageError
from toolkit.prices.cache import BadPriceError, PriceCache, PriceEntry, cache_path, load_cache, save_cache
from toolkit.providers.cloud_api import ApiError, Budget, check_region, refused_credentials
from toolkit.vocabulary import PROVIDERS

CLOUDS = ("alicloud", "tencentcloud")


class NotPriced(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str
    region: str
    instance_type: str
    reason: str = Field(description="why no price was read, with the API's code when it gave one")


class NotRefreshed(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str
    region: str
    reason: str = Field(description="why the region's prices were not read (its cache entries are kept as they were)")


class PricesReport(BaseModel):
    """`gpuctl prices refresh --json`: what was read and written."""

    model_config = ConfigDict(extra="forbid")

    cache: str = Field(description="the price cache file that was written")
    read_at: str = Field(description="when the prices were read, UTC")
    entries: list[PriceEntry] = Field(description="the prices read now, one per provider/region/zone/type/billing")
    not_priced: list[NotPriced] = Field(description="catalog types the region did not price, and why")
    not_refreshed: list[NotRefreshed] = Field(
        default_factory=list, description="regions that could not be read, and why; the command exits 6 when any")


@dataclass
class Refreshed:
    entries: list[PriceEntry] = field(default_factory=list)
    not_priced: list[NotPriced] = field(default_factory=list)
    not_refreshed: list[NotRefreshed] = field(default_factory=list)


def targets(provider: str | None, region: str | None, cache: PriceCache) -> list[tuple[str, str]]:
    """(provider, region) pairs to refresh."""
    if provider is not None and provider not in CLOUDS:
        raise UsageError(f"--provider {provider}: prices are read from {' and '.join(CLOUDS)} only",
                         hint=f"known providers: {', '.join(p for p in PROVIDERS if p in CLOUDS)}")
    if region is not None:
        check_region(region, "--region")
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


def read_alicloud(region: str, types: list[str], now: datetime, env: Mapping[str, str] | None,
                  budget: Budget) -> Refreshed:
    from toolkit.providers.alicloud import prices
    from toolkit.providers.alicloud.sdk import ApiError, connect

    api = connect(region, env=env, budget=budget)
    done = Refreshed()
    for name in types:
        try:
            done.entries += prices.read_prices(api, name, now)
        except BadPriceError as exc:
            done.not_priced.append(NotPriced(provider="alicloud", region=region, instance_type=name,
                                             reason=exc.message))
        except ApiError as exc:
            if not exc.not_sold:
                raise
            done.not_priced.append(NotPriced(provider="alicloud", region=region, instance_type=name,
                                             reason=f"{exc.code}: {exc.api_message or 'no price'}"))
    return done


def read_tencentcloud(region: str, types: list[str], now: datetime, env: Mapping[str, str] | None,
                      budget: Budget) -> Refreshed:
    from toolkit.providers.tencentcloud import prices
    from toolkit.providers.tencentcloud.sdk import connect

    api = connect(region, env=env, budget=budget)
    entries, refused = prices.zone_prices(api, types, now)
    done = Refreshed(entries=entries)
    priced = {e.instance_type for e in done.entries}
    done.not_priced += [NotPriced(provider="tencentcloud", region=region, instance_type=name,
                                  reason=refused.get(name, "not offered with an hourly price in any zone of the "
                                                           "region now"))
                        for name in types if name not in priced]
    return done


Reader = Callable[[str, list[str], datetime, "Mapping[str, str] | None", Budget], Refreshed]
READERS: dict[str, Reader] = {"alicloud": read_alicloud, "tencentcloud": read_tencentcloud}


def refresh(provider: str | None, region: str | None, instance_type: str | None, *, now: datetime,
            env: Mapping[str, str] | None = None, path: Path | None = None,
            budget: Budget | None = None) -> tuple[Refreshed, Path]:
    """Read each region, then write the merged cache once: the entries of every region read whole.
    Refused credentials stop it before anything is written; another failure of a region is named
    in `not_refreshed` and the others go on."""
    path = path or cache_path()
    cache = load_cache(path)
    budget = budget or Budget()
    done = Refreshed()
    read = 0
    for cloud, name in targets(provider, region, cache):
        try:
            part = READERS[cloud](name, catalog_types(cloud, instance_type), now, env, budget)
        except ApiError as error:
            if refused_credentials(error):
                raise
            done.not_refreshed.append(NotRefreshed(provider=cloud, region=name, reason=error.message))
            continue
        read += 1
        done.entries += part.entries
        done.not_priced += part.not_priced
    if read:
        save_cache(cache.merged(done.entries), path)
    return done, path
