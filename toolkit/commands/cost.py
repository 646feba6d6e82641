"""`gpuctl cost SPEC [--json]`: what the cluster has cost so far and what it will cost by its TTL.

Spent: `gpuctl status`'s figure (`commands.status.cost_so_far`): hours since the creation time the
provider reports, up to the expiry, x the plan's price per hour (+ upfront for monthly pools).
Projected: the plan's `cost.for_ttl`: per hour x lifecycle.ttl + upfront, the whole life the cloud's
timed release allows. Both from the same prices (the catalog's, with source and date), so
`remaining = projected - spent`. An unknown price stays unknown, never 0.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from toolkit.commands._cluster_report import add_report_arguments, print_report

if TYPE_CHECKING:
    from collections.abc import Mapping

    from toolkit.commands._reports import CostReport
    from toolkit.spec.models import ClusterSpec


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_report_arguments(parser, "docs/schemas/cost.json")


def run(args: argparse.Namespace) -> int:
    return print_report(args, build_cost, render_cost)


def build_cost(spec: ClusterSpec, raw: Mapping[str, object], now: datetime | None = None) -> CostReport:
    from toolkit.catalog.checks import check_spec
    from toolkit.commands._reports import CostReport
    from toolkit.commands.status import build_status
    from toolkit.errors import GpuctlError
    from toolkit.plan import build_plan

    now = now or datetime.now(UTC)
    status = build_status(spec, raw, now)
    spent = status.cost_so_far
    projected: float | None = None
    sources: list[str] = []
    ttl_hours = round(spec.lifecycle.ttl_delta.total_seconds() / 3600, 2)
    try:
        plan_cost = build_plan(spec, check_spec(spec)).cost
    except GpuctlError:
        plan_cost = None  # spent.basis already says why the catalog cannot price it
    if plan_cost is not None:
        projected = plan_cost.for_ttl
        ttl_hours = plan_cost.ttl_hours
        sources = [f"{p.pool}: {p.instance_type} x {p.count}, {p.basis}, {p.price_source or 'no price'}"
                   + (f" (read {p.price_read})" if p.price_read else "") for p in plan_cost.pools]
    remaining = None if projected is None or spent.amount is None else round(max(projected - spent.amount, 0.0), 2)
    return CostReport(
        cluster=spec.name, provider=spec.provider, exists=status.exists, created_at=status.created_at,
        expires_at=status.expires_at, ttl=spec.lifecycle.ttl, ttl_hours=ttl_hours,
        currency=plan_cost.currency if plan_cost is not None else spent.currency,
        per_hour=plan_cost.per_hour if plan_cost is not None else spent.per_hour,
        spent=spent, projected=projected, remaining=remaining, price_sources=sources,
    )


def render_cost(report: CostReport) -> str:
    def money(value: float | None) -> str:
        if value is None:
            return "unknown"
        return f"{value:,.2f} {report.currency}" if report.currency else f"{value:,.2f} (nothing is billed)"

    lines = [f"cluster {report.cluster} ({report.provider})"]
    if not report.exists:
        lines.append("  not running: nothing spent so far")
    else:
        lines.append(f"  created:    {report.created_at or 'unknown'}")
        lines.append(f"  expires:    {report.expires_at or 'unknown'} (lifecycle.ttl {report.ttl})")
        lines.append(f"  spent:      {money(report.spent.amount)} ({report.spent.basis})")
    lines.append(f"  per hour:   {money(report.per_hour)}")
    lines.append(f"  by the TTL: {money(report.projected)} ({report.ttl_hours:g} h)")
    if report.exists:
        lines.append(f"  remaining:  {money(report.remaining)}")
    lines += [f"  price: {source}" for source in report.price_sources]
    return "\n".join(lines) + "\n"
