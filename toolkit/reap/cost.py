"""Cost so far of a cluster reap found: hours since creation (up to its expiry) x its price per hour.

With the cluster's spec (given on the command line), exactly what `gpuctl status` says
(`commands.status.cost_so_far`: the plan's pricing, live cache included). Without one, from what
reap knows: the instance types the cloud or the stack lists, each at the catalog's pay-as-you-go
list price (a spot node costs at most that; the basis says so). Unknown stays unknown, never 0.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from toolkit.reap.classify import Cluster

if TYPE_CHECKING:
    from toolkit.commands._reports import CostSoFar
    from toolkit.spec.models import ClusterSpec


def hours_between(created: datetime | None, expires: datetime | None, now: datetime) -> float | None:
    """Billed hours: creation to now, or to the expiry once past (the cloud's timed release ends it)."""
    if created is None:
        return None
    end = min(now, expires) if expires is not None else now
    return round(max(end - created, timedelta(0)).total_seconds() / 3600, 2)


def cluster_cost(cluster: Cluster, now: datetime, spec: ClusterSpec | None = None) -> CostSoFar:
    from toolkit.commands._reports import CostSoFar
    from toolkit.commands.status import cost_so_far

    if spec is not None:
        return cost_so_far(spec, True, cluster.created_at, cluster.expires_at, now)
    hours = hours_between(cluster.created_at, cluster.expires_at, now)
    if cluster.provider == "local":
        return CostSoFar(amount=0.0, currency=None, per_hour=0.0, hours=hours,
                         basis="local lab: runs on this machine, nothing is billed")
    types = Counter(cluster.instance_types)
    if cluster.provider not in ("alicloud", "tencentcloud") or not types:
        return CostSoFar(amount=None, currency=None, per_hour=None, hours=hours,
                         basis="unknown: no instance of it was listed (not asked, or none left)")
    from toolkit.catalog.store import load_catalog

    catalog = load_catalog(cluster.provider)
    prices: dict[str, float] = {}
    kinds: set[str] = set()
    for name in types:
        row = catalog.find(name)
        # Only a figure that stands for the cluster's region (a pulled one is one region's price).
        price = row.price_in(cluster.region) if row is not None else None
        if price is not None and price.pay_as_you_go_per_hour is not None:
            prices[name] = price.pay_as_you_go_per_hour
            kinds.add(price.kind)
    unpriced = sorted(set(types) - set(prices))
    if unpriced:
        return CostSoFar(amount=None, currency=catalog.currency, per_hour=None, hours=hours,
                         basis=f"unknown: the catalog has no price for {', '.join(unpriced)}"
                               + (f" in {cluster.region}" if cluster.region else ""))
    per_hour = round(sum(prices[name] * count for name, count in types.items()), 2)
    if hours is None:
        return CostSoFar(amount=None, currency=catalog.currency, per_hour=per_hour, hours=None,
                         basis="unknown: its creation time is unknown")
    parts = " + ".join(f"{count} x {name} at {prices[name]:,.2f}" for name, count in sorted(types.items()))
    basis = (f"{hours:.2f} h x {per_hour:,.2f} {catalog.currency}/h ({parts}; the catalog's pay-as-you-go "
             f"price ({', '.join(sorted(kinds))}), a spot node costs at most this)")
    if cluster.expires_at is not None and now > cluster.expires_at:
        basis += "; counted up to the expiry"
    return CostSoFar(amount=round(per_hour * hours, 2), currency=catalog.currency, per_hour=per_hour, hours=hours,
                     basis=basis)
