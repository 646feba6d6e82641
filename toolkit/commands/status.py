"""`gpuctl status SPEC [--json]`: the cluster's nodes and state, as the provider sees them."""

from __future__ import annotations

import argparse
import json

from toolkit.commands._driver import add_backend_argument, driver_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="cluster spec YAML file")
    parser.add_argument("--json", action="store_true", help="print the status as JSON")
    add_backend_argument(parser)


def run(args: argparse.Namespace) -> int:
    from toolkit.spec.loader import load_spec

    spec = load_spec(args.spec)
    status = driver_for(spec, args).status(spec)
    if args.json:
        print(json.dumps(status, indent=2, default=str))
        return 0
    print(f"cluster {spec.name} ({spec.provider}): {status.get('phase', 'unknown')}")
    nodes = status.get("nodes")
    for node in nodes if isinstance(nodes, list) else []:
        if isinstance(node, dict):
            fields = "  ".join(f"{k}={v}" for k, v in node.items() if k != "name" and v is not None)
            print(f"  {node.get('name')}: {fields}")
    return 0
