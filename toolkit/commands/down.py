"""`gpuctl down SPEC`: remove everything the cluster created, then verify nothing is left."""

from __future__ import annotations

import argparse

from toolkit.commands._driver import add_backend_argument, driver_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="cluster spec YAML file")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document (docs/schemas/down.json) on stdout; progress goes to stderr")
    add_backend_argument(parser)


def run(args: argparse.Namespace) -> int:
    from toolkit.commands._spec import load_spec_arg
    from toolkit.lock import cluster_lock
    from toolkit.progress import progress

    # No catalog check: tearing down must work even for a spec the catalog no longer accepts.
    spec = load_spec_arg(args.spec)
    with cluster_lock(spec.name, "down"):
        removed = driver_for(spec, args).down(spec, progress)
    message = (f"{spec.name}: removed, and nothing named for it is left" if removed
               else f"{spec.name}: nothing to remove (no such cluster)")
    if args.json:
        from toolkit.commands._reports import DownReport, dump

        print(dump(DownReport(cluster=spec.name, provider=spec.provider, removed=removed, message=message)), end="")
    else:
        print(message)
    return 0
