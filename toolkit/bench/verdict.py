"""The verdict of one bench run, from its results.json: what is printed and whether it passes.

A run passes when every series ran (no failed run, every rank where and how it was asked), the
NCCL logs raise no problem, and every judged peak is within the model's tolerance. `unknown` from
the model (e.g. a TCP transport) is said, not failed. Replayed lab runs are never gated: their
numbers belong to other machines.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from toolkit.bench.report import Run, comparisons
from toolkit.bench.results import Results, Series


@dataclass
class Verdict:
    ok: bool
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _series_line(s: Series) -> str:
    peak = (f"peak {s.peak_busbw_gbps:g} GB/s at {s.peak_size_bytes} B" if s.peak_busbw_gbps is not None
            else "no result")
    judged = s.expectation.message if s.expectation else "not judged"
    log = s.log_check.verdict if s.log_check else "no log"
    launch = "ranks ok" if s.launch is None or s.launch.ok else f"ranks: {len(s.launch.problems)} problem(s)"
    return f"{s.collective:<15} {s.variant:<8} #{s.repeat}  {peak}; {judged}; log {log}; {launch}"


def judge(results: Results, label: str = "run") -> Verdict:
    verdict = Verdict(ok=True)
    replayed = results.meta.replayed is not None
    for s in results.series:
        verdict.lines.append(_series_line(s))
        where = f"{s.collective} {s.variant} #{s.repeat}"
        if s.failed:
            verdict.problems.append(f"{where}: failed: {'; '.join(s.errors[:3]) or 'no detail'}")
        if s.launch is not None and not s.launch.ok:
            verdict.problems += [f"{where}: {p}" for p in s.launch.problems[:5]]
        if replayed:
            continue
        if s.log_check is not None and s.log_check.verdict == "problem":
            verdict.problems += [f"{where}: NCCL log: {m}" for m in s.log_check.messages[:3]]
        if s.variant == "tuned" and s.expectation is not None and s.expectation.verdict == "below":
            verdict.problems.append(f"{where}: {s.expectation.message}")
    for collective, bands in comparisons(Run(label=label, results=results)).items():
        for band in bands:
            verdict.lines.append(
                f"tuned vs default, {collective} {band.band}: {band.verdict} (median {band.median_diff:+.1%}, "
                f"range {band.min_diff:+.1%}..{band.max_diff:+.1%}, noise {band.noise:.1%}, {band.repeats} pairs)")
    price = results.meta.price
    tuned = [s.peak_busbw_gbps for s in results.series if s.variant == "tuned" and s.peak_busbw_gbps]
    if price is not None and tuned:
        best = max(tuned)
        for sign, value in (("¥", price.cny_per_hour), ("$", price.usd_per_hour)):
            if value is not None:
                verdict.lines.append(f"cost: {sign}{value:,.2f}/h for the cluster, {sign}{value / best:.3f}/h per "
                                     f"GB/s of peak busbw ({price.source})")
    elif price is None:
        verdict.lines.append("cost: no price known for this cluster, so no cost per bandwidth")
    if replayed:
        verdict.lines.append(f"replayed: {results.meta.replayed}")
    verdict.ok = not verdict.problems
    return verdict
