"""nccl-tests result parser on the real outputs in shared/fixtures/nccl_tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.bench.nccl_tests import looks_like_nccl_tests, parse_nccl_tests
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
