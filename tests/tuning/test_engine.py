"""Layering and precedence: defaults < vendor < topology < user, and what each replaced."""

from __future__ import annotations

import pytest

from tests.tuning import topologies as topo
from toolkit.topology.model import Gpu, Nic, Topology
from toolkit.tuning import infer_fabric, tune
from toolkit.tuning.rules import consumer_gpu

ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"


def test_user_override_wins_over_every_layer_and_records_the_chain() -> None:
    # The h100 capture shows its rails' port states (ibdev2netdev), so a topology rule sets a list.
    config = tune(topo.h100_numaoff(), fabric="rdma", mtu=None, nccl_version="2.26.2",
                  overrides={"NCCL_IB_HCA": "=mlx5_0", "NCCL_IB_QPS_PER_CONNECTION": "4"},
                  provider="alicloud")
    hca = config.get("NCCL_IB_HCA")
    assert hca is not None
    assert hca.value == "=mlx5_0"
    assert hca.layer == "user-override"
    assert [(r.layer, r.value) for r in hca.replaced] == [
        ("vendor-profile", "mlx5"),
        ("topology-rule", "=mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11"),
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


def test_every_source_carries_the_date_it_was_read() -> None:
    config = tune(topo.h100_numaoff(), fabric="rdma", mtu=None, nccl_version="2.26.2",
                  overrides={"NCCL_DEBUG": "WARN"}, provider="alicloud")
    assert config.get("NCCL_IB_HCA").source == f"{ENV}#nccl-ib-hca (read 2026-11-29)"  # type: ignore[union-attr]
    assert config.get("NCCL_IB_TC").source == (  # type: ignore[union-attr]
        "https://www.alibabacloud.com/help/en/pai/use-a-custom-image (read 2026-11-29)"
    )
    assert config.get("NCCL_IB_QPS_PER_CONNECTION").replaced[0].source == (  # type: ignore[union-attr]
        f"{ENV}#nccl-ib-qps-per-connection (read 2026-11-29)"
    )
    assert config.get("NCCL_DEBUG").source == "user: --set / spec nccl_overrides"  # type: ignore[union-attr]
    # A page no table records a reading of keeps its bare URL: gpuctl does not guess a date.
    old = tune(topo.h100_numaoff(), fabric=None, mtu=None, nccl_version="2.18.1", overrides={})
    assert old.get("NCCL_PROTO").source == (  # type: ignore[union-attr]
        "https://docs.nvidia.com/deeplearning/nccl/release-notes/rel_2-18-1.html"
    )


def test_no_note_asks_for_a_value_the_vendor_profile_already_set() -> None:
    # NCCL 2.19 (no automatic GID choice), an eRDMA rail whose GID table is not in the capture.
    config = tune(topo.erdma_node(8500), fabric=None, mtu=None, nccl_version="2.19.3", overrides={})
    assert config.value("NCCL_IB_GID_INDEX") == "1"
    assert not any("--set NCCL_IB_GID_INDEX" in n for n in config.notes)
    assert ("NCCL_IB_GID_INDEX 1 comes from the vendor profile alibaba-erdma, not from this node's capture, "
            "which shows no value to check it against") in config.notes


def test_the_gid_request_stays_when_nothing_set_the_value() -> None:
    node = Topology(nics=[Nic(name="mlx5_0", transport="InfiniBand", link_layer="Ethernet", state="PORT_ACTIVE")])
    config = tune(node, fabric="rdma", mtu=None, nccl_version="2.19.3", overrides={})
    assert config.get("NCCL_IB_GID_INDEX").layer == "nccl-default"  # type: ignore[union-attr]
    assert any("pass --set NCCL_IB_GID_INDEX=<RoCE v2 IPv4 index>" in n for n in config.notes)


@pytest.mark.parametrize(
    ("model", "consumer"),
    [
        ("NVIDIA GeForce RTX 4090", True), ("GeForce RTX 3090", True), ("NVIDIA TITAN RTX", True),
        ("NVIDIA RTX 3090", True), ("NVIDIA GeForce RTX 5090", True),
        ("NVIDIA RTX A6000", False), ("NVIDIA RTX 6000 Ada Generation", False), ("Quadro RTX 8000", False),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", False), ("NVIDIA RTX 5000 Ada Generation", False),
        ("NVIDIA H100 80GB HBM3", False), ("NVIDIA L40S", False), ("NVIDIA A10", False),
    ],
)
def test_consumer_gpu_names(model: str, consumer: bool) -> None:
    assert consumer_gpu(model) is consumer


def test_geforce_cards_get_no_gdr_level() -> None:
    node = topo.h100_numaoff()  # rails with known port states (a matrix alone has none: no GDR level)
    assert tune(node, fabric=None, mtu=None, nccl_version="2.26.2", overrides={}).value("NCCL_NET_GDR_LEVEL") == "PIX"
    node.gpus = [Gpu(index=i, model="NVIDIA GeForce RTX 4090") for i in range(8)]
    config = tune(node, fabric=None, mtu=None, nccl_version="2.26.2", overrides={})
    assert config.get("NCCL_NET_GDR_LEVEL") is None
    assert any(n.startswith("NVIDIA GeForce RTX 4090: a GeForce card has no GPUDirect RDMA") for n in config.notes)


def test_socket_ifname_value_and_reason_agree() -> None:
    # No capture: Alibaba's value as printed, a prefix, and the reason says so.
    bare = tune(Topology(), fabric="erdma", mtu=8500, nccl_version="2.26.2", overrides={})
    prefix = bare.get("NCCL_SOCKET_IFNAME")
    assert prefix is not None
    assert prefix.value == "eth0"
    assert "Written without a leading equals sign it is a prefix" in prefix.reason
    # The provider names the interface: the exact-match form, with the reason for it.
    known = tune(Topology(), fabric="erdma", mtu=8500, nccl_version="2.26.2", overrides={}, fabric_interface="eth0")
    exact = known.get("NCCL_SOCKET_IFNAME")
    assert exact is not None
    assert exact.value == "=eth0"
    assert exact.layer == "topology-rule"
    assert exact.reason == (
        "eth0 is the interface the provider built this node's network on (cluster outputs); the capture has no "
        "interface list to confirm it. The leading equals sign matches exactly that interface"
    )
    assert [(r.layer, r.value) for r in exact.replaced] == [("vendor-profile", "eth0")]
    for config in (bare, known, tune(topo.erdma_node(8500), fabric=None, mtu=None, nccl_version="2.26.2",
                                     overrides={})):
        setting = config.get("NCCL_SOCKET_IFNAME")
        assert setting is not None
        assert setting.value.startswith("=") == ("equals sign matches exactly" in setting.reason)


def test_ll128_off_on_unknown_mtu_states_the_nvlink_cost() -> None:
    config = tune(Topology(), fabric="erdma", mtu=None, nccl_version="2.26.2", overrides={})
    proto = config.get("NCCL_PROTO")
    assert proto is not None
    assert proto.value == "^LL128"
    assert "the MTU is not known" in proto.reason
    assert proto.reason.endswith(
        "The cost: NCCL_PROTO applies to every transport, so LL128 is also off over NVLink inside the node, "
        "where it is safe and NCCL uses it for medium-size messages; pass the MTU to keep it"
    )


def test_ll128_follows_the_nodes_mtu_over_the_spec() -> None:
    config = tune(topo.erdma_node(1500), fabric="erdma", mtu=8500, nccl_version="2.26.2", overrides={})
    assert config.value("NCCL_PROTO") == "^LL128"
    assert "MTU is 1500" in config.get("NCCL_PROTO").reason  # type: ignore[union-attr]
    assert ("the capture shows MTU 1500 on the fabric interfaces, the spec asks for 8500: LL128 is decided on "
            "the node's 1500") in config.notes
    assert tune(topo.erdma_node(8500), fabric="erdma", mtu=1500, nccl_version="2.26.2",
                overrides={}).get("NCCL_PROTO") is None
