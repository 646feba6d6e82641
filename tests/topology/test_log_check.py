"""check_log / judge_log on real NCCL logs, and `gpuctl check-log` verdicts and exit codes.

Logs: shared/fixtures/nccl_log and tests/captures (nccl_log, mixed); every expected fact is written
out from the file. Mutations of a real capture are minimal and named in each test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from toolkit.cli import main
from toolkit.errors import EXIT_CHECK_FAILED, EXIT_PARSE, EXIT_UNKNOWN
from toolkit.topology.log_check import TOPO_FILE_DOC, check_log, judge_log
from toolkit.topology.model import Nic, Rail, Topology
from toolkit.topology.nccl_log import parse_nccl_log

CAPTURES = REPO / "tests" / "captures"
VM_H200 = CAPTURES / "nccl_log" / "h200-kvm-vm-pxb-pcie-topology-print-pci0.2-gdrdma.txt"
PCIE_GATHER = CAPTURES / "mixed" / "a100-pcie-2node-gather-trace-roce25g-plus-ib200g-nccl2.16.5.txt"
TENCENT_H20 = CAPTURES / "mixed" / "h20-vm-2node-2gpu-alltoall-tencent-plugin-roce-bond-nccl2.26.5.txt"

# The h100 host's 8 rails, written out from shared/fixtures INDEX (topo numaoff + ibdev2netdev):
# GPU0->mlx5_0, GPU1->mlx5_1, GPU2->mlx5_2, GPU3->mlx5_5, GPU4->mlx5_6, GPU5->mlx5_7,
# GPU6->mlx5_8, GPU7->mlx5_11, all PIX.
H100_RAILS = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_11"]
H100_TOPOLOGY = Topology(
    nics=[Nic(name=f"mlx5_{i}", port=1, state="PORT_ACTIVE") for i in range(12)],
    rails=[Rail(nic=nic, gpus=[gpu], distance="PIX") for gpu, nic in enumerate(H100_RAILS)],
)
H100_NET_LINES = [105, 106, 107, 108, 110, 111, 112, 113, 161, 162, 163, 164, 165, 166, 167, 168]


def _log(shared_fixtures: Path, name: str) -> Path:
    return shared_fixtures / "nccl_log" / name


def test_h100_eight_gpus_on_one_of_eight_rails_is_a_problem(shared_fixtures: Path) -> None:
    summary = parse_nccl_log(_log(shared_fixtures, "h100-2node-roce-pxn-ranks8-15.txt").read_text())
    verdict = judge_log(summary, H100_TOPOLOGY)
    assert verdict.verdict == "problem"
    [finding] = verdict.findings
    assert (finding.severity, finding.code) == ("error", "single-rail")
    assert finding.message.startswith("all 16 network connections went through one NIC, NET/IB/0, although "
                                      "the node has 8 GPUs (the log's localRanks) and 8 rails (mlx5_0, mlx5_1, "
                                      "mlx5_2, mlx5_5, mlx5_6, mlx5_7, mlx5_8, mlx5_11)")
    assert finding.lines == H100_NET_LINES
    assert [e.line for e in verdict.evidence] == [105, 106]  # the fabric was used: PXN and direct


def test_h100_single_rail_without_topology_is_unknown(shared_fixtures: Path) -> None:
    # The log lists no NET/IB devices: 8 GPUs on NET/IB/0 may be one rail of one or of eight.
    summary = parse_nccl_log(_log(shared_fixtures, "h100-2node-roce-pxn-ranks8-15.txt").read_text())
    verdict = judge_log(summary, None)
    assert verdict.verdict == "unknown"
    [finding] = verdict.findings
    assert (finding.severity, finding.code) == ("unknown", "single-rail")
    assert "--topology" in finding.message


def test_one_gpu_on_its_one_fast_nic_is_not_single_rail() -> None:
    # nccl-tests issue 350: 1 GPU per node, NCCL lists a 25G RoCE port and a 200G IB port and
    # uses only NET/IB/1 (the IB one). Not a problem: one GPU drives one rail.
    summary = parse_nccl_log(PCIE_GATHER.read_text(), "gather.txt")
    verdict = judge_log(summary, None)
    assert verdict.verdict == "ok"
    assert verdict.findings == []
    assert [(e.line, e.text) for e in verdict.evidence] == [
        (15, "Using network IB"),
        (14, "NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_2:1/IB [RO]; OOB ibp209s0f0:10.128.3.13<0>"),
        (54, "Channel 00/0 : 1[81000] -> 0[81000] [receive] via NET/IB/1/GDRDMA"),
    ]


def test_log_without_any_transport_line_is_unknown(shared_fixtures: Path) -> None:
    # The h100 log cut before its first `Channel .. via` line (line 85): init lines only.
    lines = _log(shared_fixtures, "h100-2node-roce-pxn-ranks8-15.txt").read_text().splitlines()
    verdict = judge_log(parse_nccl_log("\n".join(lines[:84]), "cut.log"))
    assert verdict.verdict == "unknown"
    assert [f.code for f in verdict.findings] == ["no-transport"]
    assert verdict.evidence == []
    # Cut after the intra-node lines but before the network ones: still unknown (2 nodes).
    verdict = judge_log(parse_nccl_log("\n".join(lines[:100]), "cut.log"))
    assert (verdict.verdict, [f.code for f in verdict.findings]) == ("unknown", ["no-network-connection"])


def test_gcp_socket_fallback_without_rdma_evidence_is_unknown(shared_fixtures: Path) -> None:
    # NET/IB found no device and nothing else says the node has one.
    log = _log(shared_fixtures, "gcp-a3high-2node-socket-fallback-nvls.txt")
    verdict = judge_log(parse_nccl_log(log.read_text()), None)
    assert verdict.verdict == "unknown"
    [finding] = verdict.findings
    assert (finding.severity, finding.code) == ("unknown", "socket-unknown")
    assert "TCP sockets (eth0)" in finding.message
    assert finding.lines == [3, 4, 5, 6]


def test_socket_fallback_where_the_topology_shows_rdma_is_a_problem(shared_fixtures: Path) -> None:
    log = _log(shared_fixtures, "gcp-a3high-2node-socket-fallback-nvls.txt")
    topology = Topology(nics=[Nic(name="mlx5_0", state="PORT_ACTIVE"),
                              Nic(name="mlx5_1", state="PORT_DOWN")])
    verdict = judge_log(parse_nccl_log(log.read_text()), topology)
    assert verdict.verdict == "problem"
    [finding] = verdict.findings
    assert (finding.severity, finding.code) == ("error", "socket-fallback")
    assert "1 active RDMA device(s) (mlx5_0)" in finding.message


def test_socket_fallback_where_the_log_lists_rdma_devices_is_a_problem() -> None:
    # nccl-tests issue 350's log as if NCCL_NET=Socket had been set: its "Using network IB" line
    # and its NET/IB channel lines rewritten to the socket transport; the NET/IB list stays.
    text = (PCIE_GATHER.read_text().replace("Using network IB", "Using network Socket")
            .replace("via NET/IB/1/GDRDMA/Shared", "via NET/Socket/0")
            .replace("via NET/IB/1/GDRDMA", "via NET/Socket/0"))
    verdict = judge_log(parse_nccl_log(text, "socket.txt"), None)
    assert verdict.verdict == "problem"
    [finding] = [f for f in verdict.findings if f.severity == "error"]
    assert finding.code == "socket-fallback"
    assert "NCCL's own NET/IB line lists 2 RDMA device(s) (mlx5_0, mlx5_2)" in finding.message
    assert finding.lines[:3] == [14, 15, 54]


def test_h200_gdr_off_on_two_of_four_channels(shared_fixtures: Path) -> None:
    log = _log(shared_fixtures, "h200-4gpu-2rail-mixed-gdr-channels.txt")
    verdict = judge_log(parse_nccl_log(log.read_text()), None)
    assert verdict.verdict == "problem"
    [finding] = verdict.findings
    assert (finding.severity, finding.code) == ("error", "gdr-partial")
    assert "2 of 4" in finding.message
    assert "01 (NET/IB/1), 03 (NET/IB/1)" in finding.message
    assert finding.lines == [3, 5]


def test_vm_emulated_pci_bridges_point_to_nccl_topo_file() -> None:
    # nccl-tests issue 256: an H200 KVM guest whose NCCL topology print shows 8 PCI links at
    # 0.2 GB/s to emulated bridges (104c:8232).
    verdict = judge_log(parse_nccl_log(VM_H200.read_text(), "vm.txt"))
    [finding] = verdict.findings
    assert (finding.severity, finding.code) == ("warning", "vm-emulated-pci")
    assert "`=== System : maxBw 48 totalBw 370.8 ===`" in finding.message
    assert "8 PCI link(s) at 0.2 GB/s (PCI/0-65000 (104c823200000000)" in finding.message
    assert "NCCL_TOPO_FILE" in finding.message
    assert TOPO_FILE_DOC in finding.message
    assert TOPO_FILE_DOC == "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-topo-file"
    assert finding.lines == [2, 5, 10, 15, 20, 27, 32, 37, 42]
    # Its two channel lines went through two NICs with GDR: the fabric itself was used.
    assert verdict.verdict == "ok"
    assert [e.line for e in verdict.evidence] == [50, 51]


def test_plugin_run_two_gpus_on_two_rails_is_ok() -> None:
    # nccl-tests issue 321: 2 GPUs per VM, Tencent's plugin, NET/<plugin>/0 and /1 both used, GDR on.
    verdict = judge_log(parse_nccl_log(TENCENT_H20.read_text(), "h20.txt"))
    assert verdict.verdict == "ok"
    assert [e.line for e in verdict.evidence][:3] == [55, 53, 29]
    assert verdict.evidence[2].text == "NET/Plugin: Loaded net plugin NCCL RDMA Plugin v6 (v6)"
    assert check_log(parse_nccl_log(TENCENT_H20.read_text(), "h20.txt")) == []


def test_cli_exit_codes(shared_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    h100 = str(_log(shared_fixtures, "h100-2node-roce-pxn-ranks8-15.txt"))
    assert main(["check-log", h100]) == EXIT_UNKNOWN
    out = capsys.readouterr().out
    assert "unknown: [single-rail]" in out
    assert out.rstrip().splitlines()[-1].startswith(f"unknown: {h100}: not enough in the file to decide")
    gcp = str(_log(shared_fixtures, "gcp-a3high-2node-socket-fallback-nvls.txt"))
    assert main(["check-log", gcp]) == EXIT_UNKNOWN
    assert "unknown: [socket-unknown]" in capsys.readouterr().out
    assert main(["check-log", str(_log(shared_fixtures, "h200-4gpu-2rail-mixed-gdr-channels.txt")),
                 "--json"]) == EXIT_CHECK_FAILED
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "problem"
    assert [f["code"] for f in report["findings"]] == ["gdr-partial"]
    assert [e["line"] for e in report["evidence"]] == [2, 3]
    assert main(["check-log", str(PCIE_GATHER), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "ok"
    assert {"verdict", "findings", "evidence"} <= set(report)
    assert report["evidence"][2] == {"line": 54, "text": "Channel 00/0 : 1[81000] -> 0[81000] [receive] "
                                                        "via NET/IB/1/GDRDMA"}


def test_cli_with_topology_capture(shared_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # --topology goes through detect_paths, here on the same host's real ibdev2netdev capture:
    # 10 of its 12 RDMA ports are Up; the GPUs are the log's 8 local ranks.
    h100 = str(_log(shared_fixtures, "h100-2node-roce-pxn-ranks8-15.txt"))
    capture = str(shared_fixtures / "rdma" / "h100-node-ip-br-ibdev2netdev.txt")
    assert main(["check-log", h100, "--topology", capture]) == EXIT_CHECK_FAILED
    out = capsys.readouterr().out
    assert "error: [single-rail]" in out
    assert "the node has 8 GPUs (the log's localRanks) and 10 rails" in out


def test_cli_unparseable_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "run.log"
    log.write_text("just some output\n")
    assert main(["check-log", str(log)]) == EXIT_PARSE
    assert f"{log}:1: no `NCCL INFO` line" in capsys.readouterr().err


def test_nccl_error_trace_is_a_problem(capsys: pytest.CaptureFixture[str]) -> None:
    # nccl-tests issue 294: bootstrap fails on h100-4; nccl-tests prints its header and no row.
    path = CAPTURES / "mixed" / "h100-2node-ib-sharp-plugin-bootstrap-family-33621-failure-nccl2.18.3.txt"
    verdict = judge_log(parse_nccl_log(path.read_text(), "h100.txt"))
    assert verdict.verdict == "problem"
    error = verdict.findings[0]
    assert (error.severity, error.code) == ("error", "nccl-error")
    assert error.message.startswith("NCCL returned error 3 (internal error) at bootstrap.cc:256 (line 86), "
                                    "after NCCL WARN 'Net : connecting to address  with family 33621")
    assert error.lines[:3] == [85, 86, 87]
    assert main(["check-log", str(path)]) == EXIT_CHECK_FAILED
    out = capsys.readouterr().out
    assert "error: [nccl-tests-no-result] the nccl-tests output stops after its header" in out


def test_shortened_channel_summary_shows_gdr_lost_on_the_second_nic() -> None:
    # nccl issue 2428: eRDMA, channels alternate NET/IB/0 with GDR and NET/IB/1 without.
    path = CAPTURES / "nccl_log" / "h20-erdma-2node-channels-ib0-gdrdma-ib1-no-gdr-unable-to-open-erdma_1.txt"
    verdict = judge_log(parse_nccl_log(path.read_text(), "erdma.txt"))
    assert verdict.verdict == "problem"
    assert [(f.code, f.severity, f.lines) for f in verdict.findings] == [
        ("gdr-partial", "error", [2, 3]), ("nccl-warn", "warning", [5])]
    assert "channels 01 (NET/IB/1), 03 (NET/IB/1)" in verdict.findings[0].message


def test_one_rank_communicator_on_sockets_is_noted_not_judged() -> None:
    # nccl issue 1267: nranks 1, `NET/IB : No device found`, sockets; nothing crosses a network.
    path = CAPTURES / "nccl_log" / "instance-8g-96c-1rank-socket-fallback-no-ib-plugin-v7-nccl2.19.3.txt"
    verdict = judge_log(parse_nccl_log(path.read_text(), "gce.txt"))
    assert verdict.verdict == "unknown"
    assert [(f.code, f.severity, f.lines) for f in verdict.findings] == [
        ("no-transport", "unknown", []), ("socket-selected", "warning", [8, 9, 11])]


def test_error_nccl_recovers_from_is_a_warning() -> None:
    # nccl-tests issue 311: SHARP job creation fails ("transport.cc:356 -> 2"), NCCL says "Cannot
    # initialize CollNet, using point-to-point network instead" and connects its channels after it.
    path = CAPTURES / "mixed" / "a100-4node-2gpu-sharp-collnet-fallback-allreduce-info-nccl2.23.4.txt"
    verdict = judge_log(parse_nccl_log(path.read_text(), "a100.txt"))
    [recovered] = [f for f in verdict.findings if f.code.startswith("nccl-error")]
    assert (recovered.code, recovered.severity) == ("nccl-error-recovered", "warning")
    assert recovered.message.startswith("NCCL returned error 2 (system error) at transport.cc:356 (line 63), "
                                        "after NCCL WARN 'NET/IB : SHARP coll init error: Cannot create SHARP "
                                        "job(-11)' (line 61)")
    # 2 GPUs per node on one of the 6 HCAs NCCL lists: a hint, not a verdict, without --topology.
    assert {(f.code, f.severity) for f in verdict.findings if f.code == "single-rail"} == {("single-rail", "unknown")}
    assert verdict.verdict == "unknown"
