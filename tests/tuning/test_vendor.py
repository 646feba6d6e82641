"""Vendor profiles: Alibaba eRDMA enumerated literally, Lingjun, Tencent, LL128/MTU on eRDMA."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import yaml

from tests.tuning import topologies as topo
from toolkit.topology.model import Topology
from toolkit.tuning import tune
from toolkit.tuning.engine import find_net_plugin
from toolkit.tuning.tables import vendor_profile_by_id

ROLE = Path(__file__).resolve().parents[2] / "playbooks" / "roles" / "nccl"
TCCL_DEB = "https://taco-1251783334.cos.ap-shanghai.myqcloud.com/tccl/TCCL_1.5-ubuntu.20.04.5_amd64.deb"

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
    assert proto.source == (
        "https://www.alibabacloud.com/help/id/ecs/user-guide/on-the-gpu-instance-configuration-erdma (read 2026-11-29)"
    )


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
    # The Lingjun capture is topo -m only: no port states, so no topology list replaces the vendor's prefix.
    assert sorted(config.vendor_differences) == ["NCCL_DEBUG"]


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


def test_tencent_hcc_profile_records_its_pages_and_publishes_no_nccl_value() -> None:
    profile = vendor_profile_by_id("tencent-hcc")
    assert profile.source == "https://cloud.tencent.com/document/product/1646/93319"
    assert profile.read == "2026-12-01"
    assert profile.published == ()
    assert profile.library["name"] == "TCCL"
    assert profile.library["package_url"] == TCCL_DEB
    assert profile.library["install_dir"] == "/opt/tencent/tccl"
    assert profile.library["plugin_package"] == "nccl-rdma-sharp-plugins"
    assert profile.library["checksum"] is None
    # Seen in third-party scripts on Tencent nodes, documented and never applied.
    assert [(o.name, o.value) for o in profile.observed][:4] == [
        ("NCCL_IB_TC", "160"), ("NCCL_IB_GID_INDEX", "3"), ("NCCL_IB_QPS_PER_CONNECTION", "4"),
        ("NCCL_IB_TIMEOUT", "24"),
    ]
    config = tune(topo.lingjun_b300(), fabric="rdma", mtu=None, nccl_version="2.26.2", overrides={},
                  provider="tencentcloud")
    assert config.get("NCCL_IB_TC").layer == "nccl-default"  # type: ignore[union-attr]
    assert config.value("NCCL_IB_TC") == "0"
    assert config.vendor_differences == {}


def test_tencent_node_without_plugin_says_how_to_get_tccl() -> None:
    config = tune(topo.h100_numaoff(), fabric="rdma", mtu=None, nccl_version="2.26.2", overrides={},
                  provider="tencentcloud")
    assert config.net_plugin is None
    assert (
        "no TCCL seen in the capture (no NCCL log line loading a net plugin, no libnccl-net*.so in the bundle): "
        "without it NCCL uses its built-in IB transport; the spec's software.tccl (HCCPNV4sne/HCCPNV4sn only) has "
        "the nccl role install TCCL, off by default: Tencent publishes no checksum for the package"
    ) in config.notes


def test_tccl_named_by_the_log_plugin_version() -> None:
    plugin = SimpleNamespace(name="NCCL RDMA Plugin", version="1.2@Tencent Cloud", path=None, vendor=None)
    summary = SimpleNamespace(net_plugin=plugin, source="hcc.log")
    config = tune(topo.h100_numaoff(), fabric="rdma", mtu=None, nccl_version="2.26.2", overrides={},
                  provider="tencentcloud", nccl_log=summary)
    assert config.net_plugin == "NCCL RDMA Plugin"
    assert any(n.startswith("TCCL found (NCCL log hcc.log: net plugin NCCL RDMA Plugin, 1.2@Tencent Cloud): ")
               for n in config.notes)
    assert not any(n.startswith("no TCCL seen") for n in config.notes)


def test_generic_rdma_plugin_is_not_called_tccl() -> None:
    summary = SimpleNamespace(net_plugin="NCCL RDMA Plugin v6", source="vm.log")  # string form
    config = tune(topo.h100_numaoff(), fabric="rdma", mtu=None, nccl_version="2.26.2", overrides={},
                  provider="tencentcloud", nccl_log=summary)
    assert config.net_plugin == "NCCL RDMA Plugin v6"
    assert (
        "an NCCL net plugin is loaded (NCCL log vm.log: net plugin NCCL RDMA Plugin v6); it may be Tencent's "
        "TCCL plugin, which Tencent packages as nccl-rdma-sharp-plugins, the name NVIDIA's HPC-X plugin also "
        "uses: the capture cannot tell which"
    ) in config.notes


def test_plugin_library_in_the_bundle() -> None:
    found = find_net_plugin(Topology(), files=["bundle/opt/tencent/tccl/lib/libnccl-net.so"])
    assert found is not None
    assert found.name == "libnccl-net.so"
    assert found.tccl
    assert find_net_plugin(Topology(), files=["bundle/usr/lib/libnccl.so.2", "bundle/lib/libnccl-net.so.txt"]) is None
    hpcx = find_net_plugin(Topology(), files=["/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so.0"])
    assert hpcx is not None
    assert not hpcx.tccl


def test_alibaba_preset_turns_a_found_plugin_off_and_says_so() -> None:
    config = tune(topo.erdma_node(8500), fabric=None, mtu=None, nccl_version="2.26.2", overrides={},
                  bundle_files=["/usr/lib/x86_64-linux-gnu/libnccl-net.so"])
    assert config.value("NCCL_NET_PLUGIN") == "none"
    assert "NCCL_NET_PLUGIN none (vendor-profile) keeps NCCL from loading the plugin found (libnccl-net.so)" in (
        config.notes)


def test_nccl_role_offers_tccl_off_by_default_without_a_published_checksum() -> None:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert defaults["nccl_tccl_install"] == "{{ gpuctl_tccl | default(false) }}"  # the spec's software.tccl
    assert defaults["nccl_tccl_packages"]["20.04"]["url"] == TCCL_DEB
    assert defaults["nccl_tccl_package_sha256"] == ""
    select = yaml.safe_load((ROLE / "tasks" / "tccl_select.yml").read_text())
    check = select[-1]
    assert check["ansible.builtin.assert"]["that"] == [
        "nccl_tccl_package.sha256 | default('') is match('^[0-9a-f]{64}$')"
    ]
    assert "Tencent publishes no checksum" in check["ansible.builtin.assert"]["fail_msg"]
    main = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    include = next(t for t in main if t.get("ansible.builtin.include_tasks") == "tccl.yml")
    assert include["when"] == ["nccl_gpu_present | bool", "nccl_tccl_install | bool"]
