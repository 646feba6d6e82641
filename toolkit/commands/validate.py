"""`gpuctl validate SPEC...`: schema and catalog checks, nothing contacted."""

from __future__ import annotations

import argparse
import sys

from toolkit.errors import GpuctlError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("specs", nargs="+", metavar="SPEC", help="cluster spec YAML file(s)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing when a spec is valid")


def run(args: argparse.Namespace) -> int:
    from toolkit.commands._spec import load_checked_spec

    # Every file is checked even after a failure, so one run reports all of them; the exit code
    # is that of the first failure.
    exit_code = 0
    for path in args.specs:
        try:
            spec, result = load_checked_spec(path)
        except GpuctlError as error:
            print(f"{error}", file=sys.stderr)
            exit_code = exit_code or error.exit_code
            continue
        if not args.quiet:
            noun = "node" if spec.node_count == 1 else "nodes"
            print(
                f"{path}: ok ({spec.provider}, {spec.node_count} {noun}, fabric {spec.network.fabric}, "
                f"{len(result.warnings)} warning{'s' if len(result.warnings) != 1 else ''})"
            )
    return exit_code
