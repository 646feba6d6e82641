"""From executed runs to results.json and the report: a real capture through the bench's own path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO
from toolkit.bench.launch import PlannedRun, RankCheck, parse_rank_reports
from toolkit.bench.report import Run, rail_usage, render_html, render_markdown
from toolkit.bench.results import Results, RunMeta
from toolkit.bench.run import Executed, series_of
from toolkit.bench.verdict import judge

pytestmark = pytest.mark.unit

H20 = REPO / "tests/captures/mixed/h20-vm-2node-2gpu-alltoall-tencent-plugin-roce-bond-nccl2.26.5.txt"
RANKS = "\n".join(
    f"gpuctl-rank host={host} rank={rank} local_rank={rank % 2} gpu={rank % 2} numa=0 bind=numa0:cpus=0-95:numactl "
    "variant=tuned conf=none env=NCCL_DEBUG=INFO;NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH"
    for rank, host in enumerate(["vm-host40", "vm-host40", "vm-host38", "vm-host38"]))


def _executed(tmp_path: Path, stdout: str | Path, rc: int | None = 0) -> Executed:
    out, err = tmp_path / "alltoall-tuned-0.txt", tmp_path / "alltoall-tuned-0.err"
    if isinstance(stdout, Path):
        shutil.copyfile(stdout, out)
    else:
        out.write_text(stdout)
    err.write_text(RANKS + "\n")
    return Executed(run=PlannedRun("alltoall", "tuned", 0), command="/etc/gpuctl/bench/mpirun -np 4 ...",
                    stdout=out, stderr=err, seconds=1.0, rc=rc, reports=parse_rank_reports(err.read_text()),
                    check=RankCheck())


def test_a_real_interleaved_output_becomes_a_series_with_its_rails(tmp_path: Path) -> None:
    series = series_of(_executed(tmp_path, H20), tmp_path, None)
    assert series.collective == "alltoall"
    assert series.source == "alltoall-tuned-0.txt"
    assert not series.failed
    assert series.log_check is not None
    assert series.log_check.rails == {
        "vm-host38": ["NET/NCCL RDMA Plugin v6/0 (mlx5_bond_6)", "NET/NCCL RDMA Plugin v6/1 (mlx5_bond_7)"],
        "vm-host40": ["NET/NCCL RDMA Plugin v6/0 (mlx5_bond_6)", "NET/NCCL RDMA Plugin v6/1 (mlx5_bond_7)"],
    }
    assert series.launch is not None
    assert [(r.host, r.rank, r.gpu) for r in series.launch.ranks] == [
        ("vm-host40", 0, 0), ("vm-host40", 1, 1), ("vm-host38", 2, 0), ("vm-host38", 3, 1)]
    results = Results(meta=RunMeta(cluster="c", provider="tencentcloud", region="ap-shanghai",
                                   instance_type="HCCPNV5", nodes=2, gpus_per_node=2, nccl_version=None,
                                   started_at=None, settings=[], price=None), series=[series])
    run = Run(label="h20", results=results)
    assert list(rail_usage(run)) == ["alltoall"]
    page = render_html([run], {})
    assert "alltoall rail usage per node (NCCL log)" in page
    assert "<tr><td>vm-host38</td><td>NET/NCCL RDMA Plugin v6/0 (mlx5_bond_6), NET/NCCL RDMA Plugin v6/1 " \
           "(mlx5_bond_7)</td></tr>" in page
    assert "| vm-host40 | NET/NCCL RDMA Plugin v6/0 (mlx5_bond_6)" in render_markdown([run], {})


def test_a_run_without_a_table_is_a_failed_series_never_a_zero(tmp_path: Path) -> None:
    executed = _executed(tmp_path, "bash: /opt/gpuctl/nccl-tests/bin/alltoall_perf: No such file or directory\n",
                         rc=127)
    series = series_of(executed, tmp_path, None)
    assert series.failed
    assert series.peak_busbw_gbps is None
    assert series.points == []
    assert series.errors == [
        "mpirun exited 127",
        "no nccl-tests table in the output: bash: /opt/gpuctl/nccl-tests/bin/alltoall_perf: No such file or directory",
    ]
    results = Results(meta=RunMeta(cluster="c", provider="local", region=None, instance_type="lab", nodes=2,
                                   gpus_per_node=2, nccl_version=None, started_at=None, settings=[], price=None),
                      series=[series])
    verdict = judge(results)
    assert not verdict.ok
    assert verdict.problems[0].startswith("alltoall tuned #0: failed: mpirun exited 127")


def test_a_killed_run_says_so(tmp_path: Path) -> None:
    series = series_of(_executed(tmp_path, "", rc=None), tmp_path, None)
    assert series.errors[0] == "killed at the time limit of the run"
    assert series.failed
