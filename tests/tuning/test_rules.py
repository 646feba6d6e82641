"""Every topology rule on real captures' topologies (read through detect), expected values written out."""

from __future__ import annotations

from tests.conftest import shared_fixture
from tests.tuning import topologies as topo
from toolkit.topology.detect import detect_paths
from toolkit.topology.model import Topology
from toolkit.tuning import tune
from toolkit.tuning.config import NcclConfig

NO_RDMA = topo.TOPOLOGY_CAPTURES / "ibv_devinfo-no-devices-softroce-bond-linux-rdma.txt"


def _tune(t: Topology, **kw: object) -> NcclConfig:
    args: dict[str, object] = {"fabric": None, "mtu": None, "nccl_version": "2.26.2", "overrides": {}}
    args.update(kw)
    return tune(t, **args)  # type: ignore[arg-type]


def test_h100_rails_exact_match_excludes_bond_and_down_ports() -> None:
    config = _tune(topo.h100_numaoff())
    assert config.value("NCCL_IB_HCA") == "=mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11"
    setting = config.get("NCCL_IB_HCA")
    assert setting is not None
    assert setting.layer == "topology-rule"
    assert "(8 rails; seen up by ibdev2netdev)" in setting.reason
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


def test_h100_matrix_alone_writes_no_rail_list() -> None:
    """The same host's matrix without its ibdev2netdev: no port is known to be up."""
    config = _tune(detect_paths([shared_fixture("topo/h100-8gpu-12mlx5-roce-numaoff.txt")]))
    assert config.get("NCCL_IB_HCA") is None
    assert ("state unknown, so not counted as active: mlx5_0, mlx5_1, mlx5_2, mlx5_5, mlx5_6, mlx5_7, mlx5_8, "
            "mlx5_11 (no ibv_devinfo, ibstat, ibdev2netdev or rdma link output lists them with a state)"
            ) in config.notes
    assert ("NCCL_IB_HCA not written: the capture does not show which RDMA devices are the node's rails (see the "
            "notes above), so NCCL's own device detection stays in charge") in config.notes


def test_cx7_show_gids_gid_index_3_without_a_rail_list() -> None:
    config = _tune(topo.cx7_show_gids())
    assert config.value("NCCL_IB_GID_INDEX") == "3"
    gid = config.get("NCCL_IB_GID_INDEX")
    assert gid is not None
    assert "10.99.91.39" in gid.reason
    assert gid.replaced[0].layer == "nccl-default"
    assert gid.replaced[0].value == "-1"
    # `ibv_devinfo -d mlx5_0` speaks for one device of an 8-rail host: not a list of its rails.
    assert config.get("NCCL_IB_HCA") is None
    assert ("mlx5_0: named only by ibv_devinfo -d mlx5_0, show_gids, not by a listing of every RDMA device of the "
            "node; a device list of them could leave others out") in config.notes


def test_gid_default_differs_by_nccl_version() -> None:
    old = _tune(topo.cx7_show_gids(), nccl_version="2.19.3")
    assert old.get("NCCL_IB_GID_INDEX").replaced[0].value == "0"  # type: ignore[union-attr]
    assert old.value("NCCL_IB_GID_INDEX") == "3"


def test_h200_management_bond_is_not_a_rail() -> None:
    config = _tune(topo.h200_devinfo())
    assert config.value("NCCL_IB_HCA") == (
        "=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_10,mlx5_11"
    )
    assert "mlx5_bond_0 looks like a management port (active_mtu 1024 below the other ports' 4096): not a rail" \
        in config.notes


def test_dgx_a100_matrix_alone_names_rails_but_no_port_state() -> None:
    config = _tune(topo.dgx_a100())
    assert config.get("NCCL_IB_HCA") is None
    assert config.get("NCCL_NET_GDR_LEVEL") is None
    assert config.get("NCCL_CROSS_NIC").layer == "nccl-default"  # type: ignore[union-attr]
    assert "not rails (no GPU at PIX/PXB): mlx5_4, mlx5_5, mlx5_10, mlx5_11" in config.notes


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


def test_lingjun_matrix_alone_leaves_the_vendor_prefix() -> None:
    config = _tune(topo.lingjun_b300(), fabric="rdma", provider="alicloud")
    hca = config.get("NCCL_IB_HCA")
    assert hca is not None
    assert (hca.layer, hca.value) == ("vendor-profile", "mlx5")
    assert any(n.startswith("state unknown, so not counted as active: mlx5_bond_0, mlx5_bond_1") for n in config.notes)


def test_gpus_without_nic_columns_do_not_disable_ib() -> None:
    """GCP A3 high pod: topo -m with no NIC rows is not evidence that the node has no RDMA device."""
    config = _tune(topo.gcp_a3high_no_nics())
    assert config.get("NCCL_IB_DISABLE") is None
    assert config.get("NCCL_IB_HCA") is None
    assert (
        "NCCL_IB_DISABLE not written: no capture lists the node's RDMA devices or says it has none (ibv_devinfo, "
        "ibstat, ibdev2netdev, rdma link, an NCCL topology XML, an NCCL log using NET/IB), so a tcp fabric may "
        "only have been inferred from what the capture lacks. NCCL's own detection stays in charge: it uses TCP "
        "sockets only if it finds no RDMA device. To force sockets, pass --set NCCL_IB_DISABLE=1"
    ) in config.notes


def test_an_rdma_tool_that_listed_nothing_disables_ib() -> None:
    config = _tune(detect_paths([NO_RDMA]))
    setting = config.get("NCCL_IB_DISABLE")
    assert setting is not None
    assert setting.value == "1"
    assert setting.reason.startswith(
        f"no RDMA device on this node (ibv_devinfo ran and listed no device ({NO_RDMA}: No IB devices found)): "
        "NCCL uses TCP sockets")


def test_an_nccl_log_using_rdma_is_not_turned_into_sockets() -> None:
    # n013: `NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_2:1/IB`, channels via NET/IB/1/GDRDMA.
    config = _tune(detect_paths([topo.CAPTURES / "mixed" / "a100-pcie-2node-gather-trace-roce25g-plus-ib200g-"
                                 "nccl2.16.5.txt"]))
    assert config.fabric == "rdma"
    assert config.get("NCCL_IB_DISABLE") is None
    assert config.get("NCCL_IB_HCA") is None
    # tpgds-aihub0008: no `Using` line, but 16 channel connections over NET/IB with GDRDMA.
    # The fabric is inferred as rdma from that use, so no tcp rule runs at all.
    h100_topology = detect_paths([shared_fixture("nccl_log/h100-2node-roce-pxn-ranks8-15.txt")])
    assert h100_topology.rdma_devices_listed is True
    h100 = _tune(h100_topology)
    assert h100.fabric == "rdma"
    assert h100.get("NCCL_IB_DISABLE") is None
    # Asked to tune for tcp anyway, the rule still refuses to turn IB off on an absence of names.
    asked = tune(h100_topology, fabric="tcp", mtu=None, nccl_version="2.26.2", overrides={})
    assert asked.value("NCCL_IB_DISABLE") == "1"
    assert asked.settings["NCCL_IB_DISABLE"].reason.startswith("the fabric asked for is tcp")


def test_ib_hca_lists_only_the_rdma_devices_that_exist_and_are_up() -> None:
    """DeepEP #397: a 12-NIC `topo -mp` and the same host's ibv_devinfo listing 8 active IB ports."""
    config = _tune(detect_paths([
        topo.CAPTURES / "topo" / "h100-ib-8gpu-12nic-topo-mp-tabs-3nic-per-switch.txt",
        topo.CAPTURES / "rdma" / "h100-ib-cx7-8-active-ports-ibv_devinfo-tabs-lid-sparse-names.txt",
    ]))
    assert config.value("NCCL_IB_HCA") == "=mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11"
    assert config.value("NCCL_CROSS_NIC") == "0"
    assert config.get("NCCL_IB_GID_INDEX").layer == "nccl-default"  # type: ignore[union-attr]  # IB: no GID


def test_placeholder_nic_names_never_reach_nccl_ib_hca() -> None:
    config = _tune(detect_paths([topo.CAPTURES / "topo" / "h20-vm-8gpu-8nic-pix-reversed-no-nic-legend.txt"]))
    assert config.get("NCCL_IB_HCA") is None
    assert not any("NIC0," in (s.value or "") for s in config.settings.values())


def test_unnamed_columns_and_the_nccl_logs_names_write_no_list() -> None:
    """nccl-tests #321, one H20 VM: topo -m without a NIC Legend (8 NICs at PIX) and the job's NCCL log
    (`NET/IB : Using [0]mlx5_bond_6:1/RoCE [1]mlx5_bond_7:1/RoCE`, filtered by the run's NCCL_IB_HCA)."""
    topology = detect_paths([topo.CAPTURES / "topo" / "h20-vm-8gpu-8nic-pix-reversed-no-nic-legend.txt",
                             topo.CAPTURES / "mixed" / "h20-vm-2node-2gpu-alltoall-tencent-plugin-roce-bond-"
                             "nccl2.26.5.txt"])
    assert {(n.name, n.link_layer) for n in topology.nics if "nccl-log" in n.seen_by} == {
        ("mlx5_bond_6", "Ethernet"), ("mlx5_bond_7", "Ethernet")}
    config = _tune(topology)
    assert config.fabric == "rdma"
    assert config.get("NCCL_IB_HCA") is None
    assert config.get("NCCL_IB_DISABLE") is None
    assert ("mlx5_bond_6, mlx5_bond_7: named only by the NCCL log's `NET/IB : Using` line (the devices that passed "
            "that run's NCCL_IB_HCA filter, on any host of the job), not by a listing of every RDMA device of the "
            "node; a device list of them could leave others out") in config.notes


def test_mixed_roce_and_infiniband_are_not_one_list() -> None:
    config = _tune(topo.mixed_25g_roce_200g_ib())
    assert config.get("NCCL_IB_HCA") is None
    assert ("RDMA devices of different classes (25 Gb/s Ethernet: mlx5_0; 200 Gb/s InfiniBand: mlx5_2) and no "
            "GPU<->NIC distances to choose between them: one NCCL_IB_HCA list would mix them") in config.notes


def test_tcp_asked_for_on_an_rdma_capture_disables_ib() -> None:
    config = _tune(topo.h100_numaoff(), fabric="tcp", fabric_interface="fab0")
    setting = config.get("NCCL_IB_DISABLE")
    assert setting is not None
    assert setting.reason.startswith("the fabric asked for is tcp (the RDMA devices the capture shows are not to "
                                     "be used)")
    assert config.value("NCCL_SOCKET_IFNAME") == "=fab0"
    assert config.get("NCCL_IB_HCA") is None


def test_rdma_asked_for_where_no_device_is_listed_is_noted() -> None:
    config = _tune(detect_paths([NO_RDMA]), fabric="rdma")
    assert config.get("NCCL_IB_DISABLE") is None
    assert any(n.startswith("the fabric is rdma but the node lists no RDMA device (ibv_devinfo ran and listed no "
                            "device") for n in config.notes)


def test_tcp_fabric_uses_the_providers_fabric_interface() -> None:
    topology = topo.lab_sockets_only()
    config = tune(topology, fabric="tcp", mtu=8500, nccl_version=None, overrides={}, fabric_interface="fab0")
    assert config.value("NCCL_SOCKET_IFNAME") == "=fab0"
    assert config.get("NCCL_SOCKET_IFNAME").reason.startswith(  # type: ignore[union-attr]
        "the fabric is tcp, so NCCL's data goes over sockets: fab0 is the cluster's fabric interface"
    )


def test_an_interface_list_alone_sets_only_the_socket_interface() -> None:
    """`ip -j addr` of a machine without GPUs: no RDMA tool ran, so IB is not disabled on a guess."""
    config = _tune(topo.lab_sockets_only())
    assert config.fabric == "tcp"  # the engine's inference from no device names
    assert config.get("NCCL_IB_DISABLE") is None
    assert config.value("NCCL_SOCKET_IFNAME") == "=eth0"
    assert [s.name for s in config.pinned()] == ["NCCL_SOCKET_IFNAME"]
    assert not any(name.startswith("NCCL_IB_") for name in config.settings)


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
