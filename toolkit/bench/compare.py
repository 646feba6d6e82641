"""A/B statistics for interleaved repeats: does a setting beat another beyond the noise?

The bench runs variant A (tuned) and variant B (default) alternately, A B A B ..., so repeat i of
each ran minutes apart on the same nodes and the same fabric state. Pair i is (A_i, B_i).

Per size band (`BANDS`), for each pair i:

    ratio_i = geometric mean over the band's sizes of busbw(A_i, size) / busbw(B_i, size)
    diff_i  = ratio_i - 1

reported as the median of diff_i with its min and max over the pairs (with 3-7 repeats a bootstrap
interval is not better than the range, and the range is what a reader can check by hand).

The noise of a band is the larger of MIN_EFFECT and each variant's own run-to-run spread:
(max - min) / median of that variant's per-repeat band level (geometric mean busbw over the band).

Verdict: "gain" only when every pair favours A by more than the noise (min diff > noise); "loss"
symmetrically (max diff < -noise); otherwise "within noise". (A first version asked only for the
median to clear the noise with every pair positive: on pure noise, 5 repeats, that called some
gains in tests/bench/test_compare.py at 2% and 8% noise. Every pair beyond the noise calls none.)
Fewer than MIN_REPEATS pairs is always "within noise": two runs cannot separate a real difference
from drift. So pure noise is not reported as a gain (tests/bench/test_compare.py: 500 noise series at each of 3 levels).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

MIN_REPEATS = 3
MIN_EFFECT = 0.01  # 1%: below this no difference is claimed, however quiet the runs

# (name, smallest size, largest size) in bytes, inclusive. nccl-tests sizes are powers of two or
# the -i steps between them; the bands follow where NCCL's protocol choice usually changes
# (LL for latency-bound messages, LL128/Simple as messages grow).
BANDS: tuple[tuple[str, int, int], ...] = (
    ("small", 0, 64 * 1024),
    ("medium", 64 * 1024 + 1, 16 * 1024 * 1024),
    ("large", 16 * 1024 * 1024 + 1, 2**63 - 1),
)

Verdict = Literal["gain", "loss", "within noise"]
# One repeat of one variant: message size in bytes -> busbw in GB/s.
Repeat = Mapping[int, float]


class BandComparison(BaseModel):
    model_config = ConfigDict(extra="forbid")

    band: str
    min_bytes: int
    max_bytes: int
    sizes: list[int]  # the sizes both variants measured in every repeat
    repeats: int
    median_diff: float  # A over B - 1; +0.05 is A 5% faster
    min_diff: float
    max_diff: float
    noise: float
    verdict: Verdict
    reason: str


def band_of(size: int) -> str:
    return next(name for name, low, high in BANDS if low <= size <= high)


def _level(repeat: Repeat, sizes: Sequence[int]) -> float:
    return math.exp(statistics.fmean(math.log(repeat[s]) for s in sizes))


def _spread(levels: Sequence[float]) -> float:
    return (max(levels) - min(levels)) / statistics.median(levels)


def compare_band(a: Sequence[Repeat], b: Sequence[Repeat], band: str) -> BandComparison | None:
    """A against B over one band; None when the band holds no size measured (with busbw > 0) in
    every repeat of both. `a[i]` and `b[i]` must be the i-th interleaved pair."""
    if len(a) != len(b):
        raise ValueError(f"{len(a)} repeats of A against {len(b)} of B: repeats must come in pairs")
    name, low, high = next(entry for entry in BANDS if entry[0] == band)
    runs = [*a, *b]
    if not runs:
        return None
    sizes = sorted(s for s in set.intersection(*(set(r) for r in runs))
                   if low <= s <= high and all(r[s] > 0 for r in runs))
    if not sizes:
        return None
    diffs = [_level(x, sizes) / _level(y, sizes) - 1 for x, y in zip(a, b, strict=True)]
    noise = max(MIN_EFFECT, _spread([_level(x, sizes) for x in a]), _spread([_level(y, sizes) for y in b]))
    median = statistics.median(diffs)
    verdict: Verdict = "within noise"
    if len(diffs) < MIN_REPEATS:
        reason = f"{len(diffs)} repeat pair(s): at least {MIN_REPEATS} are needed to claim a difference"
    elif min(diffs) > noise:
        verdict, reason = "gain", f"every pair faster by more than the noise {noise:.1%} (median {median:+.1%})"
    elif max(diffs) < -noise:
        verdict, reason = "loss", f"every pair slower by more than the noise {noise:.1%} (median {median:+.1%})"
    else:
        reason = (f"median {median:+.1%} (pairs {min(diffs):+.1%} to {max(diffs):+.1%}) "
                  f"does not clear the noise {noise:.1%}")
    return BandComparison(band=name, min_bytes=low, max_bytes=high, sizes=sizes, repeats=len(diffs),
                          median_diff=round(median, 4), min_diff=round(min(diffs), 4),
                          max_diff=round(max(diffs), 4), noise=round(noise, 4), verdict=verdict,
                          reason=reason)


def compare(a: Sequence[Repeat], b: Sequence[Repeat]) -> list[BandComparison]:
    """Every band that both variants measured, small to large."""
    return [c for name, _, _ in BANDS if (c := compare_band(a, b, name)) is not None]
