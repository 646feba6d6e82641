"""`gpuctl catalog [PROVIDER] [--fabric F] [--link-layer L] [--json]`: the instance types gpuctl
knows, with sources.

`--fabric` takes the spec's words (`network.fabric`: erdma, rdma, tcp) and lists the types a spec
with that fabric is for: erdma, types with eRDMA interfaces (ERIs); rdma, types with RoCE or
InfiniBand NICs; tcp, types without RDMA. `--link-layer` tells RoCE (ethernet) from InfiniBand.
The old words `--fabric roce` and `--fabric ib` still work, with a warning naming the new ones.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Literal, get_args

from toolkit.vocabulary import FABRICS

if TYPE_CHECKING:
    from toolkit.catalog.models import InstanceType

LinkLayer = Literal["ethernet", "infiniband"]
LINK_LAYERS: tuple[str, ...] = get_args(LinkLayer)
# Words `--fabric` took before it spoke the spec's vocabulary -> (fabric, link layer).
DEPRECATED_FABRICS: dict[str, tuple[str, str]] = {"roce": ("rdma", "ethernet"), "ib": ("rdma", "infiniband")}
# The catalog's RDMA kinds (toolkit/catalog/data) -> the link layer their NICs run on.
_LINK_LAYER_OF_KIND: dict[str, LinkLayer] = {"erdma": "ethernet", "roce": "ethernet", "ib": "infiniband"}


def _fabric_word(text: str) -> str:
    if text in FABRICS or text in DEPRECATED_FABRICS:
        return text
    raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(FABRICS)})")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("provider", nargs="?", choices=["alicloud", "tencentcloud"], help="one cloud (default: both)")
    parser.add_argument(
        "--fabric", type=_fabric_word, metavar="{" + ",".join(FABRICS) + "}",
        help="only types for this network.fabric: erdma (eRDMA ERIs), rdma (RoCE or InfiniBand NICs), "
        "tcp (no RDMA)",
    )
    parser.add_argument("--link-layer", choices=LINK_LAYERS,
                        help="only types whose RDMA NICs run on this link layer (ethernet: eRDMA and RoCE)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def fabric_of(row: InstanceType) -> str:
    """The network.fabric a spec uses for this type: erdma, rdma or tcp (the checks' rule)."""
    if row.rdma is None or (row.rdma.kind == "erdma" and row.rdma.eri_quantity == 0):
        return "tcp"
    return "erdma" if row.rdma.kind == "erdma" else "rdma"


def link_layer_of(row: InstanceType) -> str | None:
    return _LINK_LAYER_OF_KIND.get(row.rdma.kind) if row.rdma is not None and fabric_of(row) != "tcp" else None


def run(args: argparse.Namespace) -> int:
    from toolkit.catalog.store import load_catalog

    fabric, link_layer = args.fabric, args.link_layer
    if fabric in DEPRECATED_FABRICS:
        fabric, implied = DEPRECATED_FABRICS[fabric]
        if link_layer not in (None, implied):
            from toolkit.errors import UsageError

            raise UsageError(f"--fabric {args.fabric} means --link-layer {implied}, not --link-layer {link_layer}")
        link_layer = implied
        print(f"warning: --fabric {args.fabric} is deprecated; use --fabric {fabric} --link-layer {implied}",
              file=sys.stderr)
    providers = [args.provider] if args.provider else ["alicloud", "tencentcloud"]
    rows = []
    for provider in providers:
        catalog = load_catalog(provider)
        for row in catalog.instance_types:
            if fabric and fabric_of(row) != fabric:
                continue
            if link_layer and link_layer_of(row) != link_layer:
                continue
            rows.append((provider, catalog.currency, row))
    if args.json:
        print(json.dumps([{"provider": p, "fabric": fabric_of(r), "link_layer": link_layer_of(r),
                           **r.model_dump(mode="json")} for p, _, r in rows], indent=2))
        return 0
    header = f"{'provider':<13}{'instance type':<32}{'GPUs':<26}{'fabric':<22}{'price/h':>19}  source (read)"
    print(header)
    for provider, currency, row in rows:
        gpu = f"{row.gpu.count} x {row.gpu.model}" if row.gpu else "-"
        shown = fabric_of(row)
        if row.rdma and shown == "rdma":
            shown += " RoCE" if row.rdma.kind == "roce" else " IB"
        if row.rdma and shown != "tcp":
            shown += f" {row.rdma.gbps:g}G" if row.rdma.gbps else ""
            if row.rdma.eri_quantity:
                shown += f" ERI x{row.rdma.eri_quantity}"
        price = "unknown"
        if row.price and row.price.pay_as_you_go_per_hour is not None:
            # The kind beside the figure: "list" (the cloud's list) or "pull" (a third-party API pull).
            kind = "list" if row.price.kind == "official list" else "pull"
            price = f"{row.price.pay_as_you_go_per_hour:,.2f} {currency} {kind}"
        print(
            f"{provider:<13}{row.name:<32}{gpu[:25]:<26}{shown[:21]:<22}{price:>19}  "
            f"{row.source.url} ({row.source.read})"
        )
    return 0
