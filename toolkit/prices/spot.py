"""Spot pools: what spot saves against pay-as-you-go, and the interruption risk the cloud reports.

The risk is the cloud's own figure with its source and read time, or a sentence saying the cloud
publishes none; gpuctl never estimates one. Alibaba reports a band per zone and type
(`DescribeSpotAdvice`, kept in the price cache by `gpuctl prices refresh`); Tencent publishes none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from toolkit.prices.cache import PriceEntry

# Checked 2026-12-01: the CVM API 2017-03-12 (tencentcloud-sdk-python 3.1.178, the version gpuctl
# installs) has no interruption or reclaim rate in any action or model: DescribeZoneInstanceConfigInfos'
# InstanceTypeQuotaItem has Status / StatusCategory (stock), nothing about interruptions. Tencent's
# spot overview says spot instances are not reclaimed for price but "randomly" when supply runs short.
TENCENT_SPOT_PAGE = "https://www.tencentcloud.com/document/product/213/17816"
CHECKED = date(2026, 12, 1)
NO_RATE = {
    "tencentcloud": ("Tencent publishes no interruption rate: the CVM API (2017-03-12) reports none, and its "
                     "spot overview says spot instances are reclaimed at random when supply runs short "
                     f"(checked {CHECKED}: {TENCENT_SPOT_PAGE})"),
}


# What each cloud's own pages state about the spot discount: a statement, not a price, shown beside
# a spot pool's figures. Where two of the cloud's pages disagree, every one is kept, with its page
# and the date of its last change, and the plan shows them all (read 2026-12-02).
_INTL = "https://github.com/tencentyun/intlcloud-documents/blob/02ec31c2626e18091982c1934bd4aded84cf5043/"
_QCLOUD = "https://github.com/tencentyun/qcloud-documents/blob/83699a95a518d1dd5b49370a8d390aad864cecc2/"
_ALI = "https://github.com/AlibabaCloudDocs/ecs/blob/322eaab82e866a494eeaddb0de02bab1978692d1/"
STATED_DISCOUNTS: dict[str, tuple[tuple[str, str], ...]] = {
    "tencentcloud": (
        ("up to 95% off pay-as-you-go",
         f"Tencent's spot page, international site, changed 2023-06-30: {_INTL}"
         "yehe_doc/%E8%AE%A1%E7%AE%97/%E4%BA%91%E6%9C%8D%E5%8A%A1%E5%99%A8/%E4%BA%A7%E5%93%81%E7%AE%80%E4%BB%8B/"
         "%E5%AE%9E%E4%BE%8B/%E7%AB%9E%E4%BB%B7%E5%AE%9E%E4%BE%8B_intl_en.md line 14"),
        ("sold at 20% of the pay-as-you-go price (a fixed 80% off \"at the current stage\"; as low as 10%)",
         f"Tencent's spot page, China site, a stored version of unknown date: {_QCLOUD}"
         "product/%E8%AE%A1%E7%AE%97%E4%B8%8E%E7%BD%91%E7%BB%9C/%E4%BA%91%E6%9C%8D%E5%8A%A1%E5%99%A8/"
         "%E4%BA%A7%E5%93%81%E7%AE%80%E4%BB%8B/%E5%AE%9E%E4%BE%8B/%E7%AB%9E%E4%BB%B7%E5%AE%9E%E4%BE%8B.md "
         "lines 8, 15, 18"),
    ),
    "alicloud": (
        ("discounts of up to 90% of pay-as-you-go prices",
         f"Alibaba's billing page for instance types, changed 2021-03-09: {_ALI}"
         "intl.en-US/Pricing/Billing%20items/Instance%20types.md line 43"),
    ),
}


def stated_discounts(provider: str) -> list[str]:
    """The spot discount as each of the cloud's pages states it, each with its source; two pages that
    disagree are both there (and said to disagree)."""
    found = STATED_DISCOUNTS.get(provider, ())
    lines = [f"{statement} ({source})" for statement, source in found]
    if len(lines) > 1:
        # No command line here: the JSON plan is the same document on every machine.
        lines.append(f"the cloud's {len(found)} pages above state different figures; none is a price: the spot "
                     "price now is what `prices refresh` reads from the cloud's price API")
    return lines


@dataclass(frozen=True)
class Saving:
    per_node_per_hour: float
    percent: float


@dataclass(frozen=True)
class Risk:
    rate: str | None  # the band in the cloud's words, e.g. "0-3%"; None: no figure
    source: str | None  # where the figure (or the absence of one) comes from, with its read time
    read: date | None


def saving(spot_now: float | None, pay_as_you_go: float | None) -> Saving | None:
    """Pay-as-you-go minus the spot price now, per node-hour and in % of pay-as-you-go; None unless
    both prices are known (a ceiling is not a price, so it gives no saving)."""
    if spot_now is None or pay_as_you_go is None or pay_as_you_go <= 0:
        return None
    saved = pay_as_you_go - spot_now
    return Saving(per_node_per_hour=round(saved, 2), percent=round(saved / pay_as_you_go * 100, 1))


def risk(provider: str, entry: PriceEntry | None, now: datetime | None) -> Risk:
    """The interruption risk for a spot pool: the cached figure of its zone (`entry`, the spot price
    read with it), else what is known of the cloud."""
    if provider in NO_RATE:
        return Risk(rate=None, source=NO_RATE[provider], read=CHECKED)
    if entry is None or now is None or entry.interruption_source is None:
        return Risk(rate=None, source=None, read=None)  # not read yet: the text plan says how to read it
    where = entry.describe(now, source=entry.interruption_source)
    if entry.interruption_rate is None:
        return Risk(rate=None, source=f"none reported for {entry.instance_type} in {entry.zone}: {where}",
                    read=entry.read_at.date())
    figures = []
    if entry.interruption_average_percent is not None:
        figures.append(f"average {entry.interruption_average_percent:g}%")
    if entry.spot_average_percent is not None:
        figures.append(f"average spot price {entry.spot_average_percent:g}% of pay-as-you-go")
    source = f"{', '.join(figures)}; {where}" if figures else where
    return Risk(rate=entry.interruption_rate, source=source, read=entry.read_at.date())
