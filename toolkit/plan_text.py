"""The human form of a plan: short sections, unknowns said as unknown, money on its own lines."""

from __future__ import annotations

from toolkit import hints
from toolkit.plan import Cost, NodeHardware, Plan, PoolCost, VolumeCost


def render_plan(plan: Plan) -> str:
    from toolkit.cost_confirm import confirmation_reason, threshold, ttl_line

    lines: list[str] = []
    where = f"{plan.region}/{plan.zone}" if plan.region else "this machine"
    gpus = "unknown" if plan.gpus is None else f"{plan.gpus:,}"
    lines.append(
        f"Cluster {plan.cluster}: {plan.provider} in {where}, {plan.nodes:,} node(s), {gpus} GPU(s), "
        f"fabric {plan.fabric}, MTU {plan.mtu}"
    )
    # The money first: what the cluster bills if nobody removes it, and whether `up` will ask.
    lines.append(ttl_line(plan))
    reason = confirmation_reason(plan, threshold())
    if reason is not None:
        lines.append(f"  up asks before creating it: {reason}; `up --yes` confirms in advance")
    lines.append("")
    lines.append("Will create:")
    if not plan.drivable:
        up = hints.command("up")
        lines.append(f"  nothing yet: gpuctl cannot create {plan.provider} resources yet (`{up}` refuses)")
    for res in plan.resources:
        count = f"{res.count} x " if res.count != 1 else ""
        detail = f"  ({res.detail})" if res.detail else ""
        lines.append(f"  + {count}{res.type}  {res.name}{detail}")
    lines.append("")
    lines.append("Each node:")
    for hw in plan.hardware:
        lines.append(f"  {hw.pool}: {hw.count} x {hw.instance_type}")
        lines.extend(f"    {line}" for line in _hardware_lines(hw))
        lines.append(f"    GPU stack: {hw.gpu_stack_path}")
    lines.append("")
    lines.extend(_cost_lines(plan.cost, plan))
    if plan.storage:
        lines.append("")
        lines.extend(_storage_lines(plan.storage))
    if plan.warnings:
        lines.append("")
        lines.append("Warnings:")
        lines.extend(f"  ! {w}" for w in plan.warnings)
    return "\n".join(lines) + "\n"


def _v(value: object, unit: str = "") -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "unknown" if value is None else f"{value}{unit}"


def _hardware_lines(hw: NodeHardware) -> list[str]:
    if hw.source is None:
        return (
            ["lab node: no GPU; replays a real GPU host's captures"]
            if hw.instance_type == "lab"
            else ["not in the catalog"]
        )
    gpu = f"{_v(hw.gpus_per_node)} x {_v(hw.gpu_model)}, {_v(hw.gpu_memory_gib, ' GiB')} each, NVLink {_v(hw.nvlink)}"
    rdma = "none"
    if hw.rdma_kind is not None:
        rdma = f"{hw.rdma_kind}, {_v(hw.rdma_nics)} NIC(s), {_v(hw.rdma_gbps, ' Gbit/s')}"
        if hw.rdma_kind == "erdma":
            rdma += f", ERIs {_v(hw.eri_quantity)}"
    return [
        f"GPU: {gpu}",
        f"CPU/RAM: {_v(hw.vcpu)} vCPU, {_v(hw.memory_gib, ' GiB')}",
        f"RDMA: {rdma}; VPC {_v(hw.network_gbps, ' Gbit/s')}, max MTU {_v(hw.max_mtu)}",
        f"source: {hw.source} (read {hw.source_read})",
    ]


def _money(value: float | None, currency: str | None) -> str:
    if value is None:
        return "unknown"
    return f"{value:,.2f} {currency}" if currency else f"{value:,.2f}"


def _usd(value: float | None) -> str:
    return "" if value is None else f" (${value:,.2f})"


def _cost_lines(cost: Cost, plan: Plan) -> list[str]:
    cur = cost.currency
    lines = ["Cost:"]
    for p in cost.pools:
        lines.append(
            f"  {p.pool}: {p.count} x {_money(p.per_node_per_hour, cur)}/h = {_money(p.per_hour, cur)}/h"
            f"{_usd(p.per_hour_usd)}  [{p.basis}]"
        )
        if p.billing == "monthly":
            lines.append(f"    up front: {_money(p.upfront, cur)}{_usd(cost.upfront_usd)} for {p.months} month(s)")
        if p.monthly_break_even_hours is not None:
            lines.append(f"    monthly ({_money(p.monthly_per_node, cur)} per node) is the cheaper from "
                         f"{p.monthly_break_even_hours:g} h in a month on (the same list's hourly price)")
        if p.price_region:
            kind = p.price_kind or "price"
            lines.append(f"    {kind} for region {p.price_region}, read {p.price_read}: {p.price_source}")
            if p.price_as_stated:
                lines.append(f"    as the source states it: {p.price_as_stated}")
            if p.price_includes:
                lines.append(f"    the figure includes {p.price_includes}")
        if p.billing == "spot" and cur is not None:  # a paid cloud's spot pool
            lines.extend(f"    {line}" for line in _spot_lines(p, plan))
    lines.append(
        f"  per hour: {_money(cost.per_hour, cur)}{_usd(cost.per_hour_usd)}  "
        f"(all pay-as-you-go: {_money(cost.pay_as_you_go_per_hour, cur)}{_usd(cost.pay_as_you_go_per_hour_usd)})"
    )
    if cost.system_disks_basis is not None:
        lines.append(f"  system disks: {_money(cost.system_disks_per_hour, cur)}/h; with them "
                     f"{_money(cost.per_hour_with_disks, cur)}/h  [{cost.system_disks_basis}]")
    lines.append(f"  for the TTL of {cost.ttl}: {_money(cost.for_ttl, cur)}{_usd(cost.for_ttl_usd)}")
    if cost.exchange_rate is not None:
        lines.append(f"  USD at {cost.exchange_rate.describe()}; set your own with GPUCTL_CNY_PER_USD")
    if cost.unknown_prices:
        lines.append(
            f"  the catalog has no price for pool(s) {', '.join(cost.unknown_prices)}: totals are unknown, not zero"
        )
        if plan.region:
            refresh = hints.command("prices", "refresh", "--provider", plan.provider, "--region", plan.region)
            lines.append(f"  get the live price (needs the cloud's credentials): {refresh}")
    if cost.catalog_read:
        lines.append(
            f"  catalog read on {', '.join(str(d) for d in cost.catalog_read)}; "
            "prices change, check before you rely on them"
        )
    if cost.notes:
        lines.append("  not in the totals:")
        lines.extend(f"    - {note}" for note in cost.notes)
    return lines


def _spot_lines(p: PoolCost, plan: Plan) -> list[str]:
    """The saving against pay-as-you-go (when both prices are known) and the interruption risk."""
    cur = plan.cost.currency
    lines = []
    if p.saving_per_node_per_hour is not None:
        lines.append(f"saving against pay-as-you-go: {_money(p.saving_per_node_per_hour, cur)}/h per node "
                     f"({p.saving_percent:g}%), {_money(p.saving_per_hour, cur)}/h{_usd(p.saving_per_hour_usd)} "
                     "for the pool at the spot price now")
    else:
        lines.append("saving against pay-as-you-go: unknown until both the spot price now and the pay-as-you-go "
                     "price are known")
    if p.interruption_rate is not None:
        lines.append(f"interruption risk: {p.interruption_rate} ({p.interruption_source})")
    elif p.interruption_source is not None:
        lines.append(f"interruption risk: {p.interruption_source}")
    elif plan.region:
        refresh = hints.command("prices", "refresh", "--provider", plan.provider, "--region", plan.region)
        lines.append(f"interruption risk: not read yet; the cloud reports it per zone: {refresh}")
    else:
        lines.append("interruption risk: unknown")
    lines.extend(f"the cloud states: {statement}" for statement in p.spot_stated_discounts)
    return lines


def _storage_lines(volumes: list[VolumeCost]) -> list[str]:
    """Per volume: its price per GiB-month and, labelled as an example, 1 TiB for a month."""
    lines = ["Storage (billed by what is stored, so not in the totals above):"]
    for v in volumes:
        what = f"{v.kind} {v.storage_class}" if v.storage_class else v.kind
        kept = "kept by down" if v.keep_on_down else "deleted by down"
        if not v.created:
            lines.append(f"  {v.volume}: {v.kind}, existing: {v.basis}")
            continue
        if v.price_source is None:  # the lab, or a class gpuctl has no data for
            lines.append(f"  {v.volume}: {what}, {kept}: {v.basis}")
            continue
        if v.price_per_gib_month is None:
            lines.append(f"  {v.volume}: {what}, {kept}: price unknown (no public page found); "
                         f"look at {v.price_source}")
            continue
        as_listed = "" if (v.list_price or "").endswith("/GiB-month") else f" (the page: {v.list_price})"
        lines.append(f"  {v.volume}: {what}, {kept}: {v.price_per_gib_month:g} {v.currency}/GiB-month{as_listed}")
        lines.append(f"    example, not a forecast: 1 TiB stored for a month = "
                     f"{_money(v.example_per_tib_month, v.currency)}"
                     f"{_usd(v.example_per_tib_month_usd) if v.currency != 'USD' else ''}")
        if v.internal_traffic_free:
            lines.append("    traffic from the cluster over the internal endpoint: free")
        lines.append(f"    price for {v.price_region}, read {v.price_read}: {v.price_source}")
    return lines
