"""The nccl-tests parser on every failure class the bench meets, each on a real capture
(tests/captures/INDEX.md lists where each was published and what it holds)."""

from __future__ import annotations

import pytest

from tests.conftest import REPO
from toolkit.bench.nccl_tests import collective, parse_nccl_tests, parse_nccl_tests_runs
from toolkit.errors import ParseError

CAPTURES = REPO / "tests" / "captures"
GATHER_I_SWEEP = CAPTURES / "mixed" / "a100-pcie-2node-gather-trace-roce25g-plus-ib200g-nccl2.16.5.txt"
ALLTOALL_NA = CAPTURES / "mixed" / "h20-vm-2node-2gpu-alltoall-tencent-plugin-roce-bond-nccl2.26.5.txt"
SENDRECV = CAPTURES / "mixed" / "a100-1node-2gpu-sendrecv-info-p2p-direct-nccl2.22.3.txt"
OCI_ONE_SIZE = CAPTURES / "nccl_tests" / "oci-bm-gpu4.8-2node-16xa100-40gb-16x100g-roce-allreduce-10gib.txt"
XE9680 = CAPTURES / "nccl_tests" / "h100-xe9680-2node-16gpu-8x400g-ib-allreduce-mpi-warning-in-devlist.txt"
BLANK_ROW = CAPTURES / "nccl_tests" / "h200-2node-kvm-vm-allreduce-collapsed-busbw-blank-row.txt"
FACTOR3 = CAPTURES / "nccl_tests" / "h200-2node-baremetal-allreduce-1g-16g-factor3.txt"
EIGHT_NODES = CAPTURES / "nccl_tests" / "h100-8node-64gpu-allreduce-1m-8g.txt"
REDUCE_SCATTER_CUT = CAPTURES / "nccl_tests" / "reduce-scatter-2node-4gpu-zero-size-rows-passage-cut-mid-row.txt"
I_SWEEP_OPS_CUT = CAPTURES / "nccl_tests" / "allreduce-i1024-sweep-ops-max-min-rows-only-passage-cut-mid-row.txt"


def test_i_sweep_gather_with_trace_lines_and_no_summary() -> None:
    # `-i 134217728` (step: 134217728(bytes)), NCCL TRACE lines around the table, no Avg line.
    text = GATHER_I_SWEEP.read_text()
    with pytest.raises(ParseError, match="no `# Avg bus bandwidth` line"):
        parse_nccl_tests(text, "gather.txt")
    result = parse_nccl_tests(text, "gather.txt", allow_truncated=True)
    assert (result.truncated, result.failed, result.cut_row_line) == (True, False, None)
    assert result.op == "gather_perf"
    assert collective(result) == "gather"
    assert result.parameters["step"] == "134217728(bytes)"
    assert result.nccl_version == "2.16.5+cuda11.8"
    assert len(result.rows) == 85
    assert (result.rows[0].size_bytes, result.rows[1].size_bytes, result.rows[-1].size_bytes) == (
        134217728, 268435456, 11408506880)
    steps = {b.size_bytes - a.size_bytes for a, b in zip(result.rows, result.rows[1:], strict=False)}
    assert steps == {134217728}
    assert (result.peak_busbw_gbps, result.peak_size_bytes, result.peak_placement) == (23.61, 1610612736, "in-place")
    by_size = {r.size_bytes: r.out_of_place.busbw_gbps for r in result.rows}
    assert by_size[268435456] == 20.87  # the out-of-place peak


def test_alltoall_with_wrong_not_available_in_place() -> None:
    result = parse_nccl_tests(ALLTOALL_NA.read_text(), "h20.txt", allow_truncated=True)
    assert result.truncated
    assert not result.failed
    assert len(result.rows) == 13
    assert (result.rows[0].size_bytes, result.rows[-1].size_bytes) == (1048576, 4294967296)
    assert {r.redop for r in result.rows} == {"none"}
    assert all(r.out_of_place.wrong == 0 for r in result.rows)
    assert all(r.in_place is not None and r.in_place.wrong is None for r in result.rows)  # `N/A`
    first = result.rows[0]
    assert (first.out_of_place.time_us, first.out_of_place.algbw_gbps, first.out_of_place.busbw_gbps) == (
        52.94, 19.81, 14.85)
    last = result.rows[-1]
    assert last.in_place is not None
    assert (last.out_of_place.busbw_gbps, last.in_place.busbw_gbps) == (50.25, 50.37)
    assert result.ranks == 4
    assert result.nccl_version == "2.26.5+cuda12.2"


def test_sendrecv_with_info_lines_and_na_in_place() -> None:
    result = parse_nccl_tests(SENDRECV.read_text(), "sendrecv.txt")
    assert not result.failed
    assert len(result.rows) == 29
    assert all(r.in_place is not None and r.in_place.wrong is None for r in result.rows)
    by_size = {r.size_bytes: r.out_of_place.busbw_gbps for r in result.rows}
    assert by_size[268435456] == 73.44
    assert (result.peak_busbw_gbps, result.peak_placement) == (73.83, "in-place")
    assert result.avg_busbw_gbps == 24.3607


def test_single_size_run_with_byte_step() -> None:
    result = parse_nccl_tests(OCI_ONE_SIZE.read_text(), "oci.txt")
    assert result.op == "all_reduce_perf"
    assert result.parameters["step"] == "1048576(bytes)"
    assert result.parameters["warmup iters"] == "1"
    assert [r.size_bytes for r in result.rows] == [10737418240]
    row = result.rows[0]
    assert (row.out_of_place.algbw_gbps, row.out_of_place.busbw_gbps) == (102.27, 191.76)
    assert row.in_place is not None
    assert row.in_place.busbw_gbps == 191.75
    assert (result.ranks, result.avg_busbw_gbps) == (16, 191.752)


def test_mpi_help_lines_inside_the_device_list() -> None:
    result = parse_nccl_tests(XE9680.read_text(), "xe9680.txt")
    assert result.ranks == 16
    assert result.hosts == ["bm-h100-01", "bm-h100-02"]
    assert [d.rank for d in result.devices] == list(range(16))
    assert result.nccl_version == "2.26.2+cuda12.8"
    assert len(result.rows) == 32
    assert (result.peak_busbw_gbps, result.peak_algbw_gbps, result.peak_size_bytes) == (469.21, 250.24, 17179869184)
    assert result.avg_busbw_gbps == 139.56


def test_factor_3_sweep_and_a_row_holding_one_space() -> None:
    factor3 = parse_nccl_tests(FACTOR3.read_text(), "f3.txt")
    assert factor3.parameters["step"] == "3(factor)"
    assert [r.size_bytes for r in factor3.rows] == [1073741824, 3221225472, 9663676416]
    assert (factor3.peak_busbw_gbps, factor3.avg_busbw_gbps) == (488.81, 475.782)
    blank = parse_nccl_tests(BLANK_ROW.read_text(), "vm.txt")
    assert len(blank.rows) == 6  # 7 table lines, one of them a single space
    assert (blank.peak_busbw_gbps, blank.peak_size_bytes, blank.avg_busbw_gbps) == (57.78, 2717908992, 27.5091)


def test_in_place_peak_differs_from_out_of_place_peak() -> None:
    result = parse_nccl_tests(EIGHT_NODES.read_text(), "8node.txt")
    assert result.ranks == 64
    assert (result.peak_busbw_gbps, result.peak_size_bytes, result.peak_placement) == (321.03, 4294967296, "in-place")
    by_size = {r.size_bytes: r for r in result.rows}
    assert by_size[8388608].out_of_place.time_us == 1272.4
    assert by_size[8388608].out_of_place.busbw_gbps == 12.98


def test_run_cut_in_the_middle_of_a_row() -> None:
    # nccl-tests #128 (stored passage): reduce_scatter, five 0-byte rows, cut inside the 512 B row.
    text = REDUCE_SCATTER_CUT.read_text()
    with pytest.raises(ParseError, match=r"output truncated\? \(the last row, line 12, stops part-way\)"):
        parse_nccl_tests(text, "rs.txt")
    result = parse_nccl_tests(text, "rs.txt", allow_truncated=True)
    assert (result.truncated, result.failed, result.cut_row_line) == (True, False, 12)
    assert [r.size_bytes for r in result.rows] == [0, 0, 0, 0, 0, 128, 256]
    assert [r.out_of_place.time_us for r in result.rows[:5]] == [5.70, 5.92, 5.52, 5.53, 5.57]
    assert (result.peak_busbw_gbps, result.peak_size_bytes) == (0.01, 256)
    assert result.avg_busbw_gbps is None


def test_i_sweep_of_several_ops_rows_only_cut_mid_row() -> None:
    # nccl-tests #167 (stored passage): `-i 1024` rows of the max and min ops, no header.
    result = parse_nccl_tests(I_SWEEP_OPS_CUT.read_text(), "i.txt", allow_truncated=True)
    assert (result.truncated, result.cut_row_line) == (True, 13)
    assert result.redops == ["max", "min"]
    assert [r.size_bytes for r in result.rows if r.redop == "max"] == [199680, 200704, 201728, 202752, 203776, 204800]
    assert [r.size_bytes for r in result.rows if r.redop == "min"] == [196608, 197632, 198656, 199680, 200704]
    assert (result.peak_busbw_gbps, result.peak_size_bytes, result.peak_placement) == (3.08, 204800, "in-place")


def test_every_capture_reads_or_fails_clearly() -> None:
    # No capture may raise anything but ParseError, and every table read in tolerant mode.
    for path in sorted([*(CAPTURES / "nccl_tests").glob("*.txt"), *(CAPTURES / "mixed").glob("*.txt")]):
        runs = parse_nccl_tests_runs(path.read_text(), path.name, allow_truncated=True)
        assert runs, path.name


# Complete runs of every collective `gpuctl bench` runs by default (issue 13).
ALL_GATHER_1NODE = CAPTURES / "nccl_tests" / "h100-1node-8gpu-g8-allgather-ring-8-8g-four-zero-size-rows-nccl2.26.2.txt"
REDUCE_SCATTER_1NODE = (CAPTURES / "nccl_tests"
                        / "h100-1node-8gpu-g8-reduce-scatter-ring-8-8g-four-zero-size-rows-nccl2.26.2.txt")
ALL_REDUCE_1NODE = CAPTURES / "nccl_tests" / "h100-1node-8gpu-g8-allreduce-ring-8-8g-same-host-as-allgather.txt"
ALLTOALL_THEN_SENDRECV = CAPTURES / "nccl_tests" / "h100-2node-16gpu-alltoall-then-sendrecv-double-32m-16g-two-runs.txt"


def test_all_gather_8_to_8g_on_one_process_with_eight_gpus() -> None:
    result = parse_nccl_tests(ALL_GATHER_1NODE.read_text(), "ag.txt")
    assert (result.op, collective(result)) == ("all_gather_perf", "all_gather")
    assert (result.nccl_tests_version, result.nccl_headers, result.nccl_version) == ("2.17.9", "22602", None)
    assert result.parameters["nGpus"] == "8"
    assert (result.ranks, result.hosts) == (8, ["gpu-dp-2jvzl-pqq7p"])
    assert {d.pid for d in result.devices} == {1583987}  # one process drives all 8 GPUs (-g 8)
    assert len(result.rows) == 31
    # 8, 16, 32 and 64 B over 8 ranks are less than one float per rank: printed as size 0
    assert [r.size_bytes for r in result.rows[:5]] == [0, 0, 0, 0, 128]
    assert result.rows[-1].size_bytes == 8589934592
    assert (result.dtypes, result.redops) == (["float"], ["none"])
    assert (result.peak_busbw_gbps, result.peak_size_bytes, result.peak_placement) == (363.38, 8589934592, "in-place")
    assert result.peak_algbw_gbps == 415.29
    assert max(r.out_of_place.busbw_gbps for r in result.rows) == 357.90
    assert (result.avg_busbw_gbps, result.out_of_bounds) == (110.98, 0)
    assert (result.truncated, result.failed, result.errors) == (False, False, [])


def test_reduce_scatter_8_to_8g_same_host() -> None:
    result = parse_nccl_tests(REDUCE_SCATTER_1NODE.read_text(), "rs.txt")
    assert (result.op, collective(result)) == ("reduce_scatter_perf", "reduce_scatter")
    assert (result.ranks, result.hosts) == (8, ["gpu-dp-2jvzl-pqq7p"])
    assert len(result.rows) == 31
    assert [r.size_bytes for r in result.rows[:5]] == [0, 0, 0, 0, 128]
    assert result.redops == ["sum"]
    assert (result.peak_busbw_gbps, result.peak_size_bytes, result.peak_placement) == (364.13, 8589934592, "in-place")
    assert result.peak_algbw_gbps == 416.15
    assert result.rows[-1].out_of_place.busbw_gbps == 363.18
    assert result.avg_busbw_gbps == 111.432
    assert (result.truncated, result.failed) == (False, False)


def test_all_reduce_ring_same_host_dip_at_512k() -> None:
    result = parse_nccl_tests(ALL_REDUCE_1NODE.read_text(), "ar.txt")
    assert (result.op, collective(result)) == ("all_reduce_perf", "all_reduce")
    assert (result.ranks, len(result.rows)) == (8, 31)
    assert [r.size_bytes for r in result.rows[:2]] == [8, 16]  # all-reduce sizes are not split per rank
    by_size = {r.size_bytes: r for r in result.rows}
    # at 512 KiB the out-of-place half took 69.21 us against 44.23 in place: a real dip, kept as printed
    assert by_size[524288].out_of_place.busbw_gbps == 13.26
    assert by_size[524288].in_place is not None
    assert by_size[524288].in_place.busbw_gbps == 20.74
    assert (result.peak_busbw_gbps, result.peak_size_bytes, result.peak_placement) == (368.62, 8589934592, "in-place")
    assert result.peak_algbw_gbps == 210.64
    assert result.avg_busbw_gbps == 122.955
    assert (result.truncated, result.failed) == (False, False)


def test_two_runs_in_one_log_alltoall_then_sendrecv() -> None:
    text = ALLTOALL_THEN_SENDRECV.read_text()
    # read as one run it would hold 32 "ranks" and 20 rows named sendrecv: refused, with the line
    with pytest.raises(ParseError, match="second nccl-tests run starts here") as raised:
        parse_nccl_tests(text, "two.txt")
    assert raised.value.line == 41
    alltoall, sendrecv = parse_nccl_tests_runs(text, "two.txt")

    assert (alltoall.op, collective(alltoall)) == ("alltoall_perf", "alltoall")
    assert (alltoall.ranks, alltoall.hosts) == (16, ["cnode4-006", "cnode4-007"])
    assert (alltoall.dtypes, alltoall.redops) == (["double"], ["none"])
    assert [r.size_bytes for r in alltoall.rows] == [33554432 * 2**i for i in range(10)]
    assert (alltoall.rows[0].line, alltoall.rows[-1].line) == (26, 35)
    assert all(r.in_place is not None and r.in_place.wrong is None for r in alltoall.rows)  # `N/A`
    assert (alltoall.peak_busbw_gbps, alltoall.peak_size_bytes, alltoall.peak_placement) == (
        75.34, 17179869184, "in-place")
    assert alltoall.peak_algbw_gbps == 80.36
    assert max(r.out_of_place.busbw_gbps for r in alltoall.rows) == 75.26
    assert alltoall.avg_busbw_gbps == 72.4265
    assert (alltoall.truncated, alltoall.failed) == (False, False)

    assert (sendrecv.op, collective(sendrecv)) == ("sendrecv_perf", "sendrecv")
    assert (sendrecv.ranks, sendrecv.hosts) == (16, ["cnode4-006", "cnode4-007"])
    assert sendrecv.redops == ["sum"]
    assert len(sendrecv.rows) == 10
    assert (sendrecv.rows[0].line, sendrecv.rows[-1].line) == (65, 74)
    assert all(r.out_of_place.busbw_gbps == r.out_of_place.algbw_gbps for r in sendrecv.rows)  # busbw = algbw
    # 28.84 first at 8 GiB out-of-place; the later ties do not move the peak
    assert (sendrecv.peak_busbw_gbps, sendrecv.peak_size_bytes, sendrecv.peak_placement) == (
        28.84, 8589934592, "out-of-place")
    assert sendrecv.avg_busbw_gbps == 28.6299
    assert (sendrecv.truncated, sendrecv.failed) == (False, False)


REPLAY = REPO / "examples" / "captures" / "nccl-tests-replay"


@pytest.mark.parametrize(("name", "op", "ranks", "rows", "avg"), [
    ("all_reduce_perf", "all_reduce", 16, 32, 139.56),
    ("all_gather_perf", "all_gather", 8, 31, 110.98),
    ("reduce_scatter_perf", "reduce_scatter", 8, 31, 111.432),
    ("alltoall_perf", "alltoall", 16, 10, 72.4265),
    ("sendrecv_perf", "sendrecv", 16, 10, 28.6299),
])
def test_replay_bundle_holds_one_complete_run_per_collective(
        name: str, op: str, ranks: int, rows: int, avg: float) -> None:
    # The lab's stand-in `<name>` binary replays `<name>.txt`: one whole run of that collective.
    path = REPLAY / f"{name}.txt"
    assert path.read_text().startswith("# source: ")
    result = parse_nccl_tests(path.read_text(), path.name)
    assert (collective(result), result.ranks, len(result.rows), result.avg_busbw_gbps) == (op, ranks, rows, avg)
    assert (result.truncated, result.failed) == (False, False)
