"""`gpuctl report RUN_DIR... [--format html|md] [-o OUT]`: one report from one or more bench runs.

Each RUN_DIR holds the `results.json` a bench run wrote (docs/bench.md). The report goes into the
directory OUT: `report.html` (or `report.md`) with one PNG per collective beside it, each written
whole and never through a link standing in OUT. A missing run directory or results.json, or one
that is not a regular file of at most 64 MiB, exits 2; a results.json that is not strict JSON,
holds a number no measurement has, or does not match its schema exits 5; each names the file.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", metavar="RUN_DIR", nargs="+", help="a bench run directory holding results.json")
    parser.add_argument("--format", choices=("html", "md"), default="html",
                        help="html: a page that opens offline; md: markdown for a pull request or wiki")
    parser.add_argument("-o", "--output", metavar="OUT", default="gpuctl-report",
                        help="the directory to write the report and its PNGs into (default: gpuctl-report)")


def run(args: argparse.Namespace) -> int:
    from toolkit.bench.report import Run, write_report
    from toolkit.bench.results import load
    from toolkit.errors import UsageError

    runs: list[Run] = []
    for given in args.runs:
        path = Path(given)
        results = load(path)
        label = path.resolve().name or given
        if any(r.label == label for r in runs):
            label = f"{label} ({len(runs) + 1})"  # two runs from folders with the same name
        runs.append(Run(label=label, results=results))
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory; give -o a directory for the report")
    try:
        page = write_report(runs, out, args.format)
    except OSError as error:
        raise UsageError(f"{out}: cannot write the report ({error.strerror or error})") from None
    print(page)
    return 0
