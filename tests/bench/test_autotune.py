"""Autotune selection on synthetic interleaved measurements with known answers."""

from __future__ import annotations

import random

import pytest

from toolkit.bench.autotune import Candidate, nccl_conf_lines, select

SMALL, MEDIUM, LARGE = [4096, 32768], [1048576, 8388608], [268435456, 1073741824]
SIZES = [*SMALL, *MEDIUM, *LARGE]
BASE = {4096: 0.3, 32768: 2.0, 1048576: 40.0, 8388608: 150.0, 268435456: 400.0, 1073741824: 450.0}


def _runs(rng: random.Random, gain: dict[int, float], noise: float = 0.01, repeats: int = 5) -> list[dict[int, float]]:
    return [{s: BASE[s] * gain.get(s, 1.0) * (1 + rng.gauss(0, noise)) for s in SIZES} for _ in range(repeats)]


def _candidate(rng: random.Random, name: str, settings: dict[str, str], gain: dict[int, float],
               noise: float = 0.01) -> Candidate:
    return Candidate(name=name, settings=settings, runs=_runs(rng, gain, noise), default_runs=_runs(rng, {}, noise))


def test_keeps_the_band_winner_and_writes_a_justified_tuner_line() -> None:
    rng = random.Random(10)
    ll = _candidate(rng, "tree-ll", {"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL"}, dict.fromkeys(SMALL, 1.25))
    ring = _candidate(rng, "ring-simple", {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}, {})
    selection = select("all_reduce", 2, 16, [ll, ring])
    assert [(c.band, c.candidate) for c in selection.choices] == [
        ("small", "tree-ll"), ("medium", None), ("large", None)]
    assert len(selection.tuner_lines) == 2
    why, line = selection.tuner_lines
    assert line == "allreduce,0,65536,tree,ll,-1,2,16"
    assert why.startswith("# all_reduce small (4096-32768 B measured): tree-ll median +2")
    assert "5 interleaved repeats" in why
    # tree-ll gains where measured small and loses nowhere: also safe for nccl.conf
    assert selection.nccl_conf == {"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL"}
    conf = nccl_conf_lines(selection)
    assert conf[1:] == ["NCCL_ALGO=Tree", "NCCL_PROTO=LL"]
    assert conf[0].startswith("# autotune all_reduce 2 nodes x 16 ranks: tree-ll vs default: small +2")


def test_a_setting_that_loses_somewhere_stays_out_of_nccl_conf() -> None:
    rng = random.Random(11)
    mixed = _candidate(rng, "ring-ll128", {"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL128"},
                       {**dict.fromkeys(LARGE, 1.2), **dict.fromkeys(SMALL, 0.7)})
    selection = select("all_gather", 1, 8, [mixed])
    assert [(c.band, c.candidate) for c in selection.choices] == [
        ("small", None), ("medium", None), ("large", "ring-ll128")]
    assert selection.tuner_lines[1] == "allgather,16777217,4294967295,ring,ll128,-1,1,8"
    assert selection.nccl_conf == {}
    assert nccl_conf_lines(selection) == []


def test_channels_go_into_the_csv_when_min_equals_max() -> None:
    rng = random.Random(12)
    pinned = _candidate(rng, "ring-simple-32ch", {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple",
                                                  "NCCL_MIN_NCHANNELS": "32", "NCCL_MAX_NCHANNELS": "32"},
                        dict.fromkeys(LARGE, 1.15))
    selection = select("reduce_scatter", 4, 32, [pinned])
    assert selection.tuner_lines[-1] == "reducescatter,16777217,4294967295,ring,simple,32,4,32"


def test_choices_the_csv_cannot_express_become_comments() -> None:
    rng = random.Random(13)
    proto_only = _candidate(rng, "ll128", {"NCCL_PROTO": "LL128"}, dict.fromkeys(LARGE, 1.2))
    selection = select("all_reduce", 2, 16, [proto_only])
    assert len(selection.tuner_lines) == 1
    assert selection.tuner_lines[0].endswith("not expressible in the tuner CSV (needs both NCCL_ALGO and NCCL_PROTO)")
    alltoall = select("alltoall", 2, 16, [_candidate(rng, "ring-simple", {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"},
                                                     dict.fromkeys(LARGE, 1.2))])
    assert alltoall.tuner_lines[0].endswith("(the plugin does not tune this collective)")


@pytest.mark.parametrize("seed", range(20))
def test_pure_noise_keeps_nothing(seed: int) -> None:
    rng = random.Random(seed)
    candidates = [_candidate(rng, f"c{i}", {"NCCL_ALGO": "Ring", "NCCL_PROTO": p}, {}, noise=0.03)
                  for i, p in enumerate(("LL", "LL128", "Simple"))]
    selection = select("all_reduce", 2, 16, candidates)
    assert all(c.candidate is None for c in selection.choices)
    assert selection.tuner_lines == []
    assert selection.nccl_conf == {}


def test_unknown_knob_is_refused() -> None:
    with pytest.raises(ValueError, match="NCCL_IB_HCA not among the swept knobs"):
        select("all_reduce", 1, 8, [Candidate(name="x", settings={"NCCL_IB_HCA": "1"}, runs=[], default_runs=[])])
