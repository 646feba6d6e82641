"""The shape `gpuctl status` and `gpuctl cost` share: `SPEC [--json] [--backend URL]`, the provider's
status dict of that cluster in, one report out, as text or as a JSON document."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from toolkit.commands._driver import add_backend_argument, driver_for

if TYPE_CHECKING:
    from pydantic import BaseModel

    from toolkit.spec.models import ClusterSpec

Report = TypeVar("Report", bound="BaseModel")


def add_report_arguments(parser: argparse.ArgumentParser, schema: str) -> None:
    """SPEC, --json (the document's schema file is `schema`) and --backend."""
    parser.add_argument("spec", metavar="SPEC", help="cluster spec YAML file")
    parser.add_argument("--json", action="store_true", help=f"print one JSON document ({schema}) on stdout")
    add_backend_argument(parser)


def print_report(args: argparse.Namespace, build: Callable[[ClusterSpec, Mapping[str, object]], Report],
                 render: Callable[[Report], str]) -> int:
    """Load the spec, ask its provider for the cluster's status, build the report and print it."""
    from toolkit.commands._reports import dump
    from toolkit.commands._spec import load_spec_arg

    spec = load_spec_arg(args.spec)
    report = build(spec, driver_for(spec, args).status(spec))
    print(dump(report) if args.json else render(report), end="")
    return 0
