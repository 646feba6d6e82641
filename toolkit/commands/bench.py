"""`gpuctl bench SPEC`: nccl-tests across the cluster, one run directory, a verdict.

The run directory (default gpuctl-bench/<cluster>-<UTC time>/) holds plan.json (what was asked),
one `<collective>-<variant>-<repeat>.txt` (stdout: the table and every rank's NCCL INFO lines) and
`.err` (the rank reports, mpirun's messages) per run, and results.json (docs/bench.md). `gpuctl
report RUN_DIR` draws it. Exit 0 when the verdict passes, 8 when a run failed, a rank was not where
or how it was asked, an NCCL log shows a problem or a tuned peak is below the model's expectation.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from toolkit.commands._driver import add_backend_argument, driver_for

DEFAULT_OUTPUT = "gpuctl-bench"


def add_run_arguments(parser: argparse.ArgumentParser, *, repeats_help: str) -> None:
    """The arguments bench and autotune share."""
    from toolkit.bench.launch import COLLECTIVES

    parser.add_argument("spec", metavar="SPEC", help="cluster spec YAML file (the cluster must be up and configured)")
    parser.add_argument("--collectives", metavar="LIST",
                        help=f"comma-separated subset of {','.join(COLLECTIVES)} (default: all of them)")
    parser.add_argument("--repeats", type=int, metavar="N", help=repeats_help)
    parser.add_argument("-o", "--output", metavar="DIR", default=DEFAULT_OUTPUT,
                        help=f"where the run directory is created (default: {DEFAULT_OUTPUT}/)")
    parser.add_argument("--replay", metavar="DIR",
                        help="lab only: the real nccl-tests outputs the stand-ins replay, one <binary>.txt each "
                             "(default: examples/captures/nccl-tests-replay)")
    parser.add_argument("--no-prepare", action="store_true",
                        help="skip the bench playbook (nccl-tests, rank wrapper, mpirun key) when it ran before")
    add_backend_argument(parser)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_arguments(parser, repeats_help="runs per collective and variant (default 1; 3 with --compare-default, "
                                           "the fewest the A/B statistics accept)")
    parser.add_argument("--quick", action="store_true",
                        help="a one-minute check: all_reduce only, 1 MiB to 1 GiB, few iterations")
    parser.add_argument("--compare-default", action="store_true",
                        help="also run every collective with NCCL's defaults (gpuctl's nccl.conf hidden), "
                             "interleaved with the tuned runs, and report the difference with its spread")


def collectives_arg(text: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    from toolkit.bench.launch import COLLECTIVES
    from toolkit.errors import UsageError

    if text is None:
        return default
    chosen = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [c for c in chosen if c not in COLLECTIVES]
    if unknown or not chosen:
        raise UsageError(f"--collectives: unknown {', '.join(unknown) or '(empty)'}; choose from "
                         f"{', '.join(COLLECTIVES)}")
    return chosen


def replay_arg(spec_provider: str, given: str | None) -> Path | None:
    """The lab's replay bundle; refused on a cloud (its nodes run the real binaries)."""
    from toolkit.errors import UsageError
    from toolkit.paths import REPO

    if spec_provider != "local":
        if given is not None:
            raise UsageError("--replay is for the local lab only: cloud nodes run the real nccl-tests")
        return None
    path = Path(given) if given is not None else REPO / "examples" / "captures" / "nccl-tests-replay"
    if not path.is_dir():
        raise UsageError(f"--replay {path}: no such directory of real nccl-tests outputs (<binary>.txt)")
    return path.resolve()


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace
    from datetime import UTC, datetime

    from toolkit import hints
    from toolkit.bench import run as bench
    from toolkit.bench.launch import FULL, QUICK, run_order
    from toolkit.bench.results import Variant
    from toolkit.bench.verdict import judge
    from toolkit.commands._spec import load_spec_arg
    from toolkit.errors import CheckFailed, UsageError
    from toolkit.paths import Paths
    from toolkit.progress import progress

    spec = load_spec_arg(args.spec)
    sweep = QUICK if args.quick else FULL
    collectives = collectives_arg(args.collectives, sweep.collectives)
    repeats = args.repeats if args.repeats is not None else (3 if args.compare_default else 1)
    if repeats < 1 or repeats > 50:
        raise UsageError(f"--repeats {repeats}: give 1 to 50")
    if args.compare_default and repeats < 3:
        raise UsageError(f"--repeats {repeats} with --compare-default: the comparison needs at least 3 pairs "
                         "to tell a gain from noise")
    replay = replay_arg(spec.provider, args.replay)
    sweep = replace(sweep, collectives=collectives)
    variants: tuple[Variant, ...] = ("tuned", "default") if args.compare_default else ("tuned",)
    runs = run_order(collectives, variants, repeats)

    outputs = driver_for(spec, args).outputs(spec)
    paths = Paths.of(spec.name)
    facts = bench.node_facts(outputs, paths)
    run_dir = bench.new_run_dir(Path(args.output), spec.name)
    bench.write_plan(run_dir, runs, sweep)
    started = datetime.now(UTC)
    if not args.no_prepare:
        bench.prepare(spec, outputs, paths, facts, replay, progress)
    executed = bench.execute(outputs, outputs.nodes[0], runs, sweep, facts, run_dir, progress)
    results = bench.build_results(spec, outputs, facts, executed, run_dir, started, replayed=replay is not None)
    path = bench.write_results(results, run_dir)
    verdict = judge(results, label=run_dir.name)
    print(f"\nBench of {spec.name}: {len(facts)} nodes x {facts[0].slots} GPUs, {len(runs)} runs ({sweep.name})")
    for line in verdict.lines:
        print(f"  {line}")
    print(f"\nresults: {path}\nreport:  gpuctl report {run_dir}")
    if not verdict.ok:
        raise CheckFailed("bench: " + "; ".join(verdict.problems[:5])
                          + (f" (+{len(verdict.problems) - 5} more)" if len(verdict.problems) > 5 else ""),
                          hint=f"the outputs are in {run_dir}; the log of a run is explained by "
                               f"`{hints.command('check-log', run_dir / (executed[0].run.name + '.txt'))}`")
    return 0
