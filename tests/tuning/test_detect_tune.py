"""Real captures through the real path: detect_paths, then toolkit.tuning.engine.tune.

The golden nccl.conf files come from here: rewrite them with GPUCTL_UPDATE_GOLDEN=1 and review the
diff as code. Their captures live in the repository (examples/captures, tests/topology/captures),
so they run on a plain clone too.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import REPO
from toolkit.cli import main
from toolkit.topology.detect import detect_paths
from toolkit.tuning.engine import tune

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("GPUCTL_UPDATE_GOLDEN") == "1"
EXAMPLES = REPO / "examples" / "captures"
ERDMA = REPO / "tests" / "topology" / "captures" / "erdma-h20-ibv_devinfo-stepmesh-pr32.txt"


@pytest.mark.parametrize(
    ("name", "paths", "kwargs"),
    [
        # tpgds-aihub0007: topo -m + ip -br a + ibdev2netdev, fabric from the capture.
        ("h100-numaoff-roce", [EXAMPLES / "h100-roce-node"], {}),
        # gpulingjun010006136067: topo -m only, on Alibaba with rdma (the Lingjun profile).
        ("lingjun-b300", [EXAMPLES / "lingjun-b300-node"], {"fabric": "rdma", "provider": "alicloud"}),
        # gpu-h20-0156: ibv_devinfo of erdma_0; the spec's MTU 1500 (no interface list in the capture).
        ("erdma-mtu1500", [ERDMA], {"mtu": 1500}),
        # What the local lab tunes (examples/local-lab.yaml): the h100 capture replayed, fabric tcp on fab0.
        ("lab-sockets-only", [EXAMPLES / "h100-roce-node"],
         {"fabric": "tcp", "mtu": 8500, "provider": "local", "fabric_interface": "fab0"}),
    ],
)
def test_golden_nccl_conf(name: str, paths: list[Path], kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {"fabric": None, "mtu": None, "nccl_version": "2.26.2", "overrides": {}}
    args.update(kwargs)
    text = tune(detect_paths(paths), **args).render_nccl_conf()  # type: ignore[arg-type]
    path = GOLDEN / f"{name}.conf"
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"{path} missing: run with GPUCTL_UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(), f"{path} differs: review, then GPUCTL_UPDATE_GOLDEN=1 to accept"


def test_h100_captures_give_the_rail_list(shared_fixtures: Path) -> None:
    topology = detect_paths([
        shared_fixtures / "topo" / "h100-8gpu-12mlx5-roce-numaoff.txt",
        shared_fixtures / "rdma" / "h100-node-ip-br-ibdev2netdev.txt",
    ])
    config = tune(topology, fabric=None, mtu=None, nccl_version="2.26.2", overrides={})
    assert config.value("NCCL_IB_HCA") == "=mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11"
    assert config.value("NCCL_SOCKET_IFNAME") == "=bond0"
    assert config.value("NCCL_CROSS_NIC") == "0"
    assert config.hostname == "tpgds-aihub0007"


def test_cx7_show_gids_gives_gid_3(shared_fixtures: Path) -> None:
    topology = detect_paths([shared_fixtures / "rdma" / "cx7-roce-show_gids-ibv_devinfo.txt"])
    config = tune(topology, fabric=None, mtu=None, nccl_version="2.26.2", overrides={})
    assert config.value("NCCL_IB_GID_INDEX") == "3"


def test_simai_xml_turns_nvls_off(shared_fixtures: Path) -> None:
    topology = detect_paths([shared_fixtures / "topo_xml" / "alibaba-simai-8xa100-5x-cx6dx-bond.xml.txt"])
    config = tune(topology, fabric=None, mtu=None, nccl_version="2.26.2", overrides={})
    assert config.value("NCCL_NVLS_ENABLE") == "0"
    assert config.value("NCCL_IB_HCA") == "=mlx5_bond_1,mlx5_bond_2,mlx5_bond_3,mlx5_bond_4"


def test_gcp_pod_without_nic_columns_keeps_ncccls_detection(shared_fixtures: Path) -> None:
    topology = detect_paths([shared_fixtures / "topo" / "gcp-a3high-8xh100-no-nic-columns.txt"])
    config = tune(topology, fabric=None, mtu=None, nccl_version="2.26.2", overrides={})
    assert config.get("NCCL_IB_DISABLE") is None
    assert any(n.startswith("NCCL_IB_DISABLE not written: no capture lists the node's RDMA devices")
               for n in config.notes)


def test_gpuctl_tune_explain_on_the_shipped_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--explain", "--nccl-version", "2.26.2", str(EXAMPLES / "h100-roce-node")]) == 0
    out = capsys.readouterr().out
    hca = next(line for line in out.splitlines() if line.startswith("NCCL_IB_HCA"))
    assert "=mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11" in hca
    assert "topology-rule" in hca
    assert "different hosts" not in out


def test_gpuctl_tune_on_a_nccl_log_only(capsys: pytest.CaptureFixture[str]) -> None:
    log = REPO / "tests" / "captures" / "mixed" / "a100-pcie-2node-gather-trace-roce25g-plus-ib200g-nccl2.16.5.txt"
    assert main(["tune", "--nccl-version", "2.26.2", str(log)]) == 0
    out = capsys.readouterr().out
    assert "NCCL_IB_DISABLE=" not in out
    assert "NCCL_IB_HCA=" not in out
