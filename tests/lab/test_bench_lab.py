"""`gpuctl bench`, `report` and `autotune` on a 3-node lab: mpirun really runs across the lab nodes
over ssh; the nccl-tests binaries are stand-ins that replay real outputs (examples/captures/
nccl-tests-replay) and say so, so parsing, gating and reporting run the path they run on GPU nodes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.lab.conftest import write_spec

# Slow (a minute or more in all): `make test-slow` runs them.
pytestmark = [pytest.mark.lab, pytest.mark.slow]
NAME = "benchci"


def gpuctl(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "toolkit", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=900, check=False)
    if check:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory: pytest.TempPathFactory, replay_bundle: Path) -> Iterator[Path]:
    path = write_spec(tmp_path_factory.mktemp("spec"), NAME, 3, replay_bundle)
    gpuctl("up", path)
    yield path
    gpuctl("down", path, check=False)


@pytest.fixture(scope="module")
def runs(spec_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("runs")
    first = gpuctl("bench", spec_path, "-o", out / "full")
    second = gpuctl("bench", spec_path, "-o", out / "ab", "--compare-default", "--collectives",
                    "all_reduce,alltoall", "--no-prepare")
    assert "replayed: lab: every output was replayed" in first.stdout
    assert "tuned vs default, all_reduce large: within noise" in second.stdout
    [full] = (out / "full").iterdir()
    [ab] = (out / "ab").iterdir()
    return {"full": full, "ab": ab}


def results(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "results.json").read_text())
    return data


def test_bench_runs_every_default_collective_across_the_lab(runs: dict[str, Path]) -> None:
    data = results(runs["full"])
    assert data["meta"]["nodes"] == 3
    assert data["meta"]["gpus_per_node"] == 8  # the replayed host has 8 GPUs
    assert data["meta"]["replayed"].startswith("lab: every output was replayed")
    assert [(s["collective"], s["variant"], s["repeat"]) for s in data["series"]] == [
        ("all_reduce", "tuned", 0), ("all_gather", "tuned", 0), ("reduce_scatter", "tuned", 0),
        ("alltoall", "tuned", 0), ("sendrecv", "tuned", 0)]
    for series in data["series"]:
        assert not series["failed"], series["errors"]
        assert series["peak_busbw_gbps"] > 0
        assert series["launch"]["ok"], series["launch"]["problems"]
        assert series["command"].startswith("/etc/gpuctl/bench/mpirun -np 24 --map-by slot")
    # The replayed outputs are the real captures, byte for byte, after the stand-in's own line.
    text = (runs["full"] / "all_gather-tuned-0.txt").read_text()
    assert text.startswith("# gpuctl lab stand-in: REPLAYED output of all_gather_perf")
    assert text.split("\n", 1)[1] == (REPO / "examples/captures/nccl-tests-replay/all_gather_perf.txt").read_text()


def test_every_rank_reports_its_node_binding_and_settings(runs: dict[str, Path]) -> None:
    series = results(runs["full"])["series"][0]
    ranks = series["launch"]["ranks"]
    assert [r["rank"] for r in ranks] == list(range(24))
    assert Counter(r["host"] for r in ranks) == {f"{NAME}-n-0": 8, f"{NAME}-n-1": 8, f"{NAME}-n-2": 8}
    assert sorted({r["gpu"] for r in ranks}) == list(range(8))
    # h100-roce-node's topology puts every GPU on NUMA node 0, which this host has: really bound.
    assert {r["numa"] for r in ranks} == {"0"}
    assert all(r["bind"].startswith("numa0:cpus=") for r in ranks)
    tuned_lines = [line for line in (runs["full"] / "all_reduce-tuned-0.err").read_text().splitlines()
                   if line.startswith("gpuctl-rank ")]
    assert len(tuned_lines) == 24
    assert all("NCCL_SOCKET_IFNAME==fab0" in line and "env=NCCL_DEBUG=INFO;" in line for line in tuned_lines)


def test_the_default_variant_sees_no_nccl_conf_and_the_node_keeps_it(runs: dict[str, Path], spec_path: Path) -> None:
    lines = [line for line in (runs["ab"] / "all_reduce-default-1.err").read_text().splitlines()
             if line.startswith("gpuctl-rank ")]
    assert len(lines) == 24
    assert all(" variant=default conf=none " in line for line in lines)
    data = results(runs["ab"])
    assert [s["variant"] for s in data["series"]][:4] == ["tuned", "default", "tuned", "default"]
    assert all(s["launch"]["ok"] for s in data["series"])
    conf = gpuctl("ssh", spec_path, "0", "--", "cat", "/etc/nccl.conf").stdout
    assert "NCCL_SOCKET_IFNAME==fab0" in conf


def _png_ok(path: Path) -> None:
    import matplotlib.image

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 10_000
    pixels = matplotlib.image.imread(str(path))
    assert pixels.shape[0] > 300
    assert pixels.shape[1] > 400
    assert pixels.std() > 0.05  # curves and text, not a blank canvas


def test_report_draws_the_replayed_curves(runs: dict[str, Path], tmp_path: Path) -> None:
    gpuctl("report", runs["full"], "-o", tmp_path / "one")
    page = (tmp_path / "one" / "report.html").read_text()
    for name in ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"):
        assert f'src="busbw-{name}.png"' in page
        _png_ok(tmp_path / "one" / f"busbw-{name}.png")
    assert "replayed from real captures of other machines (lab)" in page


def test_report_puts_two_runs_side_by_side(runs: dict[str, Path], tmp_path: Path) -> None:
    gpuctl("report", runs["full"], runs["ab"], "-o", tmp_path / "two")
    page = (tmp_path / "two" / "report.html").read_text()
    assert f"<th>{runs['full'].name}</th><th>{runs['ab'].name}</th>" in page
    assert "all_reduce tuned vs default" in page


def test_autotune_keeps_nothing_from_identical_replays(spec_path: Path, tmp_path: Path) -> None:
    done = gpuctl("autotune", spec_path, "-o", tmp_path, "--collectives", "alltoall", "--no-prepare")
    assert "alltoall large: nothing beat the baseline beyond the noise" in done.stdout
    [run_dir] = tmp_path.iterdir()
    evidence = json.loads((run_dir / "autotune.json").read_text())
    assert evidence["failed_runs"] == []
    [selection] = evidence["selections"]
    assert selection["nccl_conf"] == {}
    assert [c["candidate"] for c in selection["choices"]] == [None]
    assert [line for line in (run_dir / "nccl-tuner.conf").read_text().splitlines() if not line.startswith("#")] == []
