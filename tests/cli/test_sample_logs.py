"""The sample logs in examples/logs/ give the verdicts examples/logs/README.md promises."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("log", "code", "says"), [
    ("erdma-h20-gdr-lost-on-one-nic.log", 8, "GPUDirect RDMA was off on 2 of 4 network connections"),
    ("a100-2node-gather-nccl-tests-with-info.log", 0, "pass: 23.61 GB/s is +4.9% against the expected 22.5 GB/s"),
    ("h200-vm-emulated-pci-topology.log", 0, "The known remedy is NCCL_TOPO_FILE"),
])
def test_each_sample_log_gives_its_documented_verdict(log: str, code: int, says: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert f"examples/logs/{log}" in (REPO / "examples/logs/README.md").read_text()
    assert main(["check-log", str(REPO / "examples/logs" / log)]) == code
    captured = capsys.readouterr()
    assert says in captured.out + captured.err


def test_the_demo_shows_what_the_replayed_host_would_get_on_its_own_fabric() -> None:
    from toolkit.commands.up import _replayed_host_report
    from toolkit.spec.loader import load_spec

    spec = load_spec(REPO / "examples/local-lab.yaml")
    text = _replayed_host_report(spec, str(REPO / "examples/captures/h100-roce-node"))
    assert text.splitlines()[1].startswith("== What the replayed host would get on its own fabric: rdma, inferred")
    assert "NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11" in text.splitlines()
    assert "NCCL_NET_GDR_LEVEL=PIX" in text.splitlines()
    assert "not rails (no GPU at PIX/PXB): mlx5_3, mlx5_4, mlx5_9, mlx5_10" in text
