"""Layering and precedence: defaults < vendor < topology < user, and what each replaced."""

from __future__ import annotations

import pytest

from tests.tuning import topologies as topo
from toolkit.topology.model import Topology
from toolkit.tuning import infer_fabric, tune


def test_user_override_wins_over_every_layer_and_records_the_chain() -> None:
    config = tune(topo.lingjun_b300(), fabric="rdma", mtu=None, nccl_version="2.26.2",
                  overrides={"NCCL_IB_HCA": "=mlx5_bond_0", "NCCL_IB_QPS_PER_CONNECTION": "4"},
                  provider="alicloud")
    hca = config.get("NCCL_IB_HCA")
    assert hca is not None
    assert hca.value == "=mlx5_bond_0"
    assert hca.layer == "user-override"
    assert [(r.layer, r.value) for r in hca.replaced] == [
        ("vendor-profile", "mlx5"),
        ("topology-rule", "=mlx5_bond_0,mlx5_bond_1,mlx5_bond_2,mlx5_bond_3,"
                          "mlx5_bond_4,mlx5_bond_5,mlx5_bond_6,mlx5_bond_7"),
    ]
    assert "replaces topology-rule value" in hca.reason
    qps = config.get("NCCL_IB_QPS_PER_CONNECTION")
    assert qps is not None
    assert [(r.layer, r.value) for r in qps.replaced] == [
        ("nccl-default", "1"), ("vendor-profile", "8"),
    ]


def test_override_of_a_variable_nobody_set() -> None:
    config = tune(Topology(), fabric=None, mtu=None, nccl_version="2.26.2", overrides={"NCCL_DEBUG": "WARN"})
    debug = config.get("NCCL_DEBUG")
    assert debug is not None
    assert debug.layer == "user-override"
    assert debug.replaced == ()


def test_version_unknown_leaves_defaults_out() -> None:
    config = tune(topo.cx7_show_gids(), fabric=None, mtu=None, nccl_version=None, overrides={})
    assert not [s for s in config.settings.values() if s.layer == "nccl-default"]
    assert config.value("NCCL_IB_GID_INDEX") == "3"


@pytest.mark.parametrize(
    ("version", "timeout", "split"),
    [("2.18.5", "18", "1"), ("2.19.3", "18", "1"), ("2.20.5", "18", "0"), ("2.23.4", "20", "0")],
)
def test_defaults_follow_the_version(version: str, timeout: str, split: str) -> None:
    config = tune(topo.cx7_show_gids(), fabric=None, mtu=None, nccl_version=version, overrides={})
    assert config.value("NCCL_IB_TIMEOUT") == timeout
    assert config.value("NCCL_IB_SPLIT_DATA_ON_QPS") == split


def test_infer_fabric() -> None:
    assert infer_fabric(topo.erdma_node(8500)) == "erdma"
    assert infer_fabric(topo.h100_numaoff()) == "rdma"
    assert infer_fabric(topo.dgx_a100()) == "rdma"  # NIC names from topo -m alone
    assert infer_fabric(topo.lab_sockets_only()) == "tcp"


def test_fabric_mismatch_is_noted() -> None:
    config = tune(topo.h100_numaoff(), fabric="erdma", mtu=8500, nccl_version="2.26.2", overrides={})
    assert "fabric erdma was asked for, but the capture's RDMA devices look like rdma" in config.notes


def test_unknown_fabric_refused() -> None:
    with pytest.raises(ValueError, match="fabric 'ib'"):
        tune(Topology(), fabric="ib", mtu=None, nccl_version=None, overrides={})
