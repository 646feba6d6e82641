"""Every topology rule on the real captures' topologies, expected values written out."""

from __future__ import annotations

from tests.tuning import topologies as topo
from toolkit.tuning import tune
from toolkit.tuning.config import NcclConfig


def _tune(t: object, **kw: object) -> NcclConfig:
    args: dict[str, object] = {"fabric": None, "mtu": None, "nccl_version": "2.26.2", "overrides": {}}
    args.update(kw)
    return tune(t, **args)  # type: ignore[arg-type]


def test_h100_rails_exact_match_excludes_bond_and_down_ports() -> None:
    config = _tune(topo.h100_numaoff())
    assert config.value("NCCL_IB_HCA") == "=mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11"
    setting = config.get("NCCL_IB_HCA")
    assert setting is not None
    assert setting.layer == "topology-rule"
    assert "not rails (no GPU at PIX/PXB): mlx5_3, mlx5_4, mlx5_9, mlx5_10" in config.notes


def test_h100_socket_ifname_is_the_front_end_bond() -> None:
    config = _tune(topo.h100_numaoff())
    assert config.value("NCCL_SOCKET_IFNAME") == "=bond0"
    setting = config.get("NCCL_SOCKET_IFNAME")
    assert setting is not None
    assert "10.73.175.137/29" in setting.reason


def test_h100_gdr_level_and_cross_nic_from_1to1_pix_rails() -> None:
    config = _tune(topo.h100_numaoff())
    assert config.value("NCCL_NET_GDR_LEVEL") == "PIX"
    assert config.value("NCCL_CROSS_NIC") == "0"
    cross = config.get("NCCL_CROSS_NIC")
    assert cross is not None
    assert "1:1, 8 rails" in cross.reason


def test_h100_nvls_left_on_by_default_with_nvswitch() -> None:
    config = _tune(topo.h100_numaoff())
    nvls = config.get("NCCL_NVLS_ENABLE")
    assert nvls is not None
    assert nvls.layer == "nccl-default"
    assert nvls.value == "2"


def test_cx7_show_gids_gid_index_3() -> None:
    config = _tune(topo.cx7_show_gids())
    assert config.value("NCCL_IB_GID_INDEX") == "3"
    assert config.value("NCCL_IB_HCA") == "=mlx5_0"
    gid = config.get("NCCL_IB_GID_INDEX")
    assert gid is not None
    assert "10.99.91.39" in gid.reason
    assert gid.replaced[0].layer == "nccl-default"
    assert gid.replaced[0].value == "-1"


def test_gid_default_differs_by_nccl_version() -> None:
    old = _tune(topo.cx7_show_gids(), nccl_version="2.19.3")
    assert old.get("NCCL_IB_GID_INDEX").replaced[0].value == "0"  # type: ignore[union-attr]
    assert old.value("NCCL_IB_GID_INDEX") == "3"


def test_h200_management_bond_is_not_a_rail() -> None:
    config = _tune(topo.h200_devinfo())
    assert config.value("NCCL_IB_HCA") == (
        "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_10,mlx5_11"
    )
    assert any("mlx5_bond_0 looks like a management port" in n for n in config.notes)


def test_dgx_a100_pxb_rails_two_nics_per_gpu() -> None:
    config = _tune(topo.dgx_a100())
    assert config.value("NCCL_IB_HCA") == "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_6,mlx5_7,mlx5_8,mlx5_9"
    assert config.value("NCCL_NET_GDR_LEVEL") == "PXB"
    # Two NICs per GPU: not a 1-NIC rail layout, NCCL's default (2) stays.
    assert config.get("NCCL_CROSS_NIC").layer == "nccl-default"  # type: ignore[union-attr]


def test_nvls_off_on_a100() -> None:
    config = _tune(topo.simai_a100())
    assert config.value("NCCL_NVLS_ENABLE") == "0"
    nvls = config.get("NCCL_NVLS_ENABLE")
    assert nvls is not None
    assert nvls.layer == "topology-rule"
    assert "sm80" in nvls.reason


def test_simai_front_end_bond_is_not_a_rail() -> None:
    config = _tune(topo.simai_a100())
    assert config.value("NCCL_IB_HCA") == "=mlx5_bond_1,mlx5_bond_2,mlx5_bond_3,mlx5_bond_4"
    assert config.value("NCCL_CROSS_NIC") == "0"
    cross = config.get("NCCL_CROSS_NIC")
    assert cross is not None
    assert "one NIC per 2 GPUs" in cross.reason


def test_lingjun_bond_rails_are_rails() -> None:
    config = _tune(topo.lingjun_b300(), fabric="rdma", provider="alicloud")
    assert config.value("NCCL_IB_HCA") == (
        "=mlx5_bond_0,mlx5_bond_1,mlx5_bond_2,mlx5_bond_3,mlx5_bond_4,mlx5_bond_5,mlx5_bond_6,mlx5_bond_7"
    )
    assert config.value("NCCL_NET_GDR_LEVEL") == "PXB"


def test_gpus_without_nics_tune_for_sockets() -> None:
    config = _tune(topo.gcp_a3high_no_nics())
    assert config.fabric == "tcp"
    assert config.value("NCCL_IB_DISABLE") == "1"
    assert config.get("NCCL_IB_HCA") is None


def test_tcp_fabric_uses_the_providers_fabric_interface() -> None:
    topology = topo.lab_sockets_only()
    config = tune(topology, fabric="tcp", mtu=8500, nccl_version=None, overrides={}, fabric_interface="fab0")
    assert config.value("NCCL_SOCKET_IFNAME") == "=fab0"
    assert config.get("NCCL_SOCKET_IFNAME").reason.startswith(  # type: ignore[union-attr]
        "the fabric is tcp, so NCCL's data goes over sockets: fab0 is the cluster's fabric interface"
    )


def test_sockets_only_lab_node() -> None:
    config = _tune(topo.lab_sockets_only())
    assert config.fabric == "tcp"
    assert config.value("NCCL_IB_DISABLE") == "1"
    assert config.value("NCCL_SOCKET_IFNAME") == "=eth0"
    assert "no GPU on this node: tuned for sockets only (a lab or CPU machine)" in config.notes
    assert [s.name for s in config.pinned()] == ["NCCL_IB_DISABLE", "NCCL_SOCKET_IFNAME"]
    assert not any(name.startswith("NCCL_IB_") and name != "NCCL_IB_DISABLE" for name in config.settings)


def test_no_debug_knobs_without_a_reason() -> None:
    for build in (topo.h100_numaoff, topo.dgx_a100, topo.simai_a100, topo.lab_sockets_only):
        config = _tune(build())
        assert config.get("NCCL_ALGO") is None
        assert config.get("NCCL_PROTO") is None
        assert config.get("NCCL_DEBUG") is None


def test_nccl_2_18_1_ll128_known_issue_on_1to1_nic_gpu() -> None:
    config = _tune(topo.h100_numaoff(), nccl_version="2.18.1")
    assert config.value("NCCL_PROTO") == "^LL128"
    assert _tune(topo.h100_numaoff(), nccl_version="2.18.3").get("NCCL_PROTO") is None
