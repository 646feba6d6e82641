"""nccl-tests tables as real pastes carry them (issue class 8): launcher prefixes, stripped `#`,
no header or summary, INFO lines between rows, several runs in one paste. Real captures in
tests/captures/nccl_tests (line 1 names each source); the figures are written out from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.bench.nccl_tests import collective_basis, looks_like_nccl_tests, parse_nccl_tests_runs

RUNS = Path(__file__).resolve().parents[1] / "captures" / "nccl_tests"


def _runs(name: str) -> list:  # type: ignore[type-arg]
    return parse_nccl_tests_runs((RUNS / name).read_text(), name, allow_truncated=True)


@pytest.mark.parametrize(("name", "ranks", "hosts", "rows", "peak", "avg"), [
    # Open MPI --tag-output: every line "[1,0]<stdout>:", INFO lines inside the table, 2 x T4 over EFA
    ("tag-output-1-0-stdout-prefix-t4-2node-efa-aws-libfabric-allreduce-info-interleaved-nccl2.12.7-aws-do-eks.txt",
     2, ["test-nccl-efa-worker-0", "test-nccl-efa-worker-1"], 31, 3.15, 1.15327),
    # <stdout> and <stderr> prefixes mixed; 2 ranks on one RTX 5090 host
    ("tag-output-1-0-stdout-stderr-prefix-rtx5090-2rank-1gpu-socket-allreduce-mpi-nccl-tests-2.18.0-nccl-ebpf.txt",
     2, ["lab"], 8, 2.31, 1.57614),
    # srun --label: every line " 0: "; 16 ranks, #wrong N/A (validation 0)
    ("srun-label-space-0-colon-prefix-h100-2node-16rank-allreduce-validation-0-wrong-na-nccl-tests-issue290.txt",
     16, ["node005", "node007"], 11, 167.87, 142.735),
    # no `# nThread` line: starts at `# Using devices`
    ("no-nthread-line-no-trailing-hash-srun-label-h100-2node-ring-allreduce-nccl-tests-issue290-comment.txt",
     16, ["node005", "node007"], 11, 102.27, 85.5294),
    # 13 INFO lines between the column header and the first row
    ("info-lines-between-header-and-rows-sendrecv-h100-2node-4gpu-roce-mlx5_5-pxn-no-collective-name-moc-roce-"
     "testing.txt", 8, ["MOC-R4PCC04U37", "MOC-R4PCC04U35"], 13, 5.86, 5.80752),
])
def test_a_prefixed_or_header_poor_table_is_read_as_one_run(name: str, ranks: int, hosts: list[str], rows: int,
                                                             peak: float, avg: float) -> None:
    assert looks_like_nccl_tests((RUNS / name).read_text())
    [run] = _runs(name)
    assert (run.ranks, run.hosts, len(run.rows), run.peak_busbw_gbps, run.avg_busbw_gbps) == (
        ranks, hosts, rows, peak, avg)
    assert not run.failed


def test_readme_runs_without_nthread_lines_are_three_runs_not_one() -> None:
    # coreweave/nccl-tests README: three GB200 all_reduce runs, each showing only its last device line
    name = "gb200-nvl72-nvidia-graphics-device-vs-nvidia-gb200-device-lines-3-runs-72-144-1440-ranks-coreweave-nccl-" \
           "tests-readme.txt"
    runs = _runs(name)
    assert [(r.ranks, len(r.devices), r.peak_busbw_gbps, r.avg_busbw_gbps) for r in runs] == [
        (72, 1, 846.82, 745.53), (144, 1, 820.36, 688.487), (1440, 1, 405.74, 297.808)]
    assert [r.devices[0].name for r in runs] == ["NVIDIA Graphics Device", "NVIDIA Graphics Device", "NVIDIA GB200"]


def test_two_headers_back_to_back_are_two_runs_and_a_cut_device_line_is_left_out() -> None:
    # nccl-tests #213: a build without MPI on 2 hosts prints two headers; the paste stops in the device list
    first, second = _runs("two-interleaved-nthread-headers-non-mpi-build-2-hosts-h800-cut-in-devlist-nccl-tests-"
                          "issue213.txt")
    assert (first.ranks, second.ranks, second.hosts) == (0, 4, ["hw14"])
    [cut] = _runs("b200-2node-nvidia-b200-device-lines-vm-bus-00-05-0c-nccl-tests-2.19.6-cut-in-rank8-nccl-tests-"
                  "issue389.txt")
    assert (cut.ranks, cut.hosts) == (8, ["node1"])
    assert cut.notes == ["line 16: the device line is cut (' node2  device  0 [0000:00:05] NVIDIA B2'): left out"]


@pytest.mark.parametrize(("name", "expected"), [
    ("srun-label-space-0-colon-prefix-h100-2node-16rank-allreduce-validation-0-wrong-na-nccl-tests-issue290.txt",
     # 2(16-1)/16 = 1.875, printed figures rounded to 0.01 GB/s give 1.87 and 1.88
     ("all_reduce", "inferred: busbw/algbw = 1.87, 1.88 over 16 ranks = 2(n-1)/n with a reduction: an all-reduce")),
    ("tag-output-1-0-stdout-stderr-prefix-rtx5090-2rank-1gpu-socket-allreduce-mpi-nccl-tests-2.18.0-nccl-ebpf.txt",
     ("all_reduce", "named by the output (all_reduce_perf_mpi)")),
    ("b200-2node-16rank-nvidia-b200-device-lines-gke-gib-allgather-nccl2.26.6-dranet-docs.txt",
     (None, "inferred: busbw/algbw = 0.93, 0.94 over 16 ranks = (n-1)/n without a reduction: an all-gather or "
            "an alltoall, the table cannot tell")),
])
def test_the_collective_is_named_or_inferred_and_says_which(name: str, expected: tuple[str | None, str]) -> None:
    [run] = _runs(name)
    assert collective_basis(run) == expected
