"""`gpuctl plan SPEC [--json]`: resources, hardware and cost, computed offline."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="cluster spec YAML file")
    parser.add_argument("--json", action="store_true",
                        help="machine-readable output (docs/schemas/plan.json; stable, no clock)")


def run(args: argparse.Namespace) -> int:
    from toolkit.commands._spec import load_checked_spec
    from toolkit.plan import build_plan
    from toolkit.plan_text import render_plan

    # The plan carries its warnings (text and JSON alike), so they are not printed twice.
    from toolkit.prices.cache import load_cache, utc_now

    spec, result = load_checked_spec(args.spec, show_warnings=False)
    # Live prices from `gpuctl prices refresh`, when there are any; none: the catalog's alone.
    plan = build_plan(spec, result, load_cache(), utc_now())
    if args.json:
        print(plan.model_dump_json(indent=2))
    else:
        print(render_plan(plan), end="")
    return 0
