"""Vendor profiles: Alibaba eRDMA enumerated literally, Lingjun, Tencent, LL128/MTU on eRDMA."""

from __future__ import annotations

from tests.tuning import topologies as topo
from toolkit.topology.model import Topology
from toolkit.tuning import tune

# Alibaba's published eRDMA variables, verbatim from
# https://www.alibabacloud.com/help/en/pai/user-guide/erdma-distributed-training-with-high-performance-networks
ALIBABA_ERDMA = {
    "NCCL_DEBUG": "INFO",
    "NCCL_SOCKET_IFNAME": "eth0",
    "NCCL_IB_TC": "-",
    "NCCL_IB_SL": "-",
    "NCCL_IB_GID_INDEX": "1",
    "NCCL_IB_HCA": "erdma",
    "NCCL_IB_TIMEOUT": "-",
    "NCCL_IB_QPS_PER_CONNECTION": "8",
    "NCCL_MIN_NCHANNELS": "16",
    "NCCL_NET_PLUGIN": "none",
}


def test_erdma_without_capture_carries_every_alibaba_value_or_says_why() -> None:
    config = tune(Topology(), fabric="erdma", mtu=8500, nccl_version="2.26.2", overrides={})
    assert config.vendor_profile == "alibaba-erdma"
    for name, value in ALIBABA_ERDMA.items():
        if config.value(name) == value and config.get(name).pinned:  # type: ignore[union-attr]
            continue
        assert name in config.vendor_differences, f"{name}: neither Alibaba's value nor a stated reason"
    # What is taken as is:
    assert config.value("NCCL_IB_QPS_PER_CONNECTION") == "8"
    assert config.value("NCCL_MIN_NCHANNELS") == "16"
    assert config.value("NCCL_NET_PLUGIN") == "none"
    assert config.value("NCCL_IB_HCA") == "erdma"
    assert config.value("NCCL_IB_GID_INDEX") == "1"
    assert config.value("NCCL_SOCKET_IFNAME") == "eth0"
    # What differs, and only that:
    assert sorted(config.vendor_differences) == ["NCCL_DEBUG", "NCCL_IB_SL", "NCCL_IB_TC", "NCCL_IB_TIMEOUT"]
    assert config.vendor_differences["NCCL_IB_TC"].startswith("not set: Alibaba marks it not applicable")
    assert config.get("NCCL_PROTO") is None  # MTU 8500: LL128 stays


def test_erdma_node_detected_values_replace_alibaba_prefixes_with_reasons() -> None:
    config = tune(topo.erdma_node(8500), fabric=None, mtu=None, nccl_version="2.26.2", overrides={})
    assert config.fabric == "erdma"
    assert config.value("NCCL_IB_HCA") == "=erdma_0"
    assert config.value("NCCL_SOCKET_IFNAME") == "=eth0"
    assert config.value("NCCL_IB_QPS_PER_CONNECTION") == "8"
    hca = config.get("NCCL_IB_HCA")
    assert hca is not None
    assert hca.replaced[-1].layer == "vendor-profile"
    assert hca.replaced[-1].value == "erdma"
    assert config.vendor_differences["NCCL_IB_HCA"].startswith("vendor erdma, gpuctl =erdma_0 (topology-rule)")
    assert config.vendor_differences["NCCL_SOCKET_IFNAME"].startswith("vendor eth0, gpuctl =eth0")
    assert config.get("NCCL_PROTO") is None


def test_ll128_off_with_mtu_1500_on_erdma() -> None:
    config = tune(topo.erdma_node(1500), fabric="erdma", mtu=None, nccl_version="2.26.2", overrides={})
    proto = config.get("NCCL_PROTO")
    assert proto is not None
    assert proto.value == "^LL128"
    assert proto.layer == "topology-rule"
    assert "MTU is 1500" in proto.reason
    assert "8500" in proto.reason
    assert proto.source == "https://www.alibabacloud.com/help/id/ecs/user-guide/on-the-gpu-instance-configuration-erdma"


def test_ll128_off_when_spec_mtu_is_not_8500() -> None:
    config = tune(Topology(), fabric="erdma", mtu=1400, nccl_version="2.26.2", overrides={})
    assert config.value("NCCL_PROTO") == "^LL128"


def test_erdma_needs_nccl_2_19() -> None:
    config = tune(Topology(), fabric="erdma", mtu=8500, nccl_version="2.18.3", overrides={})
    assert any("requires NCCL 2.19 or later" in n for n in config.notes)


def test_lingjun_profile_values() -> None:
    config = tune(topo.lingjun_b300(), fabric="rdma", mtu=None, nccl_version="2.26.2",
                  overrides={}, provider="alicloud")
    assert config.vendor_profile == "alibaba-lingjun"
    assert config.value("NCCL_IB_TC") == "136"
    assert config.value("NCCL_IB_SL") == "5"
    assert config.value("NCCL_IB_TIMEOUT") == "22"
    assert config.value("NCCL_IB_QPS_PER_CONNECTION") == "8"
    assert config.value("NCCL_IB_GID_INDEX") == "3"
    assert config.value("NCCL_SOCKET_IFNAME") == "eth"
    assert sorted(config.vendor_differences) == ["NCCL_DEBUG", "NCCL_IB_HCA"]


def test_tencent_hcc_profile_sets_nothing_unsourced() -> None:
    config = tune(topo.h100_numaoff(), fabric="rdma", mtu=None, nccl_version="2.26.2",
                  overrides={}, provider="tencentcloud")
    assert config.vendor_profile == "tencent-hcc"
    assert not [s for s in config.settings.values() if s.layer == "vendor-profile"]
    assert any(n.startswith("tencent-hcc: Tencent's HCC pages") for n in config.notes)


def test_rdma_without_provider_has_no_vendor_profile() -> None:
    config = tune(topo.h100_numaoff(), fabric=None, mtu=None, nccl_version="2.26.2", overrides={})
    assert config.fabric == "rdma"
    assert config.vendor_profile is None
