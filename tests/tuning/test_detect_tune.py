"""The same expectations through the real parsers, once toolkit.topology.detect exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.tuning import tune

detect = pytest.importorskip("toolkit.topology.detect", reason="parsers (helpers 3a/3b) not landed yet")


def test_h100_captures_give_the_rail_list(shared_fixtures: Path) -> None:
    topology = detect.detect_paths([
        shared_fixtures / "topo" / "h100-8gpu-12mlx5-roce-numaoff.txt",
        shared_fixtures / "rdma" / "h100-node-ip-br-ibdev2netdev.txt",
    ])
    config = tune(topology, fabric=None, mtu=None, nccl_version="2.26.2", overrides={})
    assert config.value("NCCL_IB_HCA") == "=mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11"
    if topology.interfaces:  # `ip -br a` is read only once the iproute parser knows that shape
        assert config.value("NCCL_SOCKET_IFNAME") == "=bond0"
    assert config.value("NCCL_CROSS_NIC") == "0"


def test_cx7_show_gids_gives_gid_3(shared_fixtures: Path) -> None:
    topology = detect.detect_paths([shared_fixtures / "rdma" / "cx7-roce-show_gids-ibv_devinfo.txt"])
    config = tune(topology, fabric=None, mtu=None, nccl_version="2.26.2", overrides={})
    assert config.value("NCCL_IB_GID_INDEX") == "3"


def test_simai_xml_turns_nvls_off(shared_fixtures: Path) -> None:
    topology = detect.detect_paths([shared_fixtures / "topo_xml" / "alibaba-simai-8xa100-5x-cx6dx-bond.xml.txt"])
    config = tune(topology, fabric=None, mtu=None, nccl_version="2.26.2", overrides={})
    assert config.value("NCCL_NVLS_ENABLE") == "0"
    assert config.value("NCCL_IB_HCA") == "=mlx5_bond_1,mlx5_bond_2,mlx5_bond_3,mlx5_bond_4"


def test_gcp_pod_without_nics_tunes_for_sockets(shared_fixtures: Path) -> None:
    topology = detect.detect_paths([shared_fixtures / "topo" / "gcp-a3high-8xh100-no-nic-columns.txt"])
    config = tune(topology, fabric=None, mtu=None, nccl_version="2.26.2", overrides={})
    assert config.value("NCCL_IB_DISABLE") == "1"
