"""`gpuctl outputs SPEC [--json]`: the nodes of a running cluster and how to reach them.

Reads the provider's recorded state (for Alibaba: the Pulumi stack's outputs); it creates and
changes nothing and does not call the cloud API.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from toolkit.commands._driver import add_backend_argument, driver_for

if TYPE_CHECKING:
    from toolkit.providers.base import ClusterOutputs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="cluster spec YAML file")
    parser.add_argument("--json", action="store_true",
                        help="print ClusterOutputs as JSON (docs/schemas/outputs.json)")
    add_backend_argument(parser)


def run(args: argparse.Namespace) -> int:
    from toolkit.commands._spec import load_spec_arg

    spec = load_spec_arg(args.spec)
    outputs = driver_for(spec, args).outputs(spec)
    if args.json:
        print(outputs.model_dump_json(indent=2))
    else:
        print(render_outputs(outputs), end="")
    return 0


def render_outputs(outputs: ClusterOutputs) -> str:
    rows = [("NODE", "POOL", "INSTANCE", "TYPE", "PRIVATE IP", "PUBLIC IP", "FABRIC")]
    for node in outputs.nodes:
        fabric = ", ".join(f"{i.name} {i.ipv4 or '-'}" for i in node.fabric_interfaces) or "-"
        rows.append((node.name, node.pool, node.instance_id, node.instance_type, node.private_ip,
                     node.public_ip or "-", fabric))
    widths = [max(len(row[col]) for row in rows) for col in range(len(rows[0]) - 1)]
    lines = [
        f"cluster {outputs.cluster} ({outputs.provider}, fabric {outputs.fabric}, MTU {outputs.mtu}), "
        f"{len(outputs.nodes)} node(s)"
    ]
    for row in rows:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1])
    return "\n".join(lines) + "\n"
