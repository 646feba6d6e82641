"""check_log on the real NCCL logs, and `gpuctl check-log` exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolkit.cli import main
from toolkit.errors import EXIT_CHECK_FAILED, EXIT_PARSE
from toolkit.topology.log_check import check_log
from toolkit.topology.model import Nic, Rail, Topology
from toolkit.topology.nccl_log import parse_nccl_log

# The h100 host's 8 rails, written out from shared/fixtures INDEX (topo numaoff + ibdev2netdev):
# GPU0->mlx5_0, GPU1->mlx5_1, GPU2->mlx5_2, GPU3->mlx5_5, GPU4->mlx5_6, GPU5->mlx5_7,
# GPU6->mlx5_8, GPU7->mlx5_11, all PIX.
H100_RAILS = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_11"]
H100_TOPOLOGY = Topology(
    nics=[Nic(name=f"mlx5_{i}", port=1, state="PORT_ACTIVE") for i in range(12)],
    rails=[Rail(nic=nic, gpus=[gpu], distance="PIX") for gpu, nic in enumerate(H100_RAILS)],
)


def _log(shared_fixtures: Path, name: str) -> Path:
    return shared_fixtures / "nccl_log" / name


def test_h100_single_rail_is_an_error_with_the_topology(shared_fixtures: Path) -> None:
    summary = parse_nccl_log(_log(shared_fixtures, "h100-2node-roce-pxn-ranks8-15.txt").read_text())
    [finding] = check_log(summary, H100_TOPOLOGY)
    assert (finding.severity, finding.code) == ("error", "single-rail")
    assert "NET/IB/0" in finding.message
    assert "8 rail NICs" in finding.message
    assert finding.lines == [105, 106, 107, 108, 110, 111, 112, 113,
                             161, 162, 163, 164, 165, 166, 167, 168]


def test_h100_single_rail_is_a_warning_without_topology(shared_fixtures: Path) -> None:
    summary = parse_nccl_log(_log(shared_fixtures, "h100-2node-roce-pxn-ranks8-15.txt").read_text())
    [finding] = check_log(summary, None)
    assert (finding.severity, finding.code) == ("warning", "single-rail")
    assert "--topology" in finding.message


def test_gcp_socket_fallback_is_an_error(shared_fixtures: Path) -> None:
    log = _log(shared_fixtures, "gcp-a3high-2node-socket-fallback-nvls.txt")
    [finding] = check_log(parse_nccl_log(log.read_text()), None)
    assert (finding.severity, finding.code) == ("error", "socket-fallback")
    assert "eth0" in finding.message
    assert finding.lines == [3, 4, 5, 6]


def test_socket_where_rdma_nics_exist_names_them(shared_fixtures: Path) -> None:
    log = _log(shared_fixtures, "gcp-a3high-2node-socket-fallback-nvls.txt")
    topology = Topology(nics=[Nic(name="mlx5_0", state="PORT_ACTIVE"),
                              Nic(name="mlx5_1", state="PORT_DOWN")])
    [finding] = check_log(parse_nccl_log(log.read_text()), topology)
    assert finding.code == "socket-fallback"
    assert "1 active RDMA device(s) (mlx5_0)" in finding.message


def test_h200_gdr_off_on_two_of_four_channels(shared_fixtures: Path) -> None:
    log = _log(shared_fixtures, "h200-4gpu-2rail-mixed-gdr-channels.txt")
    [finding] = check_log(parse_nccl_log(log.read_text()), None)
    assert (finding.severity, finding.code) == ("error", "gdr-partial")
    assert "2 of 4" in finding.message
    assert "01 (NET/IB/1), 03 (NET/IB/1)" in finding.message
    assert finding.lines == [3, 5]


def test_cli_exit_codes(shared_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    h100 = str(_log(shared_fixtures, "h100-2node-roce-pxn-ranks8-15.txt"))
    assert main(["check-log", h100]) == 0  # only a warning without --topology
    assert "warning: [single-rail]" in capsys.readouterr().out
    assert main(["check-log", str(_log(shared_fixtures, "gcp-a3high-2node-socket-fallback-nvls.txt"))]) \
        == EXIT_CHECK_FAILED
    captured = capsys.readouterr()
    assert "error: [socket-fallback]" in captured.out
    assert "Traceback" not in captured.err
    assert main(["check-log", str(_log(shared_fixtures, "h200-4gpu-2rail-mixed-gdr-channels.txt")),
                 "--json"]) == EXIT_CHECK_FAILED
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert [f["code"] for f in report["findings"]] == ["gdr-partial"]


def test_cli_with_topology_capture(shared_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # --topology goes through helper 3a's detect_paths, here on the same host's real
    # ibdev2netdev capture: 10 of its 12 RDMA ports are Up, so one rail used is an error.
    h100 = str(_log(shared_fixtures, "h100-2node-roce-pxn-ranks8-15.txt"))
    capture = str(shared_fixtures / "rdma" / "h100-node-ip-br-ibdev2netdev.txt")
    assert main(["check-log", h100, "--topology", capture]) == EXIT_CHECK_FAILED
    out = capsys.readouterr().out
    assert "error: [single-rail]" in out
    assert "10 active RDMA devices" in out


def test_cli_unparseable_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "run.log"
    log.write_text("just some output\n")
    assert main(["check-log", str(log)]) == EXIT_PARSE
    assert f"{log}:1: no `NCCL INFO` line" in capsys.readouterr().err


def test_clean_log_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "ok.log"
    log.write_text("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n"
                   "h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 8[0] [send] via NET/IB/1/GDRDMA\n")
    assert main(["check-log", str(log)]) == 0
    assert "ok:" in capsys.readouterr().out
