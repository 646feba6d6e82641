"""`gpuctl status SPEC [--json]`: the cluster's nodes and state, as the provider sees them, with
when it expires, each node's last configure result and what it has cost so far.

Expiry: the provider's own (Alibaba: the stack's expiresAt, the instances' release time), else the
creation time + lifecycle.ttl (the lab records its creation time in its state file). Last configure:
the converge record a successful run leaves per node (toolkit/configure/converge.py) and the last
run's result (`last-configure.json`, written by `gpuctl configure`). Cost so far: hours since
creation (up to the expiry) x the catalog's price per hour for each pool, as `gpuctl plan` prices
it; "unknown" when a price or the creation time is unknown, never 0.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from toolkit.commands._cluster_report import add_report_arguments, print_report

if TYPE_CHECKING:
    from toolkit.commands._reports import CostSoFar, NodeLastConfigure, StatusReport
    from toolkit.spec.models import ClusterSpec


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_report_arguments(parser, "docs/schemas/status.json")


def run(args: argparse.Namespace) -> int:
    return print_report(args, build_status, render_status)


def build_status(spec: ClusterSpec, raw: Mapping[str, object], now: datetime | None = None) -> StatusReport:
    """The status document from the provider's own status dict, the cluster directory and the catalog."""
    from toolkit.commands._reports import NodeStatus, StatusReport, utc_iso
    from toolkit.timestamps import parse_iso

    now = now or datetime.now(UTC)
    phase = raw.get("phase")
    if not isinstance(phase, str):
        phase = ("present" if raw.get("exists") else "absent") if "exists" in raw else "unknown"
    exists = phase != "absent"
    created = parse_iso(raw.get("created_at")) or (_lab_created_at(spec) if exists else None)
    expires = parse_iso(raw.get("expires_at"))
    if expires is None and created is not None:
        expires = created + spec.lifecycle.ttl_delta
    nodes = []
    listed = raw.get("nodes")
    for item in listed if isinstance(listed, list) and exists else []:
        fields: dict[str, Any] = dict(item) if isinstance(item, dict) else {"name": item}
        name = str(fields.pop("name", "?"))
        details = {str(k): None if v is None else str(v) for k, v in fields.items()}
        nodes.append(NodeStatus(name=name, details=details, last_configure=last_configure(spec.name, name)))
    return StatusReport(
        cluster=spec.name, provider=spec.provider, phase=phase, exists=exists,
        created_at=utc_iso(created) if created else None, expires_at=utc_iso(expires) if expires else None,
        expired=None if expires is None else now >= expires, ttl=spec.lifecycle.ttl, nodes=nodes,
        cost_so_far=cost_so_far(spec, exists, created, expires, now),
        provider_status={str(k): v for k, v in raw.items()},
    )


def _lab_created_at(spec: ClusterSpec) -> datetime | None:
    if spec.provider != "local":
        return None
    from toolkit.errors import GpuctlError
    from toolkit.providers.lab import state as lab_state
    from toolkit.timestamps import parse_iso

    try:
        state = lab_state.load(spec.name)
    except GpuctlError:
        return None
    return parse_iso(state.created_at) if state is not None else None


def last_configure(cluster: str, node: str) -> NodeLastConfigure:
    """verified / ok / failed at a time, or no record: from the node's converge record (written by
    a successful playbook run, dropped when a run starts on the node) and the last run's result."""
    from toolkit.commands._reports import NodeLastConfigure, utc_iso
    from toolkit.commands.configure import load_last_run
    from toolkit.configure import converge
    from toolkit.state import cluster_dir
    from toolkit.timestamps import parse_iso

    base = cluster_dir(cluster)
    last = load_last_run(cluster).get(node, {})
    last_at = parse_iso(last.get("at"))
    result: Literal["verified", "ok", "failed"]
    if converge.load_record(base, node) is not None:
        if last.get("result") == "verified" and last_at is not None:
            result, at = "verified", last_at
        else:
            at = datetime.fromtimestamp(converge.record_path(base, node).stat().st_mtime, UTC)
            result = "ok"
    elif last.get("result") == "failed" and last_at is not None:
        result, at = "failed", last_at
        reason = str(last.get("reason") or "")[:400] or None
        stamp = utc_iso(at)
        return NodeLastConfigure(result=result, at=stamp, reason=reason,
                                 text=f"failed at {stamp}" + (f": {reason}" if reason else ""))
    else:
        return NodeLastConfigure(result="no record", at=None, text="no record")
    stamp = utc_iso(at)
    return NodeLastConfigure(result=result, at=stamp, text=f"{result} at {stamp}")


def cost_so_far(spec: ClusterSpec, exists: bool, created: datetime | None, expires: datetime | None,
                now: datetime) -> CostSoFar:
    from toolkit.commands._reports import CostSoFar

    if not exists:
        return CostSoFar(amount=None, currency=None, per_hour=None, hours=None, basis="no cluster")
    if spec.provider == "local":
        hours = _hours(created, expires, now)
        return CostSoFar(amount=0.0, currency=None, per_hour=0.0, hours=hours,
                         basis="local lab: runs on this machine, nothing is billed")
    from toolkit.catalog.checks import check_spec
    from toolkit.errors import GpuctlError
    from toolkit.plan import build_plan

    try:
        cost = build_plan(spec, check_spec(spec)).cost
    except GpuctlError as error:
        return CostSoFar(amount=None, currency=None, per_hour=None, hours=_hours(created, expires, now),
                         basis=f"unknown: the catalog cannot price this spec ({error.message})")
    hours = _hours(created, expires, now)
    if cost.per_hour is None or (cost.upfront is None and any(p.billing == "monthly" for p in cost.pools)):
        types = sorted({p.instance_type for p in cost.pools if p.pool in cost.unknown_prices})
        return CostSoFar(amount=None, currency=cost.currency, per_hour=cost.per_hour, hours=hours,
                         basis=f"unknown: the catalog has no price for {', '.join(types) or 'a pool'}")
    if hours is None:
        return CostSoFar(amount=None, currency=cost.currency, per_hour=cost.per_hour, hours=None,
                         basis="unknown: the provider does not report when the cluster was created")
    upfront = cost.upfront or 0.0
    amount = round(cost.per_hour * hours + upfront, 2)
    bases = sorted({p.basis for p in cost.pools})
    basis = f"{hours:.2f} h x {cost.per_hour:,.2f} {cost.currency}/h" + (
        f" + {upfront:,.2f} {cost.currency} up front" if upfront else "") + f" ({'; '.join(bases)})"
    if expires is not None and now > expires:
        basis += "; counted up to the expiry, when the cloud released the nodes"
    return CostSoFar(amount=amount, currency=cost.currency, per_hour=cost.per_hour, hours=hours, basis=basis)


def _hours(created: datetime | None, expires: datetime | None, now: datetime) -> float | None:
    if created is None:
        return None
    end = min(now, expires) if expires is not None else now
    return round(max(end - created, timedelta(0)).total_seconds() / 3600, 2)


def render_status(report: StatusReport, now: datetime | None = None) -> str:
    from toolkit.timestamps import parse_iso

    now = now or datetime.now(UTC)
    lines = [f"cluster {report.cluster} ({report.provider}): {report.phase}"]
    if not report.exists:
        return "\n".join(lines) + "\n"
    created, expires = parse_iso(report.created_at), parse_iso(report.expires_at)
    lines.append(f"  created:      {_when(created, now)}")
    lines.append(f"  expires:      {_when(expires, now)} (lifecycle.ttl {report.ttl})")
    cost = report.cost_so_far
    if cost.amount is None:
        shown = f"unknown ({cost.basis.removeprefix('unknown: ')})"
    elif cost.currency is None:
        shown = f"none ({cost.basis})"
    else:
        shown = f"{cost.amount:,.2f} {cost.currency} ({cost.basis})"
    lines.append(f"  cost so far:  {shown}")
    for node in report.nodes:
        fields = "  ".join(f"{k}={v}" for k, v in node.details.items() if v is not None)
        lines.append(f"  {node.name}: {fields}".rstrip())
        lines.append(f"    last configure: {node.last_configure.text}")
    return "\n".join(lines) + "\n"


def _when(moment: datetime | None, now: datetime) -> str:
    from toolkit.progress import format_elapsed

    if moment is None:
        return "unknown"
    shown = moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    delta = (moment - now).total_seconds()
    return f"{shown} (in {format_elapsed(delta)})" if delta > 0 else f"{shown} ({format_elapsed(-delta)} ago)"
