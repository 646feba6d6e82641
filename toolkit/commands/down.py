"""`gpuctl down SPEC`: remove everything the cluster created, then verify nothing is left."""

from __future__ import annotations

import argparse

from toolkit.commands._driver import add_backend_argument, driver_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="cluster spec YAML file")
    add_backend_argument(parser)


def run(args: argparse.Namespace) -> int:
    from toolkit.lock import cluster_lock
    from toolkit.progress import progress
    from toolkit.spec.loader import load_spec

    # No catalog check: tearing down must work even for a spec the catalog no longer accepts.
    spec = load_spec(args.spec)
    with cluster_lock(spec.name, "down"):
        removed = driver_for(spec, args).down(spec, progress)
    print(f"{spec.name}: removed, and nothing named for it is left" if removed
          else f"{spec.name}: nothing to remove (no such cluster)")
    return 0
