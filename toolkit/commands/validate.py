"""`gpuctl validate SPEC... [--json]`: schema and catalog checks, nothing contacted."""

from __future__ import annotations

import argparse
import sys

from toolkit.errors import GpuctlError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("specs", nargs="+", metavar="SPEC", help="cluster spec YAML file(s)")
    # SUPPRESS: absent here, a global `gpuctl --quiet validate` still counts (cli.py).
    parser.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="print nothing when a spec is valid")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document (docs/schemas/validate.json) on stdout")


def run(args: argparse.Namespace) -> int:
    from toolkit.commands._reports import SpecCheck, ValidateReport, dump
    from toolkit.commands._spec import load_checked_spec

    quiet = getattr(args, "quiet", False)
    # Every file is checked even after a failure, so one run reports all of them; the exit code
    # is that of the first failure.
    exit_code = 0
    checks: list[SpecCheck] = []
    for path in args.specs:
        try:
            spec, result = load_checked_spec(path, show_warnings=not args.json)
        except GpuctlError as error:
            print(f"{error}", file=sys.stderr)
            exit_code = exit_code or error.exit_code
            problems = getattr(error, "problems", None) or [error.message]
            checks.append(SpecCheck(path=path, ok=False, exit_code=error.exit_code, cluster=None, provider=None,
                                    nodes=None, fabric=None, warnings=[], problems=[str(p) for p in problems]))
            continue
        checks.append(SpecCheck(path=path, ok=True, exit_code=0, cluster=spec.name, provider=spec.provider,
                                nodes=spec.node_count, fabric=spec.network.fabric, warnings=list(result.warnings),
                                problems=[]))
        if not quiet and not args.json:
            noun = "node" if spec.node_count == 1 else "nodes"
            print(
                f"{path}: ok ({spec.provider}, {spec.node_count} {noun}, fabric {spec.network.fabric}, "
                f"{len(result.warnings)} warning{'s' if len(result.warnings) != 1 else ''})"
            )
    if args.json:
        print(dump(ValidateReport(ok=exit_code == 0, specs=checks)), end="")
    return exit_code
