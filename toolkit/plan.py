"""`gpuctl plan`: what a spec will create, the hardware each node gets, and what it costs.

The plan is computed from the spec, the catalog and the price cache (`gpuctl prices refresh`);
nothing is contacted. A live price from the cache wins over the catalog's, and says where and when
it was read; one older than the cache's MAX_AGE_DAYS is marked OLD. Without a cache the JSON form is
deterministic (no clock, no absolute paths) so it can be kept as a golden file and diffed in review.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from toolkit import hints
from toolkit.catalog.models import InstanceType, Price
from toolkit.catalog.result import CheckResult
from toolkit.catalog.storage_prices import created_class, volume_price
from toolkit.catalog.store import load_catalog
from toolkit.prices.bill import bill_notes
from toolkit.prices.cache import PriceCache, PriceEntry
from toolkit.prices.currency import ExchangeRate, current_rate
from toolkit.prices.disk_prices import TENCENT_DISK_PRICE_READ, TENCENT_DISK_PRICE_SOURCE, tencent_disk_price
from toolkit.prices.spot import risk, saving, stated_discounts
from toolkit.providers.base import PlannedResource as PlannedResource  # the plan's own type, defined beside Provider
from toolkit.providers.base import Provider
from toolkit.providers.registry import get_provider
from toolkit.providers.tencentcloud.args import system_disk_type
from toolkit.spec.duration import format_duration
from toolkit.spec.models import ClusterSpec, NodePool, Software, StorageVolume

HOURS_PER_MONTH = 730  # the clouds' own convention for monthly estimates (8760 h / 12)


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NodeHardware(_Out):
    pool: str
    instance_type: str
    count: int
    gpu_model: str | None = None
    gpus_per_node: int | None = None
    gpu_memory_gib: int | None = None
    nvlink: bool | None = None
    vcpu: int | None = None
    memory_gib: float | None = None
    rdma_kind: str | None = None
    rdma_nics: int | None = None
    rdma_gbps: float | None = None
    eri_quantity: int | None = None
    network_gbps: float | None = None
    max_mtu: int | None = None
    source: str | None = None
    source_read: date | None = None
    # Where this pool's GPU stack comes from (NodePool.gpu_stack) and what that path does.
    gpu_stack: str = "install"
    gpu_stack_path: str = ""


class PoolCost(_Out):
    pool: str
    instance_type: str
    count: int
    billing: Literal["pay_as_you_go", "spot", "monthly"]
    # What one node costs per hour under the chosen billing, and on what that figure rests.
    per_node_per_hour: float | None
    basis: str
    pay_as_you_go_per_node_per_hour: float | None
    per_hour: float | None  # per_node_per_hour x count
    monthly_per_node: float | None = None
    months: int | None = None
    upfront: float | None = None  # monthly: paid when created, whatever the TTL
    price_region: str | None = None
    price_source: str | None = None
    price_read: date | None = None
    # "live" (gpuctl's price cache), "official list" or "third-party API pull" (the catalog's).
    price_kind: str | None = None
    # What the catalog figure covers beyond the instance, and the figure as its source stated it.
    price_includes: str | None = None
    price_as_stated: str | None = None
    per_hour_usd: float | None = None  # per_hour at the plan's exchange rate (CNY prices only)
    # Spot pools (toolkit/prices/spot.py): the saving when the spot price now and the pay-as-you-go
    # price are both known, and the interruption risk as the cloud reports it; null otherwise.
    saving_per_node_per_hour: float | None = None
    saving_per_hour: float | None = None
    saving_percent: float | None = Field(default=None, description="the saving in % of the pay-as-you-go price")
    saving_per_hour_usd: float | None = None
    interruption_rate: str | None = Field(
        default=None,
        description='spot: the interruption-rate band in the cloud\'s words, e.g. "0-3%"; never estimated')
    interruption_source: str | None = Field(
        default=None, description="where interruption_rate comes from and when it was read, or why there is none")
    interruption_read: date | None = None
    spot_stated_discounts: list[str] = Field(
        default_factory=list,
        description="spot: the discount as the cloud's own pages state it, each with its page; where two pages "
                    "disagree every one is listed. Statements, not prices")
    # Monthly against hourly, where one official list gives both: after this many hours in a month
    # the monthly price is the cheaper (monthly_per_node / pay-as-you-go per hour).
    monthly_break_even_hours: float | None = None


class Cost(_Out):
    currency: str | None
    pools: list[PoolCost]
    per_hour: float | None  # whole cluster, hourly billed pools; None when a price is unknown
    pay_as_you_go_per_hour: float | None  # the same cluster all pay-as-you-go, for comparison
    ttl: str
    ttl_hours: float
    for_ttl: float | None  # per_hour x ttl_hours + upfront
    upfront: float | None
    unknown_prices: list[str] = Field(default_factory=list)  # pools whose price the catalog lacks
    catalog_read: list[date] = Field(default_factory=list)
    # The same totals in USD at `exchange_rate` (with its date and source); null where the CNY one is.
    exchange_rate: ExchangeRate | None = None
    per_hour_usd: float | None = None
    pay_as_you_go_per_hour_usd: float | None = None
    for_ttl_usd: float | None = None
    upfront_usd: float | None = None
    # The system disks gpuctl creates, per hour, where a public per-GB table prices them (Tencent's CBS
    # overview), with per_hour_with_disks beside the instance total; null where a disk has no price.
    system_disks_per_hour: float | None = None
    system_disks_basis: str | None = None
    per_hour_with_disks: float | None = None
    # The rest of the bill (disks, public traffic and its price per GB), with sources: not in the totals.
    notes: list[str] = Field(default_factory=list)


class VolumeCost(_Out):
    """What one shared volume costs: a price per GiB stored, never a total (nothing has a size)."""

    volume: str
    kind: Literal["nas", "object"]
    storage_class: str | None  # the class gpuctl creates; None for an existing volume (it keeps its own)
    created: bool  # False: `existing`, referenced only; gpuctl neither creates nor bills it
    keep_on_down: bool
    basis: str
    list_price: str | None = None  # as the page states it: "0.12 CNY/GB-month", or "unknown"
    price_per_gib_month: float | None = None
    currency: str | None = None
    price_region: str | None = None
    price_source: str | None = None
    price_read: date | None = None
    billing: str | None = None
    internal_traffic_free: bool | None = None
    example_per_tib_month: float | None = Field(
        default=None,
        description="EXAMPLE, not a forecast: one month of 1 TiB stored at price_per_gib_month (x 1024); "
        "the real bill follows what is stored",
    )
    example_per_tib_month_usd: float | None = Field(
        default=None, description="example_per_tib_month in USD (a CNY price at the plan's cost.exchange_rate)"
    )


class Plan(_Out):
    cluster: str
    provider: str
    region: str | None
    zone: str | None
    fabric: str
    mtu: int
    nodes: int
    gpus: int | None  # None when a pool's GPU count is unknown
    # False: gpuctl cannot create this provider's resources yet (`resources` is empty, `up` refuses).
    drivable: bool
    resources: list[PlannedResource]
    hardware: list[NodeHardware]
    cost: Cost
    # The shared volumes' prices (not in cost's totals: they bill what is stored). Left out of the
    # JSON when the spec has none, so plans without storage read as they always did.
    storage: list[VolumeCost] = Field(default_factory=list)
    warnings: list[str]

    @model_serializer(mode="wrap")
    def _without_empty_storage(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        data: dict[str, object] = handler(self)
        if not self.storage:
            data.pop("storage", None)
        return data


def build_plan(spec: ClusterSpec, check: CheckResult, prices: PriceCache | None = None,
               now: datetime | None = None, rate: ExchangeRate | None = None) -> Plan:
    """`prices` (with `now`, to tell an old price) puts live prices before the catalog's; `rate`
    (default: the user's, else the dated default of toolkit/prices/currency.py) adds USD beside CNY."""
    provider = get_provider(spec.provider)
    live = LivePrices(spec, prices, now) if prices is not None and now is not None else None
    rate = rate or current_rate()
    hardware = [_hardware(pool, check.rows.get(pool.name)).model_copy(update={
        "gpu_stack": pool.gpu_stack, "gpu_stack_path": gpu_stack_path(pool, spec.software, lab=not provider.paid)})
        for pool in spec.node_pools]
    gpu_counts = [h.gpus_per_node * h.count if h.gpus_per_node is not None else None for h in hardware]
    if not provider.paid:  # the lab: nodes replay GPU captures, they have no GPU
        gpus: int | None = 0
    else:
        gpus = None if any(c is None for c in gpu_counts) else sum(c for c in gpu_counts if c is not None)
    return Plan(
        cluster=spec.name,
        provider=spec.provider,
        region=spec.region,
        zone=spec.zone,
        fabric=spec.network.fabric,
        mtu=spec.network.mtu,
        nodes=spec.node_count,
        gpus=gpus,
        drivable=provider.drivable,
        # Nothing is listed for a provider gpuctl cannot drive: `up` would create none of it.
        resources=provider.planned_resources(spec, check) if provider.drivable else [],
        hardware=hardware,
        cost=_in_usd(_cost(spec, provider, check, live), rate),
        storage=[_volume_cost(spec, provider, v, rate) for v in spec.storage],
        warnings=check.warnings + _old_price_warnings(spec, prices, now),
    )


def gpu_stack_path(pool: NodePool, software: Software, *, lab: bool) -> str:
    """What configure does for the pool's GPU stack, in words (the roles: nvidia_driver's
    preinstalled.yml, cuda's and nccl's find tasks)."""
    if lab:
        if pool.gpu_stack == "image":
            from toolkit.providers.lab.state import STANDIN_IMAGE
            return ("the image's: lab nodes carry a stand-in of an image with driver "
                    f"{STANDIN_IMAGE.driver}, CUDA {STANDIN_IMAGE.cuda}, NCCL {STANDIN_IMAGE.nccl} (no GPU); "
                    "configure finds and keeps it, installs nothing")
        return "none: a lab node has no GPU; the driver, CUDA and NCCL roles skip it"
    if pool.gpu_stack == "image":
        return (f"the image's ({pool.image}): no driver installed, the image's driver, CUDA and NCCL kept and "
                f"reported; CUDA {software.cuda} / NCCL {software.nccl} installed only where the image has none; "
                "a node with no loaded driver is refused")
    return (f"installed by configure: driver {software.driver}, CUDA {software.cuda}, NCCL {software.nccl} from "
            f"NVIDIA's repositories; what the image already has is kept only if it is that version")


def _hardware(pool: NodePool, row: InstanceType | None) -> NodeHardware:
    hw = NodeHardware(pool=pool.name, instance_type=pool.instance_type, count=pool.count)
    if row is None:
        return hw
    update: dict[str, object] = {
        "vcpu": row.vcpu,
        "memory_gib": row.memory_gib,
        "network_gbps": row.network_gbps,
        "max_mtu": row.max_mtu,
        "source": str(row.source.url),
        "source_read": row.source.read,
    }
    if row.gpu is not None:
        update |= {
            "gpu_model": row.gpu.model,
            "gpus_per_node": row.gpu.count,
            "gpu_memory_gib": row.gpu.memory_gib,
            "nvlink": row.gpu.nvlink,
        }
    if row.rdma is not None:
        update |= {
            "rdma_kind": row.rdma.kind,
            "rdma_nics": row.rdma.nics,
            "rdma_gbps": row.rdma.gbps,
            "eri_quantity": row.rdma.eri_quantity,
        }
    return hw.model_copy(update=update)


class LivePrices:
    """The cache's entries for one spec: its provider, region and zone, in the catalog's currency."""

    def __init__(self, spec: ClusterSpec, cache: PriceCache, now: datetime) -> None:
        self.spec, self.cache, self.now = spec, cache, now
        self.currency = load_catalog(spec.provider).currency if spec.provider in ("alicloud", "tencentcloud") else None

    def find(self, instance_type: str, billing: str) -> PriceEntry | None:
        entry = self.cache.find(self.spec.provider, self.spec.region, self.spec.zone, instance_type, billing)
        # A price in another currency (Alibaba's international site answers in USD) is not mixed in.
        return entry if entry is not None and entry.currency == self.currency else None


def _old_price_warnings(spec: ClusterSpec, prices: PriceCache | None, now: datetime | None) -> list[str]:
    if prices is None or now is None:
        return []
    live = LivePrices(spec, prices, now)
    found = {e.key(): e for pool in spec.node_pools for billing in ("pay_as_you_go", "spot")
             if (e := live.find(pool.instance_type, billing)) is not None and e.is_old(now)}
    return [f"cost: the live price of {e.instance_type} ({e.billing}) is old: {e.describe(now)}; refresh it: "
            + hints.command("prices", "refresh", "--provider", e.provider, "--region", e.region)
            for _, e in sorted(found.items())]


def _pool_cost(provider: Provider, pool: NodePool, row: InstanceType | None,
               live: LivePrices | None = None, region: str | None = None) -> PoolCost:
    price = row.price_in(region) if row is not None else None
    # Another region's figure is no price for this one, and the basis says whose it was.
    elsewhere = row.price if row is not None and price is None else None
    payg = price.pay_as_you_go_per_hour if price else None
    payg_live = live.find(pool.instance_type, "pay_as_you_go") if live and provider.paid else None
    spot_live = live.find(pool.instance_type, "spot") if live and provider.paid else None
    if payg_live is not None:
        payg = payg_live.value
    billing = pool.billing
    monthly = price.monthly if price else None
    per_node: float | None
    upfront: float | None = None
    if not provider.paid:
        per_node, basis, payg = 0.0, provider.free_basis, 0.0
    elif billing.mode == "pay_as_you_go":
        per_node = payg
        basis = ("pay-as-you-go price (live)" if payg_live is not None
                 else f"pay-as-you-go price ({price.kind})" if price is not None else "pay-as-you-go price")
    elif billing.mode == "spot" and spot_live is not None:
        ceiling = billing.spot_max_price_per_hour
        if ceiling is not None and ceiling < spot_live.value:
            per_node, basis = ceiling, "spot: your ceiling is below the price now, so nodes may not start or stay"
        else:
            per_node, basis = spot_live.value, "spot: the price now (it moves; capped at the pay-as-you-go price)"
    elif billing.mode == "spot":
        if billing.spot_max_price_per_hour is not None:
            per_node, basis = billing.spot_max_price_per_hour, "spot: your ceiling (actual price is at most this)"
        else:
            kind = "live" if payg_live is not None else price.kind if price is not None else None
            per_node, basis = payg, ("spot without a ceiling: at most the pay-as-you-go price"
                                     + (f" ({kind})" if kind else ""))
    else:
        per_node, basis = 0.0, "monthly: paid up front"
        upfront = monthly * pool.count * (billing.months or 1) if monthly is not None else None
    if per_node is None and row is not None and row.no_price is not None and payg_live is None:
        basis += f"; {row.no_price}"
    if per_node is None and elsewhere is not None and payg_live is None:
        basis += (f"; no price for {region}: the catalog's figure is a {elsewhere.kind} for {elsewhere.region}, "
                  "not for this region")
    spot: dict[str, object] = {}
    if billing.mode == "spot" and provider.paid:
        # Saved against a live or an official list price only: a third-party figure (another account's
        # discounted price, at its date) beside the spot price now would mix two kinds silently.
        comparable = payg if payg_live is not None or (price is not None and price.kind == "official list") else None
        saved = saving(spot_live.value if spot_live else None, comparable)
        reported = risk(provider.name, spot_live, live.now if live else None)
        spot = {"interruption_rate": reported.rate, "interruption_source": reported.source,
                "interruption_read": reported.read, "spot_stated_discounts": stated_discounts(provider.name)}
        if saved is not None:
            spot |= {"saving_per_node_per_hour": saved.per_node_per_hour, "saving_percent": saved.percent,
                     "saving_per_hour": _mul(saved.per_node_per_hour, pool.count)}
    if (price is not None and price.kind == "official list" and price.monthly is not None
            and price.pay_as_you_go_per_hour):
        spot["monthly_break_even_hours"] = round(price.monthly / price.pay_as_you_go_per_hour, 1)
    return PoolCost(
        pool=pool.name,
        instance_type=pool.instance_type,
        count=pool.count,
        billing=billing.mode,
        per_node_per_hour=per_node,
        basis=basis,
        pay_as_you_go_per_node_per_hour=payg,
        per_hour=_mul(per_node, pool.count),
        monthly_per_node=monthly,
        months=billing.months,
        upfront=upfront,
        **_price_origin(price, spot_live if billing.mode == "spot" and spot_live else payg_live, live),
        **spot,
    )


def _price_origin(price: Price | None, entry: PriceEntry | None, live: LivePrices | None) -> dict[str, object]:
    """price_region/source/read: the live entry's when one was used, else the catalog's."""
    if entry is not None and live is not None:
        where = f"{entry.region} {entry.zone}" if entry.zone else entry.region
        return {"price_region": where, "price_source": entry.describe(live.now), "price_read": entry.read_at.date(),
                "price_kind": "live"}
    if price is None:
        return {"price_region": None, "price_source": None, "price_read": None}
    return {"price_region": price.region, "price_source": str(price.source.url), "price_read": price.source.read,
            "price_kind": price.kind, "price_includes": price.includes, "price_as_stated": price.as_stated}


def _cost(spec: ClusterSpec, provider: Provider, check: CheckResult, live: LivePrices | None = None) -> Cost:
    pools = [_pool_cost(provider, pool, check.rows.get(pool.name), live, spec.region) for pool in spec.node_pools]
    unknown = [p.pool for p in pools if p.per_hour is None or (p.billing == "monthly" and p.upfront is None)]
    hourly = _sum([p.per_hour for p in pools])
    upfront = (
        _sum([p.upfront for p in pools if p.billing == "monthly"])
        if any(p.billing == "monthly" for p in pools)
        else 0.0
    )
    ttl_hours = spec.lifecycle.ttl_delta.total_seconds() / 3600
    for_ttl = None if hourly is None or upfront is None else _round(hourly * ttl_hours + upfront)
    payg_total = _sum([_mul(p.pay_as_you_go_per_node_per_hour, p.count) for p in pools])
    if not provider.paid:
        currency: str | None = None
        catalog_read: list[date] = []
    else:
        currency = load_catalog(spec.provider).currency
        catalog_read = sorted(
            {row.source.read for row in check.rows.values()}
            | {row.price.source.read for row in check.rows.values() if row.price}
        )
    disks_per_hour, disks_basis = _system_disks(spec, provider)
    return Cost(
        currency=currency,
        system_disks_per_hour=disks_per_hour,
        system_disks_basis=disks_basis,
        per_hour_with_disks=_sum([hourly, disks_per_hour]) if hourly is not None else None,
        pools=pools,
        per_hour=hourly,
        pay_as_you_go_per_hour=payg_total,
        ttl=format_duration(spec.lifecycle.ttl_delta),
        ttl_hours=round(ttl_hours, 2),
        for_ttl=for_ttl,
        upfront=upfront if upfront else (None if upfront is None else 0.0),
        unknown_prices=unknown,
        catalog_read=catalog_read,
        # What a catalog figure in use covers beyond the instance (a live price replaces it, and says its own).
        notes=bill_notes(spec, {p.pool: p.price_includes for p in pools}) if provider.paid else [],
    )


def _system_disks(spec: ClusterSpec, provider: Provider) -> tuple[float | None, str | None]:
    """The system disks per hour and how that was reached, where Tencent's CBS table prices every pool's
    disk; (None, why) where it does not; (None, None) for the lab and Alibaba (no table: the note says so)."""
    if not provider.paid or spec.provider != "tencentcloud":
        return None, None
    total, parts = 0.0, []
    for pool in spec.node_pools:
        if pool.billing.mode == "monthly":
            return None, (f"pool {pool.name}: a monthly pool's disks are billed at the monthly (包年包月) rates, "
                          "which are not priced here")
        disk_type = system_disk_type(pool)
        if disk_type is None:
            return None, (f"pool {pool.name}: the spec names no disk type, so Tencent picks one in stock at "
                          "creation: no price")
        price = tencent_disk_price(spec.region, disk_type)
        if price is None:
            return None, f"pool {pool.name}: Tencent's CBS price table has no {disk_type} price for {spec.region}"
        hourly = pool.count * pool.system_disk.size_gb * price.per_gb_hour
        total += hourly
        parts.append(f"{pool.name}: {pool.count} x {pool.system_disk.size_gb} GB {disk_type} x "
                     f"{price.per_gb_hour} CNY/GB-h = {hourly:.4f}")
    return round(total, 4), (f"{'; '.join(parts)} (Tencent CBS 价格总览 按量计费, official list, read "
                             f"{TENCENT_DISK_PRICE_READ}: {TENCENT_DISK_PRICE_SOURCE})")


def _volume_cost(spec: ClusterSpec, provider: Provider, volume: StorageVolume, rate: ExchangeRate) -> VolumeCost:
    common = VolumeCost(volume=volume.name, kind=volume.kind, storage_class=created_class(spec.provider, volume),
                        created=volume.existing is None, keep_on_down=volume.keep_on_down, basis="")
    if volume.existing is not None:
        return common.model_copy(update={"basis": "not created by gpuctl: referenced only, it adds nothing to "
                                                  "this cluster's bill (its owner pays for it)"})
    if not provider.paid:  # the lab's S3-compatible store runs on this machine
        return common.model_copy(update={"basis": f"{provider.free_basis}; its object store costs nothing",
                                         "price_per_gib_month": 0.0, "example_per_tib_month": 0.0})
    row = volume_price(spec.provider, volume)
    if row is None:  # a class the price file does not list: a gap in gpuctl's data, said as unknown
        return common.model_copy(update={"basis": "no public price in gpuctl's data for this class"})
    per_gib, per_tib = row.per_gib_month(), row.per_tib_month()
    basis = "pay-as-you-go list price per GiB stored" if per_gib is not None else (
        "unknown: no public page with this price was found; see price_source")
    return common.model_copy(update={
        "basis": basis,
        "list_price": row.list_price(),
        "price_per_gib_month": None if per_gib is None else round(per_gib, 4),
        "currency": row.currency,
        "price_region": row.region,
        "price_source": str(row.source.url),
        "price_read": row.source.read,
        "billing": row.billing,
        "internal_traffic_free": row.internal_traffic_free,
        "example_per_tib_month": None if per_tib is None else _round(per_tib),
        "example_per_tib_month_usd": (None if per_tib is None else _round(per_tib) if row.currency == "USD"
                                      else rate.usd(per_tib)),
    })


def _in_usd(cost: Cost, rate: ExchangeRate) -> Cost:
    """USD beside CNY, at a rate whose date and source go with it; nothing for the lab or a USD catalog."""
    if cost.currency != "CNY":
        return cost
    pools = [p.model_copy(update={"per_hour_usd": rate.usd(p.per_hour),
                                  "saving_per_hour_usd": rate.usd(p.saving_per_hour)}) for p in cost.pools]
    return cost.model_copy(update={
        "pools": pools, "exchange_rate": rate, "per_hour_usd": rate.usd(cost.per_hour),
        "pay_as_you_go_per_hour_usd": rate.usd(cost.pay_as_you_go_per_hour),
        "for_ttl_usd": rate.usd(cost.for_ttl), "upfront_usd": rate.usd(cost.upfront),
    })


def _mul(value: float | None, count: int) -> float | None:
    return None if value is None else _round(value * count)


def _sum(values: list[float | None]) -> float | None:
    if any(v is None for v in values):
        return None
    return _round(sum(v for v in values if v is not None))


def _round(value: float) -> float:
    return round(value, 2)
