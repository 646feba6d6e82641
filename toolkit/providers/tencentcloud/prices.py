"""Tencent Cloud's live prices for instance types in one region: pay-as-you-go and spot, per hour and zone.

- `DescribeZoneInstanceConfigInfos` filtered by charge type (POSTPAID_BY_HOUR, then SPOTPAID)
  lists every zone's offer of every type with its `Price` (an ItemPrice: `UnitPrice` is the hourly
  list price, `UnitPriceDiscount` what the account pays, `ChargeUnit` HOUR). One call per charge
  type covers the region; the instance alone, no disk.
- `InquiryPriceRunInstances` prices one real launch (zone, type, image, system disk) with
  InstanceChargeType POSTPAID_BY_HOUR or SPOTPAID; its `Price.InstancePrice` covers the instance
  and its disks together (the API does not split the system disk out), so it is used only when the
  caller names an image (`image_id`), and its entry says that it includes the disk.
- Tencent publishes no spot price history API (CVM API 2017-03-12 has none), so spot entries carry
  the price now only.

Prices are in CNY (the API's unit is 元, ItemPrice docs of the SDK models).

Every entry is made through `cache.make_entry`: an offer whose price is NaN, negative or absurd is
not an entry; `zone_prices` names it among the refused, which `refresh` lists as not priced.
Fields are read defensively (`cloud_api.listed` / `mapping`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Literal

from toolkit.prices.cache import BadPriceError, PriceEntry, make_entry
from toolkit.providers.cloud_api import listed, mapping, number
from toolkit.providers.tencentcloud.sdk import TencentApi, filters

PROVIDER = "tencentcloud"
CURRENCY = "CNY"
Billing = Literal["pay_as_you_go", "spot"]
CHARGE_TYPES: dict[Billing, str] = {"pay_as_you_go": "POSTPAID_BY_HOUR", "spot": "SPOTPAID"}
SOURCE_OFFERS = "live: Tencent DescribeZoneInstanceConfigInfos"
SOURCE_INQUIRY = "live: Tencent InquiryPriceRunInstances"


def hourly(price: Mapping[str, Any]) -> tuple[float, float | None] | None:
    """(what the account pays, list price) per hour of an ItemPrice, or None when it is not hourly."""
    if price.get("ChargeUnit") not in (None, "HOUR"):
        return None
    listed, paid = number(price.get("UnitPrice")), number(price.get("UnitPriceDiscount"))
    if paid is None and listed is None:
        return None
    return (paid if paid is not None else float(listed or 0.0)), listed


def zone_prices(api: TencentApi, instance_types: Iterable[str], now: datetime,
                billings: Iterable[Billing] = ("pay_as_you_go", "spot")) -> tuple[list[PriceEntry], dict[str, str]]:
    """One entry per (zone, type, billing) that the region offers with an hourly price, and
    {instance type: why} for the offers whose price the cache refuses."""
    wanted = set(instance_types)
    entries = []
    refused: dict[str, str] = {}
    for billing in billings:
        answer = api.call("cvm", "DescribeZoneInstanceConfigInfos",
                          {"Filters": filters(instance_charge_type=CHARGE_TYPES[billing])})
        for item in listed(answer.get("InstanceTypeQuotaSet")):
            if not isinstance(item, Mapping) or item.get("InstanceType") not in wanted \
                    or not isinstance(item.get("Zone"), str) or not item["Zone"]:
                continue
            found = hourly(mapping(item.get("Price")))
            if found is None:
                continue
            value, listed_value = found
            try:
                entries.append(make_entry(
                    provider=PROVIDER, region=api.region, zone=item["Zone"], instance_type=str(item["InstanceType"]),
                    billing=billing, currency=CURRENCY, value=value, list_value=listed_value, read_at=now,
                    source=SOURCE_OFFERS,
                    note=None if billing == "pay_as_you_go" else "Tencent publishes no spot price history",
                ))
            except BadPriceError as error:
                refused[str(item["InstanceType"])] = error.message
    return sorted(entries, key=lambda e: e.key()), refused


def inquire(api: TencentApi, zone: str, instance_type: str, billing: Billing, image_id: str, now: datetime,
            *, disk_type: str = "CLOUD_BSSD", disk_gib: int = 200) -> PriceEntry:
    """The price of launching one instance (with its system disk) in `zone`, per hour."""
    answer = api.call("cvm", "InquiryPriceRunInstances", {
        "Placement": {"Zone": zone}, "ImageId": image_id, "InstanceType": instance_type,
        "InstanceChargeType": CHARGE_TYPES[billing], "InstanceCount": 1,
        "SystemDisk": {"DiskType": disk_type, "DiskSize": disk_gib},
    }, context={"zone": zone, "instance_type": instance_type})
    price = mapping(mapping(answer.get("Price")).get("InstancePrice"))
    found = hourly(price)
    if found is None:
        from toolkit.errors import ProviderError

        raise ProviderError(f"Tencent Cloud InquiryPriceRunInstances gave no hourly price for {instance_type} "
                            f"in {zone}")
    value, listed_value = found
    return make_entry(
        provider=PROVIDER, region=api.region, zone=zone, instance_type=instance_type, billing=billing,
        currency=CURRENCY, value=value, list_value=listed_value, system_disk=f"{disk_type} {disk_gib} GiB",
        read_at=now, source=SOURCE_INQUIRY, note="includes the system disk (the API does not split it)",
    )
