"""nccl-tests result parser on real outputs: shared/fixtures/nccl_tests and tests/captures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO
from toolkit.bench.nccl_tests import collective, looks_like_nccl_tests, parse_nccl_tests, parse_nccl_tests_runs
from toolkit.errors import ParseError


def _text(shared_fixtures: Path, name: str) -> str:
    return (shared_fixtures / "nccl_tests" / name).read_text()


def test_a3mega_two_nodes_allreduce(shared_fixtures: Path) -> None:
    text = _text(shared_fixtures, "gcp-a3mega-2node-16xh100-allreduce.txt")
    assert looks_like_nccl_tests(text)
    result = parse_nccl_tests(text, "a3mega.txt")
    assert not result.failed
    assert result.op == "all_reduce_perf"  # from the pasted mpirun command line
    assert result.ranks == 16
    assert result.hosts == ["ztan-mig-235z", "ztan-mig-gq73"]
    assert (result.dtypes, result.redops) == (["float"], ["sum"])
    assert len(result.rows) == 31
    assert (result.rows[0].size_bytes, result.rows[-1].size_bytes) == (8, 8589934592)
    assert result.peak_busbw_gbps == 338.82
    assert result.peak_algbw_gbps == 180.71
    assert result.peak_size_bytes == 8589934592
    assert result.peak_placement == "out-of-place"
    assert result.rows[-1].in_place is not None
    assert result.rows[-1].in_place.busbw_gbps == 337.35
    assert result.avg_busbw_gbps == 70.742
    assert result.rows[1].out_of_place.time_us == 123.2  # ~123 us TCP-based latency floor
    assert result.devices[8].bus_id == "0000:04:00"
    # busbw = algbw x 2(n-1)/n with n = 16
    assert round(180.71 * 2 * 15 / 16, 2) == pytest.approx(result.peak_busbw_gbps, abs=0.01)


def test_a3high_one_node_allreduce(shared_fixtures: Path) -> None:
    result = parse_nccl_tests(_text(shared_fixtures, "gcp-a3high-1node-8xh100-allreduce.txt"), "a3high")
    assert not result.failed
    assert result.op is None  # this output does not name the binary
    assert result.ranks == 8
    assert {d.pid for d in result.devices} == {181}
    assert result.hosts == ["gke-hypercomputer-a3-a3-h100-dws-pool-16664d9c-hv7m"]
    assert result.nccl_version == "2.22.3+cuda12.6"  # printed after the device list
    assert result.parameters["nGpus"] == "8"
    assert result.parameters["maxBytes"] == "8589934592"
    assert result.parameters["warmup iters"] == "5"
    assert len(result.rows) == 31
    last = result.rows[-1]
    assert (last.out_of_place.algbw_gbps, last.out_of_place.busbw_gbps) == (274.24, 479.93)
    assert last.in_place is not None
    assert (last.in_place.algbw_gbps, last.in_place.busbw_gbps) == (274.25, 479.93)
    assert (result.peak_busbw_gbps, result.peak_size_bytes, result.peak_placement) == (
        479.93, 8589934592, "out-of-place")
    assert result.avg_busbw_gbps == 145.47  # the line has a trailing space
    # the time column narrows its decimals as it grows
    times = {r.size_bytes: r.out_of_place.time_us for r in result.rows}
    assert times[8] == 33.66
    assert times[16777216] == 125.8
    assert times[268435456] == 1125.1
    assert times[4294967296] == 15797.0
    assert times[32] == 53.81  # the one small-message outlier


def test_h800_alltoall_failure_is_failed_not_zero(shared_fixtures: Path) -> None:
    result = parse_nccl_tests(_text(shared_fixtures, "h800-2node-alltoall-devapi-ima-failure.txt"), "h800")
    assert result.failed
    assert result.nccl_tests_version == "2.17.6"
    assert (result.nccl_headers, result.nccl_library) == ("22807", "22807")
    assert result.op == "alltoall_perf"
    assert result.nccl_version == "2.28.7+cuda13.0"
    assert result.parameters["step"] == "0(bytes)"
    assert result.parameters["iters"] == "1"
    assert result.ranks == 16
    assert [d.host for d in result.devices] == ["node0"] * 8 + ["node1"] * 8
    assert result.devices[0].bus_id == "0000:19:00"
    assert result.rows == []
    assert result.failed_at_size_bytes == 2097152
    assert result.avg_busbw_gbps is None
    assert result.peak_busbw_gbps is None
    assert len(result.errors) == 7
    assert "an illegal memory access was encountered" in result.errors[0]
    assert result.errors[1] == "line 29: .. node0 pid 62767: Test failure common.cu:519"


def test_truncated_output_is_refused(shared_fixtures: Path) -> None:
    lines = _text(shared_fixtures, "gcp-a3high-1node-8xh100-allreduce.txt").splitlines()
    cut = "\n".join(lines[:30])  # stops in the middle of the table, no error printed
    with pytest.raises(ParseError, match="no `# Avg bus bandwidth` line") as caught:
        parse_nccl_tests(cut, "cut.txt")
    assert (caught.value.source, caught.value.line) == ("cut.txt", 30)


def test_malformed_row_names_the_line(shared_fixtures: Path) -> None:
    text = _text(shared_fixtures, "gcp-a3high-1node-8xh100-allreduce.txt")
    broken = text.replace("   125.8  133.41  233.48", "   125.8  133.41  oops!!", 1)
    with pytest.raises(ParseError, match="cannot read result cells") as caught:
        parse_nccl_tests(broken, "b.txt")
    assert caught.value.line == 39
    short = text.replace("   125.8  133.41  233.48      0", "   125.8", 1)
    with pytest.raises(ParseError, match="result row has 10 cells") as caught:
        parse_nccl_tests(short, "b.txt")
    assert caught.value.line == 39


def test_wrong_values_mark_the_run_failed(shared_fixtures: Path) -> None:
    text = _text(shared_fixtures, "gcp-a3high-1node-8xh100-allreduce.txt")
    bad = text.replace("# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED")
    result = parse_nccl_tests(bad, "w.txt")
    assert result.failed
    assert result.out_of_bounds == 3


def test_not_nccl_tests_output() -> None:
    with pytest.raises(ParseError, match="not nccl-tests output"):
        parse_nccl_tests("hello\n", "x.txt")


CAPTURES = REPO / "tests" / "captures"
L40S_STRIPPED = CAPTURES / "nccl_tests" / "l40s-2node-1gpu-each-socket-ib-disabled-hash-stripped-cut-at-16m.txt"
SHARP_A100 = CAPTURES / "mixed" / "a100-4node-2gpu-sharp-collnet-fallback-allreduce-info-nccl2.23.4.txt"
TENCENT_H20 = CAPTURES / "mixed" / "h20-vm-2node-2gpu-alltoall-tencent-plugin-roce-bond-nccl2.26.5.txt"
SENDRECV_A100 = CAPTURES / "mixed" / "a100-1node-2gpu-sendrecv-info-p2p-direct-nccl2.22.3.txt"


def test_header_without_hashes_is_still_nccl_tests() -> None:
    # nccl-tests issue 323, posted outside a code block: every leading "#" is gone, and the table
    # stops at 16 MiB without a summary line.
    text = L40S_STRIPPED.read_text()
    assert looks_like_nccl_tests(text)
    with pytest.raises(ParseError, match="no `# Avg bus bandwidth` line") as caught:
        parse_nccl_tests(text, "l40s.txt")
    assert caught.value.line == 37
    result = parse_nccl_tests(text, "l40s.txt", allow_truncated=True)
    assert result.truncated
    assert not result.failed
    assert result.op == "all_reduce_perf"  # from the pasted mpirun command line
    assert result.parameters["maxBytes"] == "17179869184"
    assert [(d.rank, d.host, d.name) for d in result.devices] == [
        (0, "nvidiatools-29-workload", "NVIDIA L40S"), (1, "nvidiatools-30-workload", "NVIDIA L40S")]
    assert result.nccl_version == "2.27.3+cuda12.9"
    assert (len(result.rows), result.rows[0].line, result.rows[-1].line) == (22, 16, 37)
    assert (result.peak_busbw_gbps, result.peak_size_bytes, result.peak_placement) == (7.88, 16777216, "out-of-place")


def test_table_with_nccl_log_lines_inside() -> None:
    # nccl-tests issue 311: NCCL INFO "Destroy COMPLETE" lines between the last row and the
    # summary, init lines before the table: skipped here, read by the NCCL log parser.
    text = SHARP_A100.read_text()
    assert looks_like_nccl_tests(text)
    result = parse_nccl_tests(text, "a100.txt")
    assert not result.failed
    assert not result.truncated
    assert result.ranks == 8
    assert result.hosts == ["gpu34", "gpu36", "gpu40", "gpu41"]
    assert (len(result.rows), result.rows[-1].size_bytes) == (15, 4294967296)
    assert (result.peak_busbw_gbps, result.peak_size_bytes, result.peak_placement) == (23.1, 16777216, "in-place")
    assert result.avg_busbw_gbps == 8.69534
    assert result.out_of_bounds == 0


def test_collective_from_the_table_when_the_output_does_not_name_it(shared_fixtures: Path) -> None:
    a3high = parse_nccl_tests(_text(shared_fixtures, "gcp-a3high-1node-8xh100-allreduce.txt"), "a3high")
    assert a3high.op is None
    assert collective(a3high) == "all_reduce"
    sharp = parse_nccl_tests(SHARP_A100.read_text(), "a100.txt")
    assert sharp.op is None
    assert collective(sharp) == "all_reduce"
    # alltoall: no reduction op; 2-rank sendrecv: busbw = algbw, as a 2-rank all-reduce would be
    assert collective(parse_nccl_tests(TENCENT_H20.read_text(), "h20", allow_truncated=True)) is None
    assert collective(parse_nccl_tests(SENDRECV_A100.read_text(), "sendrecv")) is None
    h800 = parse_nccl_tests(_text(shared_fixtures, "h800-2node-alltoall-devapi-ima-failure.txt"), "h800")
    assert collective(h800) == "alltoall"  # named by "# Collective test starting: alltoall_perf"


def test_several_runs_in_one_file(shared_fixtures: Path) -> None:
    # Two real outputs one after the other, as `all_reduce_perf ...; all_reduce_perf ...` leaves them.
    first = _text(shared_fixtures, "gcp-a3high-1node-8xh100-allreduce.txt")
    second = _text(shared_fixtures, "gcp-a3mega-2node-16xh100-allreduce.txt")
    runs = parse_nccl_tests_runs(first + second, "both.txt")
    assert [(r.ranks, r.peak_busbw_gbps) for r in runs] == [(8, 479.93), (16, 338.82)]
    offset = len(first.splitlines())
    assert runs[1].rows[0].line == offset + parse_nccl_tests(second, "x").rows[0].line
    assert [r.op for r in runs] == [None, "all_reduce_perf"]


CRUSOE_ROWS = CAPTURES / "nccl_tests" / "h100-crusoe-2node-16gpu-nvlstree-rows-only-allreduce.txt"
CRUSOE_ONE_RANK = CAPTURES / "nccl_tests" / "h100-crusoe-non-mpi-build-16-single-rank-runs-busbw-zero.txt"


def test_rows_posted_without_their_header() -> None:
    # nccl-tests issue 294: only the rows, the NCCL "Destroy COMPLETE" lines and the summary.
    result = parse_nccl_tests(CRUSOE_ROWS.read_text(), "crusoe.txt")
    assert not result.failed
    assert [r.size_bytes for r in result.rows] == [134217728, 268435456, 536870912, 1073741824, 2147483648]
    assert (result.rows[0].type, result.rows[0].redop, result.rows[0].root) == ("float", "sum", -1)
    assert (result.peak_busbw_gbps, result.peak_size_bytes, result.peak_placement) == (444.71, 1073741824, "in-place")
    assert result.avg_busbw_gbps == 406.034
    assert (result.devices, result.ranks) == ([], 0)


def test_one_rank_runs_are_failed_not_zero() -> None:
    # nccl-tests issue 294: all_reduce_perf built without MPI=1, started by mpirun -np 16: sixteen
    # 1-rank tests, busbw 0.00 everywhere, "Avg bus bandwidth : 0".
    result = parse_nccl_tests(CRUSOE_ONE_RANK.read_text(), "one-rank.txt")
    assert result.failed
    assert result.avg_busbw_gbps == 0.0
    assert len(result.rows) == 24
    assert result.errors == [
        "busbw is 0 in every row while algbw reaches 7.01792e+06 GB/s: each process ran as a 1-rank "
        "communicator, which measures no link (an nccl-tests binary built without MPI=1 started by "
        "mpirun runs one such test per process)",
        # the sixteen processes' rows come out of order (issue class: interleaved runs)
        "line 6: the size goes back to 268435456 under the same type, op and root, and not to the sweep's first "
        "size: rows of more than one run are interleaved, so no figure here is one run's"]
