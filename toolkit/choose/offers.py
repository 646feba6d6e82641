"""Offers: each catalog row that meets the needs, priced per region, or the reasons it cannot serve.

Prices, in this order: the live price cache (`gpuctl prices refresh`; spot first when spot is
acceptable and cached, else pay-as-you-go; the cheapest zone of the region), then the catalog
row's dated public list price, else none, with the command that reads one. A price in another
currency than the catalog's is not mixed in (the budget is CNY). Nothing is invented: an unknown
price stays null and the offer says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from toolkit.catalog.models import InstanceType
from toolkit.catalog.store import load_catalog
from toolkit.choose.busbw import Busbw, Measured, expected
from toolkit.choose.needs import Needs
from toolkit.choose.report import Billing, Offer, Unmet
from toolkit.errors import GpuctlError
from toolkit.prices.cache import PriceCache, PriceEntry

CLOUDS = ("alicloud", "tencentcloud")
COMPARE_ONLY_FILE = "compare_only.yaml"
COMPARE_ONLY = "compare only: gpuctl cannot create these yet"
MAX_NODES = 512  # NodePool.count's upper bound

# Region ids of each cloud, to tell which cloud a --region the cache does not hold belongs to.
# Alibaba: cn-<city>[-<more>] or <area>-<direction>-<n> (ap-southeast-1, cn-shanghai-finance-1);
# Tencent: <area>-<city>[-<more>] without a number (ap-shanghai, na-siliconvalley, ap-shanghai-fsi).
REGION_FORMS = {
    "alicloud": re.compile(r"cn-[a-z]+(-[a-z]+)*(-[0-9]+)?|[a-z]{2}-[a-z]+(-[a-z]+)*-[0-9]+"),
    "tencentcloud": re.compile(r"(ap|na|eu|sa)-[a-z]+(-[a-z]+)*"),
}


class CompareCloud(BaseModel):
    """One cloud gpuctl cannot drive, with rows of the catalog's own model (source and date each)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    provider: str
    currency: str
    instance_types: list[InstanceType]


class CompareOnly(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    clouds: list[CompareCloud]


def load_compare_only(text: str | None = None) -> list[CompareCloud]:
    """The compare-only rows shipped in toolkit/catalog/data/compare_only.yaml (none when absent)."""
    if text is None:
        path = resources.files("toolkit.catalog").joinpath("data", COMPARE_ONLY_FILE)
        if not path.is_file():
            return []
        text = path.read_text("utf-8")
    try:
        return CompareOnly.model_validate(yaml.safe_load(text)).clouds
    except (ValidationError, yaml.YAMLError) as exc:  # a broken shipped file is a bug in gpuctl
        raise GpuctlError(f"catalog data {COMPARE_ONLY_FILE} is invalid (a gpuctl bug): {exc}") from None


def region_clouds(region: str, cache: PriceCache) -> list[str]:
    """The clouds `region` belongs to: the cache's word first, else the region id's form."""
    cached = [p for p, r in cache.regions() if r == region]
    return cached or [p for p, form in REGION_FORMS.items() if form.fullmatch(region)]


def refresh_command(provider: str, region: str | None) -> str:
    return f"gpuctl prices refresh --provider {provider} --region {region or '<region>'}"


@dataclass
class Price:
    billing: Billing
    per_node: float | None
    currency: str | None
    region: str | None
    zone: str | None
    source: str | None
    read: str | None
    note: str


@dataclass
class Row:
    provider: str
    currency: str
    row: InstanceType
    compare_only: bool = False


@dataclass
class Built:
    offers: list[Offer] = field(default_factory=list)
    unmet: list[Unmet] = field(default_factory=list)


def catalog_rows() -> list[Row]:
    rows = [Row(p, load_catalog(p).currency, r) for p in CLOUDS for r in load_catalog(p).instance_types]
    return rows + [Row(c.provider, c.currency, r, compare_only=True) for c in load_compare_only()
                   for r in c.instance_types]


def gpu_matches(asked: str, model: str) -> bool:
    """A whole-word, case-insensitive match: A10 matches "NVIDIA A10", not "NVIDIA A100"."""
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(asked)}(?![A-Za-z0-9])", model, re.IGNORECASE) is not None


def unmet_reasons(row: InstanceType, needs: Needs, nodes: int) -> list[str]:
    gpu = row.gpu
    if gpu is None:
        return ["no GPU"]
    reasons: list[str] = []
    if needs.gpu is not None and not gpu_matches(needs.gpu, gpu.model):
        reasons.append(f"GPU is {gpu.model}, not {needs.gpu}")
    if needs.gpu_memory_gib is not None:
        if gpu.memory_gib is None:
            reasons.append("GPU memory not stated by the catalog's source")
        elif gpu.memory_gib < needs.gpu_memory_gib:
            reasons.append(f"GPU memory too small: {gpu.memory_gib} GiB < {needs.gpu_memory_gib} GiB")
    if gpu.count < needs.gpus_per_node:
        reasons.append(f"too few GPUs per node: {gpu.count} < {needs.gpus_per_node}")
    if needs.fabric == "required" and row.rdma is None:
        reasons.append("no RDMA when required: the type has no RDMA NICs")
    if nodes > MAX_NODES:
        reasons.append(f"needs {nodes} nodes; a node pool holds at most {MAX_NODES}")
    return reasons


def pick_price(item: Row, region: str | None, needs: Needs, cache: PriceCache, now: datetime) -> Price:
    row = item.row
    entries = [e for e in cache.entries if (e.provider, e.instance_type) == (item.provider, row.name)
               and e.region == region and e.currency == item.currency]
    spot = [e for e in entries if e.billing == "spot"]
    payg = [e for e in entries if e.billing == "pay_as_you_go"]
    if needs.spot and spot:
        return _live("spot", min(spot, key=_cheapest), now, "spot: the price now (it moves; the cloud "
                     "caps it at pay-as-you-go)")
    if payg:
        lack = "; no spot price cached, so pay-as-you-go" if needs.spot else ""
        return _live("pay_as_you_go", min(payg, key=_cheapest), now, f"pay-as-you-go{lack}")
    listed = row.price_in(region)
    if listed is not None and listed.pay_as_you_go_per_hour is not None and listed.currency == item.currency:
        basis = "spot: at most this pay-as-you-go price" if needs.spot else "pay-as-you-go price"
        return Price("pay_as_you_go", listed.pay_as_you_go_per_hour, listed.currency, region, None,
                     str(listed.source.url), listed.source.read.isoformat(),
                     f"{basis} ({listed.kind}) for {listed.region}, read {listed.source.read.isoformat()}"
                     + (f"; includes {listed.includes}" if listed.includes else "")
                     + ("; a dated public figure, not the price now" if not item.compare_only else ""))
    if item.compare_only:
        return Price("pay_as_you_go", None, None, region, None, None, None, "no price: no public page read")
    elsewhere = (f" (the catalog's {row.price.kind} figure is for {row.price.region}, one region's price)"
                 if row.price is not None and listed is None else "")
    why = f"; {row.no_price}" if row.no_price else ""
    return Price("spot" if needs.spot else "pay_as_you_go", None, None, region, None, None, None,
                 f"no price: run `{refresh_command(item.provider, region)}`{elsewhere}{why}")


def _cheapest(entry: PriceEntry) -> tuple[float, str]:
    return entry.value, entry.zone or ""


def _live(billing: Billing, entry: PriceEntry, now: datetime, basis: str) -> Price:
    return Price(billing, entry.value, entry.currency, entry.region, entry.zone, entry.describe(now),
                 entry.read_at.strftime("%Y-%m-%dT%H:%M:%SZ"), f"{basis}; {entry.describe(now)}")


def regions_for(item: Row, needs: Needs, cache: PriceCache) -> list[str | None]:
    if item.compare_only:
        return [None]
    if needs.regions:
        return [r for r in needs.regions if item.provider in region_clouds(r, cache)]
    cached = sorted({e.region for e in cache.entries
                     if (e.provider, e.instance_type) == (item.provider, item.row.name)})
    return list(cached) or [None]


def build(needs: Needs, cache: PriceCache, now: datetime, measured: dict[tuple[str, str], Measured],
          rows: list[Row] | None = None) -> Built:
    """Every row as offers (one per region) or as an unmet entry with its reasons; unranked."""
    built = Built()
    for item in rows if rows is not None else catalog_rows():
        row = item.row
        per_node = row.gpu.count if row.gpu else 1
        nodes = math.ceil(needs.gpus / per_node)
        reasons = unmet_reasons(row, needs, nodes)
        regions = regions_for(item, needs, cache)
        if not regions:
            reasons.append(f"not in the regions asked for ({', '.join(needs.regions)})")
        if reasons:
            built.unmet.append(Unmet(provider=item.provider, instance_type=row.name, compare_only=item.compare_only,
                                     region=None, reasons=reasons))
            continue
        used = per_node if nodes > 1 else min(per_node, needs.gpus)
        busbw = expected(row, nodes, used, measured.get((item.provider, row.name)))
        for region in regions:
            offer = _offer(item, nodes, busbw, pick_price(item, region, needs, cache, now), needs)
            if offer.within_budget is False:
                built.unmet.append(Unmet(provider=item.provider, instance_type=row.name,
                                         compare_only=item.compare_only, region=offer.region,
                                         reasons=[f"over budget: {offer.total:,.2f} {offer.currency} for "
                                                  f"{needs.hours:g} h > {needs.budget:,.2f} CNY"]))
            else:
                built.offers.append(offer)
    return built


def _offer(item: Row, nodes: int, busbw: Busbw, price: Price, needs: Needs) -> Offer:
    assert item.row.gpu is not None
    row, gpu = item.row, item.row.gpu
    gpus = nodes * gpu.count
    per_hour = None if price.per_node is None else round(price.per_node * nodes, 2)
    total = None if per_hour is None or needs.hours is None else round(per_hour * needs.hours, 2)
    within = None if total is None or needs.budget is None else total <= needs.budget
    rdma_per_gpu = round(row.rdma.gbps / gpu.count, 2) if row.rdma and row.rdma.gbps else None
    return Offer(
        rank=0, provider=item.provider, instance_type=row.name, compare_only=item.compare_only,
        region=price.region, zone=price.zone, billing=price.billing, nodes=nodes, gpus_per_node=gpu.count,
        gpus=gpus, gpu_model=gpu.model, gpu_memory_gib=gpu.memory_gib,
        rdma_kind=row.rdma.kind if row.rdma else None, rdma_gbps_per_gpu=rdma_per_gpu,
        busbw_gbps=busbw.gbps, busbw_from=busbw.origin,
        busbw_basis=busbw.basis, currency=price.currency, node_per_hour=price.per_node, per_hour=per_hour,
        per_gpu_hour=None if per_hour is None else round(per_hour / gpus, 2),
        per_busbw=None if per_hour is None or not busbw.gbps else round(per_hour / busbw.gbps, 2),
        hours=needs.hours, total=total, within_budget=within, price_source=price.source, price_read=price.read,
        price_note=price.note + (f"; {COMPARE_ONLY}" if item.compare_only else ""), why="",
    )
