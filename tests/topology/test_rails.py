"""toolkit.topology.rails, the one rail vocabulary, on real captures: a rail is a NIC next to a GPU
that exists as an RDMA device and is up; unknown is its own outcome; classes are never mixed."""

from __future__ import annotations

from pathlib import Path

import toolkit.topology.model as model
from toolkit.topology import kinds, rdma, text
from toolkit.topology.detect import detect_paths
from toolkit.topology.model import Nic
from toolkit.topology.rails import RailChoice, compute_rails, is_active, nic_state, select_rails

CAPTURES = Path(__file__).resolve().parents[1] / "captures"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "captures"


def test_state_unknown_is_not_active() -> None:
    assert nic_state(Nic(name="mlx5_0")) == "unknown"
    assert not is_active(Nic(name="mlx5_0"))
    assert not is_active(Nic(name="mlx5_0", seen_by=["topo-matrix"]))
    assert not is_active(Nic(name="mlx5_0", state="PORT_ACT"))  # a cut state is unknown too
    assert nic_state(Nic(name="mlx5_0", state="PORT_ACT")) == "unknown"
    # NCCL lists only ports that were active when it ran (net_ib.cc skips the others).
    assert is_active(Nic(name="mlx5_bond_6", seen_by=["nccl-log"]))
    assert [nic_state(Nic(name="x", state=s)) for s in ("PORT_ACTIVE", "Active", "Up", "ACTIVE")] == ["active"] * 4
    assert [nic_state(Nic(name="x", state=s)) for s in ("PORT_DOWN", "Down", "DOWN", "Initializing")] == \
        ["inactive"] * 4


def test_topo_m_alone_gives_no_rail_list(shared_fixtures: Path) -> None:
    """tpgds-aihub0007's matrix without its ibdev2netdev: 8 NICs next to GPUs, none known to be up."""
    topo = detect_paths([shared_fixtures / "topo" / "h100-8gpu-12mlx5-roce-numaoff.txt"])
    assert [r.nic for r in topo.rails] == [  # the structural view stays
        "mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_11"]
    choice = select_rails(topo)
    assert choice == RailChoice(
        names=[],
        notes=[
            "not rails (no GPU at PIX/PXB): mlx5_3, mlx5_4, mlx5_9, mlx5_10",
            "state unknown, so not counted as active: mlx5_0, mlx5_1, mlx5_2, mlx5_5, mlx5_6, mlx5_7, mlx5_8, "
            "mlx5_11 (no ibv_devinfo, ibstat, ibdev2netdev or rdma link output lists them with a state)",
        ],
        unknown=["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_11"],
    )


def test_rails_with_the_same_hosts_port_states() -> None:
    topo = detect_paths([EXAMPLES / "h100-roce-node"])
    choice = select_rails(topo)
    assert choice.names == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_11"]
    assert choice.unknown == []
    assert choice.notes == ["not rails (no GPU at PIX/PXB): mlx5_3, mlx5_4, mlx5_9, mlx5_10"]


def test_topo_columns_missing_from_the_rdma_listing_are_not_rails() -> None:
    """DeepEP #397, one H100 IB host: `topo -mp` shows 12 NICs (GPU0 and GPU4 with three each at PIX),
    its ibv_devinfo lists 8 active ConnectX-7 ports (mlx5_0,3,4,5,6,9,10,11). 8 rails, not 12."""
    topo = detect_paths([CAPTURES / "topo" / "h100-ib-8gpu-12nic-topo-mp-tabs-3nic-per-switch.txt",
                         CAPTURES / "rdma" / "h100-ib-cx7-8-active-ports-ibv_devinfo-tabs-lid-sparse-names.txt"])
    assert topo.pcie_only_view is True
    assert {r.nic: r.gpus for r in topo.rails if r.gpus == [0] or r.gpus == [4]} == {
        "mlx5_0": [0], "mlx5_1": [0], "mlx5_2": [0], "mlx5_6": [4], "mlx5_7": [4], "mlx5_8": [4]}
    choice = select_rails(topo)
    assert choice.names == ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
    assert choice.notes == [
        "not rails (in nvidia-smi topo -m but not listed as RDMA devices by ibv_devinfo): mlx5_1, mlx5_2, mlx5_7, "
        "mlx5_8"
    ]
    assert {n.link_layer for n in topo.nics if n.name in choice.names} == {"InfiniBand"}


def test_placeholder_nic_names_are_never_rails() -> None:
    """H20 VM (nccl-tests #321): topo -m with NIC0..NIC7 and no NIC Legend."""
    topo = detect_paths([CAPTURES / "topo" / "h20-vm-8gpu-8nic-pix-reversed-no-nic-legend.txt"])
    assert topo.gpu_nic_distance["0"]["NIC7"] == "PIX"
    assert topo.gpu_nic_distance["7"]["NIC0"] == "PIX"
    choice = select_rails(topo)
    assert choice.names == []
    assert choice.notes == [
        "nvidia-smi topo -m names no device for NIC0, NIC1, NIC2, NIC3, NIC4, NIC5, NIC6, NIC7 (no NIC Legend, "
        "or the capture was cut before it): its GPU<->NIC distances cannot be tied to RDMA device names"
    ]


def test_nccl_log_names_devices_but_is_not_an_inventory() -> None:
    """n013 (nccl-tests #350): `NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_2:1/IB`."""
    topo = detect_paths([CAPTURES / "mixed" / "a100-pcie-2node-gather-trace-roce25g-plus-ib200g-nccl2.16.5.txt"])
    assert [(n.name, n.port, n.link_layer, n.seen_by) for n in topo.nics] == [
        ("mlx5_0", 1, "Ethernet", ["nccl-log"]), ("mlx5_2", 1, "InfiniBand", ["nccl-log"])]
    assert topo.rdma_devices_listed is True
    choice = select_rails(topo)
    assert choice.names == []
    assert choice.notes == [
        "mlx5_0, mlx5_2: named only by the NCCL log's `NET/IB : Using` line (the devices that passed that run's "
        "NCCL_IB_HCA filter, on any host of the job), not by a listing of every RDMA device of the node; a device "
        "list of them could leave others out"
    ]


def test_mixed_link_layers_and_speeds_are_not_one_rail_set() -> None:
    """n013's ibstat: ConnectX-4 Lx 25G Ethernet and ConnectX-6 200G InfiniBand, one port of each down."""
    topo = detect_paths([CAPTURES / "rdma" / "ibstat-cx4lx-25g-eth-plus-cx6-200g-ib-2-ports-down.txt"])
    choice = select_rails(topo)
    assert choice.names == []
    assert choice.notes == [
        "not used (port not active): mlx5_1, mlx5_3",
        "RDMA devices of different classes (25 Gb/s Ethernet: mlx5_0; 200 Gb/s InfiniBand: mlx5_2) and no "
        "GPU<->NIC distances to choose between them: one NCCL_IB_HCA list would mix them",
    ]


def test_mixed_classes_with_the_matrix_far_from_the_gpu() -> None:
    """n013's topo -m: GPU0 reaches the IB card at NODE and the RoCE card at SYS. No NIC shares a PCIe
    switch with the GPU, so its nearest one is its rail: the 200G IB port NCCL used (mixed/a100-pcie-2node-...:
    NET/1 at 25 GB/s), not the 25G Ethernet card on the other socket."""
    topo = detect_paths([CAPTURES / "topo" / "a100-pcie-1gpu-4nic-cx4lx-roce-cx6-ib-tabs.txt",
                         CAPTURES / "rdma" / "ibstat-cx4lx-25g-eth-plus-cx6-200g-ib-2-ports-down.txt"])
    assert topo.gpu_nic_distance == {"0": {"mlx5_0": "SYS", "mlx5_1": "SYS", "mlx5_2": "NODE", "mlx5_3": "NODE"}}
    choice = select_rails(topo)
    assert choice.names == ["mlx5_2"]
    assert choice.notes == [
        "no RDMA NIC shares a PCIe switch with a GPU: each GPU's nearest NICs are its rails: mlx5_2 (NODE to GPU 0), "
        "mlx5_3 (NODE to GPU 0); GPUDirect RDMA through the CPU is slower, and NCCL may leave it off "
        "(NCCL_NET_GDR_LEVEL)",
        "not rails (no GPU has them among its nearest NICs): mlx5_0, mlx5_1",
        "not used (port not active): mlx5_3",
    ]


def test_one_vocabulary_and_one_registry() -> None:
    # The rail definition lives in rails.py only; model.py holds data types.
    assert not hasattr(model, "compute_rails")
    assert not hasattr(model, "RAIL_DISTANCES")
    assert compute_rails({"0": {"mlx5_0": "PIX", "mlx5_1": "SYS"}})[0].nic == "mlx5_0"
    # One set of text helpers.
    assert rdma.clean_lines is text.clean_lines
    assert rdma.is_shell_prompt is text.is_shell_prompt
    # Every kind has a parser the registry can load, and the lab replays only what it may.
    for kind in kinds.KINDS:
        assert callable(kinds.parser_for(kind))
    assert {info.command[0] for info in kinds.KINDS.values() if info.command} == {
        "nvidia-smi", "ibv_devinfo", "ibstat", "show_gids", "ibdev2netdev", "rdma"}
    transcript = (EXAMPLES / "h100-roce-node" / "ip-br-addr-ibdev2netdev.txt").read_text()
    assert kinds.replay_commands(transcript) == [("ibdev2netdev", "")]  # `ip` is never replayed
