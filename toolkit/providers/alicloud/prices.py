"""Alibaba Cloud's live prices for one instance type in one region: pay-as-you-go and spot, per hour.

- Pay-as-you-go: `DescribePrice` with ResourceType instance, the type, PriceUnit Hour, SpotStrategy
  NoSpot and the system disk gpuctl gives a node (SystemDisk.Category/Size). No ZoneId: the list
  price is the region's. The answer splits the price (`PriceInfo.Price.DetailInfos.DetailInfo[]`,
  Resource `instanceType`, `systemDisk` ...): the entry's value is the instance part's TradePrice
  (after discounts; OriginalPrice is kept as the list value) and the disk part is kept beside it.
- Spot: `DescribeSpotPriceHistory` (NetworkType vpc, the last `HISTORY_DAYS` days; the API allows
  at most 30) names the zones that sell the type as spot and their recent prices; the price now is
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
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from toolkit.prices.cache import PriceEntry, SpotPoint
from toolkit.providers.alicloud.sdk import AlibabaApi

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


def _float(value: Any) -> float | None:
    try:
        return None if value is None or isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        return None


def _parts(body: Mapping[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """({Resource: DetailInfo}, Price) of a DescribePrice answer."""
    price = (body.get("PriceInfo") or {}).get("Price") or {}
    details = ((price.get("DetailInfos") or {}).get("DetailInfo")) or []
    return {str(d.get("Resource")): dict(d) for d in details if isinstance(d, Mapping)}, price


def _entry_values(body: Mapping[str, Any]) -> tuple[float, float | None, float | None, str, str | None]:
    """(value, list value, system disk part, currency, note) of a DescribePrice answer."""
    parts, price = _parts(body)
    currency = str(price.get("Currency") or "CNY")
    instance = parts.get("instanceType")
    disk = parts.get("systemDisk")
    disk_part = _float(disk.get("TradePrice")) if disk else None
    if instance is not None and _float(instance.get("TradePrice")) is not None:
        value = _float(instance.get("TradePrice"))
        return float(value or 0.0), _float(instance.get("OriginalPrice")), disk_part, currency, None
    # No split: the total is all there is; say so rather than guess the instance's share.
    total = _float(price.get("TradePrice"))
    if total is None:
        raise ValueError("DescribePrice answered without a TradePrice")
    return total, _float(price.get("OriginalPrice")), None, currency, "the API gave one total (instance and disks)"


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
    """Zone -> its spot prices of the last HISTORY_DAYS days, oldest first."""
    from alibabacloud_ecs20140526 import models

    request = models.DescribeSpotPriceHistoryRequest(
        region_id=api.region, instance_type=instance_type, network_type=NETWORK_TYPE,
        start_time=f"{now - timedelta(days=HISTORY_DAYS):%Y-%m-%dT%H:%M:%SZ}", end_time=f"{now:%Y-%m-%dT%H:%M:%SZ}",
    )
    body = api.call("DescribeSpotPriceHistory", request, context={"instance_type": instance_type})
    zones: dict[str, list[SpotPoint]] = defaultdict(list)
    for row in (body.get("SpotPrices") or {}).get("SpotPriceType") or ():
        value, zone, stamp = _float(row.get("SpotPrice")), row.get("ZoneId"), row.get("Timestamp")
        if value is None or not zone or not stamp:
            continue
        try:
            at = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
        except ValueError:
            continue
        zones[str(zone)].append(SpotPoint(at=at, value=value))
    return {zone: sorted(points, key=lambda p: p.at) for zone, points in sorted(zones.items())}


def spot_advice(api: AlibabaApi, instance_type: str) -> dict[str, SpotAdvice]:
    """Zone -> the interruption figures DescribeSpotAdvice gives for `instance_type` there."""
    from alibabacloud_ecs20140526 import models

    request = models.DescribeSpotAdviceRequest(region_id=api.region, instance_types=[instance_type])
    body = api.call("DescribeSpotAdvice", request, context={"instance_type": instance_type})
    found: dict[str, SpotAdvice] = {}
    for zone in (body.get("AvailableSpotZones") or {}).get("AvailableSpotZone") or ():
        resources = (zone.get("AvailableSpotResources") or {}).get("AvailableSpotResource") or ()
        for row in resources:
            if row.get("InstanceType") != instance_type or not zone.get("ZoneId"):
                continue
            band = row.get("InterruptRateDesc")
            found[str(zone["ZoneId"])] = SpotAdvice(
                rate=str(band) if band else None, average_percent=_float(row.get("InterruptionRate")),
                spot_percent=_float(row.get("AverageSpotDiscount")))
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
    value, listed, disk_part, currency, note = _entry_values(
        describe_price(api, instance_type, disk_category=disk_category, disk_gib=disk_gib))
    entries = [PriceEntry(zone=None, billing="pay_as_you_go", currency=currency, value=value, list_value=listed,
                          system_disk_per_hour=disk_part, source=SOURCE_PRICE, note=note, **common)]
    zones = spot_history(api, instance_type, now)
    advice = spot_advice(api, instance_type) if zones else {}  # no spot zone: no risk to ask about
    for zone, points in zones.items():
        value, listed, disk_part, currency, note = _entry_values(
            describe_price(api, instance_type, zone=zone, spot=True, disk_category=disk_category, disk_gib=disk_gib))
        entries.append(PriceEntry(zone=zone, billing="spot", currency=currency, value=value, list_value=listed,
                                  system_disk_per_hour=disk_part, history=points, source=SOURCE_SPOT, note=note,
                                  **_advice_fields(advice.get(zone)), **common))
    return entries
