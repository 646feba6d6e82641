"""`gpuctl plan`: what a spec will create, the hardware each node gets, and what it costs.

The plan is computed from the spec and the catalog only; nothing is contacted. Its JSON form is
deterministic (no clock, no absolute paths) so it can be kept as a golden file and diffed in review.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.catalog.checks import CheckResult
from toolkit.catalog.models import InstanceType
from toolkit.catalog.store import load_catalog
from toolkit.providers.base import PlannedResource as PlannedResource  # the plan's own type, defined beside Provider
from toolkit.providers.base import Provider
from toolkit.providers.registry import get_provider
from toolkit.spec.duration import format_duration
from toolkit.spec.models import ClusterSpec, NodePool

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
    warnings: list[str]


def build_plan(spec: ClusterSpec, check: CheckResult) -> Plan:
    provider = get_provider(spec.provider)
    hardware = [_hardware(pool, check.rows.get(pool.name)) for pool in spec.node_pools]
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
        cost=_cost(spec, provider, check),
        warnings=check.warnings,
    )


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


def _pool_cost(provider: Provider, pool: NodePool, row: InstanceType | None) -> PoolCost:
    price = row.price if row is not None else None
    payg = price.pay_as_you_go_per_hour if price else None
    billing = pool.billing
    monthly = price.monthly if price else None
    per_node: float | None
    upfront: float | None = None
    if not provider.paid:
        per_node, basis, payg = 0.0, provider.free_basis, 0.0
    elif billing.mode == "pay_as_you_go":
        per_node, basis = payg, "pay-as-you-go list price"
    elif billing.mode == "spot":
        if billing.spot_max_price_per_hour is not None:
            per_node, basis = billing.spot_max_price_per_hour, "spot: your ceiling (actual price is at most this)"
        else:
            per_node, basis = payg, "spot without a ceiling: at most the pay-as-you-go price"
    else:
        per_node, basis = 0.0, "monthly: paid up front"
        upfront = monthly * pool.count * (billing.months or 1) if monthly is not None else None
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
        price_region=price.region if price else None,
        price_source=str(price.source.url) if price else None,
        price_read=price.source.read if price else None,
    )


def _cost(spec: ClusterSpec, provider: Provider, check: CheckResult) -> Cost:
    pools = [_pool_cost(provider, pool, check.rows.get(pool.name)) for pool in spec.node_pools]
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
    return Cost(
        currency=currency,
        pools=pools,
        per_hour=hourly,
        pay_as_you_go_per_hour=payg_total,
        ttl=format_duration(spec.lifecycle.ttl_delta),
        ttl_hours=round(ttl_hours, 2),
        for_ttl=for_ttl,
        upfront=upfront if upfront else (None if upfront is None else 0.0),
        unknown_prices=unknown,
        catalog_read=catalog_read,
    )


def _mul(value: float | None, count: int) -> float | None:
    return None if value is None else _round(value * count)


def _sum(values: list[float | None]) -> float | None:
    if any(v is None for v in values):
        return None
    return _round(sum(v for v in values if v is not None))


def _round(value: float) -> float:
    return round(value, 2)
