"""`gpuctl autotune SPEC`: sweep a small documented set of NCCL knobs; keep only clear wins.

Each candidate (toolkit/bench/sweep.py) runs interleaved with the node's own configuration,
repeat by repeat. `toolkit.bench.autotune` keeps a candidate for a band of message sizes only when
every pair beats its baseline by more than the measured noise. The run directory gets every raw
output, autotune.json (every comparison), nccl-tuner.conf (the CSV NCCL's example tuner plugin
reads through NCCL_TUNER_CONFIG_FILE) and nccl.conf.autotune (settings safe for every size), each
line after a `#` line with its measurements. Nothing is installed on the nodes: the operator reads
the evidence and applies it (spec nccl_overrides, or the plugin).
"""

from __future__ import annotations

import argparse

from toolkit.commands.bench import add_run_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_arguments(parser, repeats_help="interleaved pairs per candidate (default 3, the fewest the "
                                           "comparison accepts; more narrows the noise)")


def run(args: argparse.Namespace) -> int:
    import json
    from collections import defaultdict
    from datetime import UTC, datetime
    from pathlib import Path

    from toolkit.bench import run as bench
    from toolkit.bench.autotune import nccl_conf_lines, select
    from toolkit.bench.launch import FULL
    from toolkit.bench.sweep import measured, plan
    from toolkit.commands._driver import driver_for
    from toolkit.commands._spec import load_spec_arg
    from toolkit.commands.bench import collectives_arg, replay_arg
    from toolkit.configure.render import RDMA_FABRICS
    from toolkit.errors import UsageError
    from toolkit.paths import Paths
    from toolkit.progress import progress

    spec = load_spec_arg(args.spec)
    collectives = collectives_arg(args.collectives, ("all_reduce",))
    repeats = args.repeats if args.repeats is not None else 3
    if repeats < 3 or repeats > 50:
        raise UsageError(f"--repeats {repeats}: give 3 to 50 (the comparison needs at least 3 pairs)")
    replay = replay_arg(spec.provider, args.replay)
    rdma = spec.network.fabric in RDMA_FABRICS
    runs = plan(collectives, repeats, rdma)
    outputs = driver_for(spec, args).outputs(spec)
    paths = Paths.of(spec.name)
    facts = bench.node_facts(outputs, paths)
    run_dir = bench.new_run_dir(Path(args.output), f"{spec.name}-autotune")
    bench.write_plan(run_dir, runs, FULL)
    started = datetime.now(UTC)
    if not args.no_prepare:
        bench.prepare(spec, outputs, paths, facts, replay, progress)
    executed = bench.execute(outputs, outputs.nodes[0], runs, FULL, facts, run_dir, progress)
    busbw: dict[str, dict[str, dict[int, dict[int, float]]]] = defaultdict(lambda: defaultdict(dict))
    failed: list[str] = []
    for e in executed:
        series = bench.series_of(e, run_dir, facts[0].topology)
        if series.failed or not series.points or (series.launch is not None and not series.launch.ok):
            failed.append(f"{e.run.name}: {'; '.join(series.errors[:2]) or 'ranks not as asked'}")
            continue
        busbw[e.run.collective][e.run.label][e.run.repeat] = {p.size_bytes: p.out_of_place.busbw_gbps
                                                               for p in series.points}
    ranks = sum(f.slots for f in facts)
    selections = [select(c, len(facts), ranks, measured(c, rdma, busbw[c])) for c in collectives]
    tuner = ["# NCCL example tuner plugin config written by gpuctl autotune "
             f"({spec.name}, {started:%Y-%m-%d %H:%M} UTC); every line after the measurements that justify it"]
    conf = ["# nccl.conf lines from gpuctl autotune: only candidates that gain somewhere and lose nowhere"]
    for selection in selections:
        tuner += selection.tuner_lines
        conf += nccl_conf_lines(selection)
    (run_dir / "nccl-tuner.conf").write_text("\n".join(tuner) + "\n")
    (run_dir / "nccl.conf.autotune").write_text("\n".join(conf) + "\n")
    (run_dir / "autotune.json").write_text(json.dumps(
        {"cluster": spec.name, "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
         "replayed": bench.REPLAYED if replay is not None else None, "failed_runs": failed,
         "selections": [s.model_dump(mode="json") for s in selections]}, indent=2) + "\n")
    print(f"\nAutotune of {spec.name}: {len(runs)} runs, {repeats} interleaved pairs per candidate")
    for selection in selections:
        for choice in selection.choices:
            kept = (f"{choice.candidate} ({choice.comparison.median_diff:+.1%}, noise {choice.comparison.noise:.1%})"
                    if choice.candidate and choice.comparison else "nothing beat the baseline beyond the noise")
            print(f"  {selection.collective} {choice.band}: {kept}")
        print(f"  {selection.collective} nccl.conf: "
              + (", ".join(f"{k}={v}" for k, v in selection.nccl_conf.items()) or "no change"))
    if failed:
        print(f"  {len(failed)} run(s) failed and were left out: " + "; ".join(failed[:3]))
    if replay is not None:
        print(f"  replayed: {bench.REPLAYED}")
    print(f"\nevidence: {run_dir}/autotune.json\ntuner:    {run_dir}/nccl-tuner.conf")
    return 0
