"""nccl-tests runs against the busbw model, and `gpuctl check-log` on nccl-tests output.

Real outputs from shared/fixtures/nccl_tests and tests/captures; node facts written out from the
capture (or its source note) named in each test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from toolkit.bench.expectation import judge_run
from toolkit.bench.nccl_tests import parse_nccl_tests
from toolkit.cli import main
from toolkit.errors import EXIT_CHECK_FAILED, EXIT_UNKNOWN
from toolkit.topology.model import Nic
from toolkit.tuning.expected_bw import node_from_gpu_names

CAPTURES = REPO / "tests" / "captures"
H200_VM = CAPTURES / "nccl_tests" / "h200-2node-kvm-vm-allreduce-collapsed-busbw-blank-row.txt"
H200_VM_NO_DEVICES = CAPTURES / "nccl_tests" / "h200-2node-kvm-vm-numa-topo-file-allreduce-no-devlist.txt"
PCIE_GATHER = CAPTURES / "mixed" / "a100-pcie-2node-gather-trace-roce25g-plus-ib200g-nccl2.16.5.txt"
GCP_TOPO = "topo/gcp-a3high-8xh100-no-nic-columns.txt"


def _fixture(shared_fixtures: Path, name: str) -> Path:
    return shared_fixtures / "nccl_tests" / name


def test_single_node_allreduce_from_gpu_names_passes(shared_fixtures: Path) -> None:
    # 8 x "NVIDIA H100 80GB HBM3" on one host: an HGX board (NV18 to NVSwitch, NVLS).
    result = parse_nccl_tests(_fixture(shared_fixtures, "gcp-a3high-1node-8xh100-allreduce.txt").read_text())
    judged = judge_run(result)
    assert (judged.op, judged.verdict, judged.limit) == ("all_reduce", "pass", "nvls")
    assert (judged.peak_busbw_gbps, judged.peak_size_bytes, judged.expected_busbw_gbps) == (479.93, 8589934592, 480.38)
    assert judged.margin == -0.0009
    assert judged.reasons[0] == "GPUs: 8 x NVIDIA H100 80GB HBM3 per node, NVLink from the model name"


def test_vm_run_far_below_the_hardware_is_below_expectation() -> None:
    # nccl-tests issue 256: the two H200 servers as KVM VMs, 8 GPUs and 8 ConnectX-7 each passed
    # through; the bare-metal topology dump of the same servers says speed="400000" per NIC.
    result = parse_nccl_tests(H200_VM.read_text(), "vm.txt")
    assert (result.peak_busbw_gbps, result.peak_size_bytes) == (57.78, 2717908992)
    names = [d.name for d in result.devices if d.host == result.hosts[0]]
    node = node_from_gpu_names(names)
    assert node is not None
    node = node.model_copy(update={"nics": [Nic(name=f"mlx5_{i}", rate_gbps=400.0, state="PORT_ACTIVE",
                                                seen_by=["ibv_devinfo"]) for i in range(8)]})
    judged = judge_run(result, node)
    assert (judged.verdict, judged.expected_busbw_gbps, judged.margin) == ("below", 480.38, -0.8797)
    assert judged.message.startswith("below expectation: 57.78 GB/s is -88.0% against the expected 480.4 GB/s")
    assert "8 rail(s) (mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7) = 400 GB/s line rate " \
           "per node" in judged.reasons


def test_run_without_device_list_gets_no_expectation() -> None:
    # Same VMs after the NUMA/topology-file fix, posted as rows only: how many nodes ran is unknown.
    result = parse_nccl_tests(H200_VM_NO_DEVICES.read_text(), "vm2.txt")
    judged = judge_run(result)
    assert (judged.verdict, judged.peak_busbw_gbps) == ("unknown", 107.63)
    assert "no `# Using devices` list" in judged.message


def test_cli_prints_peak_and_verdict_for_nccl_tests_output(shared_fixtures: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_fixture(shared_fixtures, "gcp-a3high-1node-8xh100-allreduce.txt"))
    assert main(["check-log", path]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "all_reduce: peak busbw 479.93 GB/s at 8589934592 B (8 GiB) (out-of-place)"
    assert out[1] == ("  pass: 479.93 GB/s is -0.1% against the expected 480.4 GB/s "
                      "(NVLS: 18 links x 25 GB/s x 2(8-1)/8 x 0.61)")
    assert out[-1] == f"ok: {path}: no problem found"


def test_cli_failed_run_is_a_problem_never_zero(shared_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_fixture(shared_fixtures, "h800-2node-alltoall-devapi-ima-failure.txt"))
    assert main(["check-log", path]) == EXIT_CHECK_FAILED
    captured = capsys.readouterr()
    assert captured.out.startswith("alltoall: FAILED, no bandwidth: the run failed at 2097152 B: line 28:")
    assert "error: [nccl-tests-failed]" in captured.out
    assert "0 GB/s" not in captured.out
    assert "0.0 GB/s" not in captured.out
    assert main(["check-log", path, "--json"]) == EXIT_CHECK_FAILED
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "problem"
    assert [(r["op"], r["verdict"], r["peak_busbw_gbps"]) for r in report["runs"]] == [("alltoall", "failed", None)]
    assert report["findings"][0]["lines"] == [28, 29, 30, 31, 32, 33, 34]


def test_cli_multi_node_without_nic_facts_is_unknown(shared_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_fixture(shared_fixtures, "gcp-a3mega-2node-16xh100-allreduce.txt"))
    assert main(["check-log", path]) == EXIT_UNKNOWN
    out = capsys.readouterr().out
    assert "all_reduce: peak busbw 338.82 GB/s at 8589934592 B (8 GiB) (out-of-place)" in out
    assert "no expectation: no NIC line rate known: cannot predict across nodes" in out


def test_cli_nic_rates_from_the_nccl_log_in_the_same_file(capsys: pytest.CaptureFixture[str]) -> None:
    # nccl-tests issue 350: gather_perf, 1 GPU per node; NCCL's topology print in the same file
    # rates NET/1 (the IB port the run used) at 25 GB/s.
    assert main(["check-log", str(PCIE_GATHER)]) == 0
    out = capsys.readouterr().out
    assert "gather: peak busbw 23.61 GB/s at 1610612736 B (1536 MiB) (in-place)" in out
    assert "pass: 23.61 GB/s is +4.9% against the expected 22.5 GB/s (network: 25 GB/s per GPU x 0.9)" in out
    assert "warning: [nccl-tests-truncated]" in out


def test_cli_with_topology_capture(shared_fixtures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The same GKE A3 high node type's topo -m capture as --topology: 8 GPUs, all NV18.
    path = str(_fixture(shared_fixtures, "gcp-a3high-1node-8xh100-allreduce.txt"))
    assert main(["check-log", path, "--topology", str(shared_fixtures / GCP_TOPO)]) == 0
    out = capsys.readouterr().out
    assert "pass: 479.93 GB/s is -0.1% against the expected 480.4 GB/s" in out
    assert "GPUs and NICs: --topology" in out
