"""Alibaba Cloud's live prices for one instance type in one region: pay-as-you-go and spot, per hour.

- Pay-as-you-go: `DescribePrice` with ResourceType instance, the type, PriceUnit Hour, SpotStrategy
  NoSpot and the system disk gpuctl gives a node (SystemDisk.Category/Size). No ZoneId: the list
  price is the region's. The answer splits the price (`PriceInfo.Price.DetailInfos.DetailInfo[]`,
  Resource `instanceType`, `systemDisk` ...): the entry's value is the instance part's TradePrice
  (after discounts; OriginalPrice is kept as the list value) and the disk part is kept beside it.
- Spot: `DescribeSpotPriceHistory` (NetworkType vpc, the last `HISTORY_DAYS` days; the API allows
  at most 30) names the zones that sell the type as spot and their recent prices. It is paged by
  row offset: the request's `Offset` is "the starting row for the query" and the answer's
  `NextOffset` "the starting row of the next page" (alibabacloud-ecs20140526 7.11.8,
  models/_describe_spot_price_history_request.py:55 and _describe_spot_price_history_response_body.py:24).
  Every page is read through `CloudApi.collect` (bounded by `cloud_api.LIMITS`' pages, items and the
  command's budget; a NextOffset seen before stops it); a page with no rows, or a NextOffset that is
  absent, 0 or not a whole number, ends the list (which value the API sends on its last page was not
  read: docs/alicloud.md, "verified only on paper"). The price now is
  `DescribePrice` with SpotStrategy SpotAsPriceGo and the zone's ZoneId (the API reference advises
  a ZoneId for spot, whose prices differ per zone). One entry per zone, with its history.
- Spot interruption risk: `DescribeSpotAdvice` (InstanceTypes.1 = the type, every zone) gives per
  zone, over the last 30 days, the interruption-rate band `InterruptRateDesc` (one of 0-3%, 3-5%,
  5-10%, 10-100%), the average rate `InterruptionRate` (%) and `AverageSpotDiscount`, the average
  spot price as % of pay-as-you-go (20 means a fifth of it). API reference:
  https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describespotadvice
  (read 2026-12-01; field types as the installed SDK's DescribeSpotAdviceResponseBody models them).
  A zone the advice leaves out keeps its price with no rate: never a guessed one.

Currency is the API's (CNY on the China site, USD on the international one).

Every entry is made through `cache.make_entry`: an answer with no TradePrice, or a price that is
NaN, negative or absurd, raises `BadPriceError` naming the type, which `refresh` lists as not
priced; fields are read defensively (`cloud_api.listed` / `mapping`: a string where the API
documents a list is no list).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from toolkit.prices.cache import BadPriceError, PriceEntry, SpotPoint, make_entry
from toolkit.providers.alicloud.sdk import AlibabaApi
from toolkit.providers.cloud_api import Page, finite, listed, mapping, number, whole
from toolkit.timestamps import parse_iso

PROVIDER = "alicloud"
HISTORY_DAYS = 7
NETWORK_TYPE = "vpc"  # classic network is retired (SDK model: DescribeSpotPriceHistoryRequest.network_type)
SOURCE_PRICE = "live: Alibaba DescribePrice"
SOURCE_SPOT = "live: Alibaba DescribePrice SpotAsPriceGo + DescribeSpotPriceHistory"
SOURCE_ADVICE = "live: Alibaba DescribeSpotAdvice, last 30 days"


@dataclass(frozen=True)
class SpotAdvice:
    """What DescribeSpotAdvice says of one type in one zone, over the last 30 days."""

    rate: str | None  # InterruptRateDesc, as the API words it
    average_percent: float | None  # InterruptionRate
    spot_percent: float | None  # AverageSpotDiscount: the average spot price as % of pay-as-you-go


def _percent(value: Any) -> float | None:
    """An advice figure in %: None unless a finite number in [0, 100] (a bad figure drops the figure,
    not the price beside it)."""
    figure = finite(value)
    return figure if figure is not None and 0.0 <= figure <= 100.0 else None


def _parts(body: Mapping[str, Any]) -> tuple[dict[str, Mapping[str, Any]], Mapping[str, Any]]:
    """({Resource: DetailInfo}, Price) of a DescribePrice answer."""
    price = mapping(mapping(body.get("PriceInfo")).get("Price"))
    details = listed(mapping(price.get("DetailInfos")).get("DetailInfo"))
    return {str(d.get("Resource")): d for d in details if isinstance(d, Mapping)}, price


def _entry_values(body: Mapping[str, Any], instance_type: str
                  ) -> tuple[float, float | None, float | None, str, str | None]:
    """(value, list value, system disk part, currency, note) of a DescribePrice answer."""
    parts, price = _parts(body)
    currency = price.get("Currency") if isinstance(price.get("Currency"), str) and price.get("Currency") else "CNY"
    instance = parts.get("instanceType")
    disk = parts.get("systemDisk")
    disk_part = number(disk.get("TradePrice")) if disk else None
    value = number(instance.get("TradePrice")) if instance is not None else None
    if instance is not None and value is not None:
        return value, number(instance.get("OriginalPrice")), disk_part, str(currency), None
    # No split: the total is all there is; say so rather than guess the instance's share.
    total = number(price.get("TradePrice"))
    if total is None:
        raise BadPriceError(f"{instance_type}: DescribePrice answered without a TradePrice (PriceInfo.Price)")
    return total, number(price.get("OriginalPrice")), None, str(currency), \
        "the API gave one total (instance and disks)"


def describe_price(api: AlibabaApi, instance_type: str, *, zone: str | None = None, spot: bool = False,
                   disk_category: str, disk_gib: int) -> dict[str, Any]:
    from alibabacloud_ecs20140526 import models

    request = models.DescribePriceRequest(
        region_id=api.region, resource_type="instance", instance_type=instance_type, price_unit="Hour",
        spot_strategy="SpotAsPriceGo" if spot else "NoSpot", zone_id=zone,
        system_disk=models.DescribePriceRequestSystemDisk(category=disk_category, size=disk_gib),
    )
    context = {"instance_type": instance_type, **({"zone": zone} if zone else {})}
    return api.call("DescribePrice", request, context=context)


def spot_history(api: AlibabaApi, instance_type: str, now: datetime) -> dict[str, list[SpotPoint]]:
    """Zone -> its spot prices of the last HISTORY_DAYS days, oldest first (every page read)."""
    from alibabacloud_ecs20140526 import models

    context = {"instance_type": instance_type}

    def fetch(offset: Hashable | None) -> Page:
        request = models.DescribeSpotPriceHistoryRequest(
            region_id=api.region, instance_type=instance_type, network_type=NETWORK_TYPE,
            start_time=f"{now - timedelta(days=HISTORY_DAYS):%Y-%m-%dT%H:%M:%SZ}",
            end_time=f"{now:%Y-%m-%dT%H:%M:%SZ}", offset=offset if isinstance(offset, int) else None,
        )
        body = api.call("DescribeSpotPriceHistory", request, context=context)
        rows = [row for row in listed(mapping(body.get("SpotPrices")).get("SpotPriceType")) if isinstance(row, dict)]
        return Page(rows, next_offset(body.get("NextOffset"), rows))

    zones: dict[str, list[SpotPoint]] = defaultdict(list)
    for row in api.collect(fetch, action="DescribeSpotPriceHistory", context=context):
        # A point of history that is not a finite price at a readable time is left out (it is history,
        # not the price: that one is asked below, and refused by name if it is bad).
        value, zone, at = finite(row.get("SpotPrice")), row.get("ZoneId"), parse_iso(row.get("Timestamp"))
        if value is None or not isinstance(zone, str) or not zone or at is None:
            continue
        try:
            zones[zone].append(SpotPoint(at=at, value=value))
        except ValueError:  # negative or absurd: not a point either
            continue
    return {zone: sorted(points, key=lambda p: p.at) for zone, points in sorted(zones.items())}


def next_offset(value: Any, rows: list[dict[str, Any]]) -> int | None:
    """The row the next page starts at, or None: the last page (no rows, or no NextOffset above 0).
    A NextOffset the pager was given before is passed on as is: `collect` stops on it."""
    offset = whole(value, low=0)
    return offset if rows and offset else None


def spot_advice(api: AlibabaApi, instance_type: str) -> dict[str, SpotAdvice]:
    """Zone -> the interruption figures DescribeSpotAdvice gives for `instance_type` there."""
    from alibabacloud_ecs20140526 import models

    request = models.DescribeSpotAdviceRequest(region_id=api.region, instance_types=[instance_type])
    body = api.call("DescribeSpotAdvice", request, context={"instance_type": instance_type})
    found: dict[str, SpotAdvice] = {}
    for zone in listed(mapping(body.get("AvailableSpotZones")).get("AvailableSpotZone")):
        if not isinstance(zone, Mapping) or not isinstance(zone.get("ZoneId"), str) or not zone["ZoneId"]:
            continue
        for row in listed(mapping(zone.get("AvailableSpotResources")).get("AvailableSpotResource")):
            if not isinstance(row, Mapping) or row.get("InstanceType") != instance_type:
                continue
            band = row.get("InterruptRateDesc")
            found[zone["ZoneId"]] = SpotAdvice(
                rate=str(band)[:40] if isinstance(band, str) and band else None,
                average_percent=_percent(row.get("InterruptionRate")),
                spot_percent=_percent(row.get("AverageSpotDiscount")))
    return found


def _advice_fields(advice: SpotAdvice | None) -> dict[str, Any]:
    if advice is None:
        return {"interruption_source": SOURCE_ADVICE}  # asked; this zone had no figure
    return {"interruption_rate": advice.rate, "interruption_average_percent": advice.average_percent,
            "spot_average_percent": advice.spot_percent, "interruption_source": SOURCE_ADVICE}


def read_prices(api: AlibabaApi, instance_type: str, now: datetime, *, disk_category: str = "cloud_essd",
                disk_gib: int = 200) -> list[PriceEntry]:
    """The pay-as-you-go entry of the region and one spot entry per zone that sells the type as spot,
    with the zone's interruption figures."""
    disk = f"{disk_category} {disk_gib} GiB"
    common = {"provider": PROVIDER, "region": api.region, "instance_type": instance_type, "system_disk": disk,
              "read_at": now}
    value, listed_value, disk_part, currency, note = _entry_values(
        describe_price(api, instance_type, disk_category=disk_category, disk_gib=disk_gib), instance_type)
    entries = [make_entry(zone=None, billing="pay_as_you_go", currency=currency, value=value, list_value=listed_value,
                          system_disk_per_hour=disk_part, source=SOURCE_PRICE, note=note, **common)]
    zones = spot_history(api, instance_type, now)
    advice = spot_advice(api, instance_type) if zones else {}  # no spot zone: no risk to ask about
    for zone, points in zones.items():
        value, listed_value, disk_part, currency, note = _entry_values(
            describe_price(api, instance_type, zone=zone, spot=True, disk_category=disk_category, disk_gib=disk_gib),
            instance_type)
        entries.append(make_entry(zone=zone, billing="spot", currency=currency, value=value, list_value=listed_value,
                                  system_disk_per_hour=disk_part, history=points, source=SOURCE_SPOT, note=note,
                                  **_advice_fields(advice.get(zone)), **common))
    return entries
