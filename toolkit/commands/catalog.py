"""`gpuctl catalog [PROVIDER] [--fabric F] [--json]`: the instance types gpuctl knows, with sources."""

from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("provider", nargs="?", choices=["alicloud", "tencentcloud"], help="one cloud (default: both)")
    parser.add_argument("--fabric", choices=["erdma", "roce", "ib"], help="only types with this RDMA fabric")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from toolkit.catalog.store import load_catalog

    providers = [args.provider] if args.provider else ["alicloud", "tencentcloud"]
    rows = []
    for provider in providers:
        catalog = load_catalog(provider)
        for row in catalog.instance_types:
            if args.fabric and (row.rdma is None or row.rdma.kind != args.fabric):
                continue
            rows.append((provider, catalog.currency, row))
    if args.json:
        print(json.dumps([{"provider": p, **r.model_dump(mode="json")} for p, _, r in rows], indent=2))
        return 0
    header = f"{'provider':<13}{'instance type':<32}{'GPUs':<26}{'RDMA':<22}{'price/h':>14}  source (read)"
    print(header)
    for provider, currency, row in rows:
        gpu = f"{row.gpu.count} x {row.gpu.model}" if row.gpu else "-"
        rdma = "-"
        if row.rdma:
            rdma = row.rdma.kind + (f" {row.rdma.gbps:g}G" if row.rdma.gbps else "")
            if row.rdma.eri_quantity:
                rdma += f" ERI x{row.rdma.eri_quantity}"
        price = "unknown"
        if row.price and row.price.pay_as_you_go_per_hour is not None:
            price = f"{row.price.pay_as_you_go_per_hour:,.2f} {currency}"
        print(
            f"{provider:<13}{row.name:<32}{gpu[:25]:<26}{rdma[:21]:<22}{price:>14}  "
            f"{row.source.url} ({row.source.read})"
        )
    return 0
