"""A/B statistics on synthetic interleaved repeats with known answers (including pure noise)."""

from __future__ import annotations

import random

import pytest

from toolkit.bench.compare import band_of, compare, compare_band

SIZES = [1024, 8192, 65536, 1048576, 8388608, 67108864, 1073741824]
LEVEL = {1024: 0.05, 8192: 0.4, 65536: 3.0, 1048576: 40.0, 8388608: 150.0, 67108864: 350.0, 1073741824: 450.0}


def _runs(rng: random.Random, repeats: int, factor: float, noise: float) -> list[dict[int, float]]:
    return [{s: LEVEL[s] * factor * (1 + rng.gauss(0, noise)) for s in SIZES} for _ in range(repeats)]


def test_bands() -> None:
    assert [band_of(s) for s in (0, 65536, 65537, 16777216, 16777217)] == [
        "small", "small", "medium", "medium", "large"]


def test_a_clear_gain_is_a_gain() -> None:
    rng = random.Random(1)
    a, b = _runs(rng, 5, 1.10, 0.01), _runs(rng, 5, 1.0, 0.01)
    large = compare_band(a, b, "large")
    assert large is not None
    assert large.verdict == "gain"
    assert large.sizes == [67108864, 1073741824]
    assert 0.07 < large.median_diff < 0.13
    assert large.min_diff > 0


def test_a_clear_loss_is_a_loss() -> None:
    rng = random.Random(2)
    bands = compare(_runs(rng, 5, 0.85, 0.01), _runs(rng, 5, 1.0, 0.01))
    assert [(c.band, c.verdict) for c in bands] == [("small", "loss"), ("medium", "loss"), ("large", "loss")]


def test_small_effect_inside_large_noise_is_within_noise() -> None:
    rng = random.Random(3)
    result = compare_band(_runs(rng, 5, 1.005, 0.03), _runs(rng, 5, 1.0, 0.03), "large")
    assert result is not None
    assert result.verdict == "within noise"


def test_two_repeats_never_claim_anything() -> None:
    rng = random.Random(4)
    result = compare_band(_runs(rng, 2, 1.5, 0.001), _runs(rng, 2, 1.0, 0.001), "large")
    assert result is not None
    assert (result.verdict, result.repeats) == ("within noise", 2)
    assert "at least 3" in result.reason


@pytest.mark.parametrize("noise", [0.005, 0.02, 0.08])
def test_pure_noise_is_never_a_gain(noise: float) -> None:
    rng = random.Random(5)
    verdicts = [c.verdict for _ in range(500)
                for c in compare(_runs(rng, 5, 1.0, noise), _runs(rng, 5, 1.0, noise))]
    assert "gain" not in verdicts
    assert "loss" not in verdicts


def test_repeats_must_pair_up() -> None:
    with pytest.raises(ValueError, match="repeats must come in pairs"):
        compare_band([{1024: 1.0}] * 3, [{1024: 1.0}] * 2, "small")


def test_band_without_common_sizes_is_skipped() -> None:
    assert compare_band([{1024: 1.0}] * 3, [{2048: 1.0}] * 3, "small") is None
    assert compare([], []) == []
