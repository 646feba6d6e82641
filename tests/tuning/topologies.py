"""Topologies of the real captures in shared/fixtures, built from the facts INDEX.md lists.

The parsers (toolkit.topology.detect) are written in parallel; until they land the tuning tests
build the `Topology` each capture must yield, field by field, from the literal facts. Once
detect_paths exists, test_detect_tune.py runs the same expectations through the real parsers.
Nothing here is invented: each value is in the capture named in the docstring.
"""

from __future__ import annotations

from toolkit.topology.model import Gpu, GpuLink, Interface, Nic, PcieDistance, Rail, Topology


def _nv_matrix(count: int, links: int) -> list[list[GpuLink]]:
    return [
        [GpuLink(kind="X") if i == j else GpuLink(kind="NV", nvlinks=links) for j in range(count)]
        for i in range(count)
    ]


def _distances(table: dict[int, dict[str, PcieDistance]]) -> dict[str, dict[str, PcieDistance]]:
    return {str(gpu): row for gpu, row in table.items()}


def _rails(table: dict[int, dict[str, PcieDistance]]) -> list[Rail]:
    serving: dict[str, list[int]] = {}
    nearest: dict[str, PcieDistance] = {}
    for gpu, row in table.items():
        for nic, distance in row.items():
            if distance in ("PIX", "PXB"):
                serving.setdefault(nic, []).append(gpu)
                nearest[nic] = distance
    return [Rail(nic=nic, gpus=gpus, distance=nearest[nic]) for nic, gpus in serving.items()]


def h100_numaoff() -> Topology:
    """topo/h100-8gpu-12mlx5-roce-numaoff.txt + rdma/h100-node-ip-br-ibdev2netdev.txt (tpgds-aihub0007)."""
    names = [f"mlx5_{i}" for i in range(12)]
    pix = {0: "mlx5_0", 1: "mlx5_1", 2: "mlx5_2", 3: "mlx5_5", 4: "mlx5_6", 5: "mlx5_7", 6: "mlx5_8", 7: "mlx5_11"}
    table: dict[int, dict[str, PcieDistance]] = {
        gpu: {nic: ("PIX" if nic == pix[gpu] else "NODE") for nic in names} for gpu in range(8)
    }
    ibdev2netdev = {  # as printed (lexical order), port 1 each
        "mlx5_0": ("enp25s0np0", "Up"), "mlx5_1": ("enp41s0np0", "Up"),
        "mlx5_10": ("enp210s0f1np1", "Down"), "mlx5_11": ("enp218s0np0", "Up"),
        "mlx5_2": ("enp59s0np0", "Up"), "mlx5_3": ("bond0", "Up"),
        "mlx5_4": ("enp83s0f1np1", "Down"), "mlx5_5": ("enp92s0np0", "Up"),
        "mlx5_6": ("enp155s0np0", "Up"), "mlx5_7": ("enp170s0np0", "Up"),
        "mlx5_8": ("enp187s0np0", "Up"), "mlx5_9": ("bond0", "Up"),
    }
    ip_br = [  # ip -br a: name, state, IPv4
        ("lo", "UNKNOWN", ["127.0.0.1/8"]), ("enp0s20f0u5u2c2", "UNKNOWN", []),
        ("enp86s0f0", "DOWN", []), ("enp25s0np0", "UP", ["10.99.91.59/31"]),
        ("enp41s0np0", "UP", ["10.99.92.59/31"]), ("enp86s0f1", "DOWN", []),
        ("enp59s0np0", "UP", ["10.99.93.59/31"]), ("enp83s0f0np0", "DOWN", []),
        ("enp83s0f1np1", "DOWN", []), ("enp92s0np0", "UP", ["10.99.94.59/31"]),
        ("enp155s0np0", "UP", ["10.99.95.59/31"]), ("enp170s0np0", "UP", ["10.99.96.59/31"]),
        ("enp187s0np0", "UP", ["10.99.97.59/31"]), ("enp210s0f0np0", "UP", []),
        ("enp210s0f1np1", "DOWN", []), ("enp218s0np0", "UP", ["10.99.98.59/31"]),
        ("bond0", "UP", ["10.73.175.137/29"]),
    ]
    return Topology(
        hostname="tpgds-aihub0007",
        gpus=[Gpu(index=i, numa=0, cpu_affinity="0-191") for i in range(8)],
        gpu_links=_nv_matrix(8, 18),
        gpu_nic_distance=_distances(table),
        nics=[Nic(name=n, netdev=dev, state=state) for n, (dev, state) in ibdev2netdev.items()],
        rails=_rails(table),
        interfaces=[Interface(name=n, state=s, ipv4=v4) for n, s, v4 in ip_br],
        notes=["numa=off: every GPU reports NUMA 0 and CPU 0-191"],
    )


def cx7_show_gids() -> Topology:
    """rdma/cx7-roce-show_gids-ibv_devinfo.txt (tpgds-aihub0001, mlx5_0 only)."""
    return Topology(
        hostname="tpgds-aihub0001",
        nics=[Nic(
            name="mlx5_0", netdev="ens108np0", transport="InfiniBand", link_layer="Ethernet",
            vendor_id="0x02c9", vendor_part_id=4129, fw_ver="28.43.2026", board_id="MT_0000000838",
            state="PORT_ACTIVE", active_mtu=4096, max_mtu=4096, gid_index=3, gid_ipv4="10.99.91.39",
        )],
    )


def h200_devinfo() -> Topology:
    """rdma/h200-node-10cx7-plus-cx6lx-bond-ibv_devinfo.txt (11 hca_ids, no topo -m)."""
    cx7 = [f"mlx5_{i}" for i in (0, 1, 2, 10, 11, 3, 4, 5, 6, 7)]
    nics = [
        Nic(name=n, transport="InfiniBand", link_layer="Ethernet", vendor_part_id=4129,
            state="PORT_ACTIVE", active_mtu=4096, max_mtu=4096)
        for n in cx7
    ]
    nics.append(Nic(name="mlx5_bond_0", transport="InfiniBand", link_layer="Ethernet", vendor_part_id=4127,
                    fw_ver="26.43.2026", state="PORT_ACTIVE", active_mtu=1024, max_mtu=4096))
    return Topology(nics=nics)


def dgx_a100() -> Topology:
    """topo/dgx-a100-8gpu-12mlx5.txt (old format: NIC columns named mlx5_N, no NIC rows' affinity)."""
    pxb = {0: ("mlx5_0", "mlx5_1"), 1: ("mlx5_0", "mlx5_1"), 2: ("mlx5_2", "mlx5_3"), 3: ("mlx5_2", "mlx5_3"),
           4: ("mlx5_6", "mlx5_7"), 5: ("mlx5_6", "mlx5_7"), 6: ("mlx5_8", "mlx5_9"), 7: ("mlx5_8", "mlx5_9")}
    names = [f"mlx5_{i}" for i in range(12)]
    table: dict[int, dict[str, PcieDistance]] = {
        gpu: {nic: ("PXB" if nic in pxb[gpu] else "SYS") for nic in names} for gpu in range(8)
    }
    numa = [3, 3, 1, 1, 7, 7, 5, 5]
    return Topology(
        gpus=[Gpu(index=i, numa=numa[i]) for i in range(8)],
        gpu_links=_nv_matrix(8, 12),
        gpu_nic_distance=_distances(table),
        rails=_rails(table),
    )


def simai_a100() -> Topology:
    """topo_xml/alibaba-simai-8xa100-5x-cx6dx-bond.xml.txt (Alibaba SimAI, sm=80, NVSwitch c0-c5)."""
    pairs = {1: (0, 1), 2: (2, 3), 3: (4, 5), 4: (6, 7)}
    table: dict[int, dict[str, PcieDistance]] = {}
    for gpu in range(8):
        row: dict[str, PcieDistance] = {"mlx5_bond_0": "PHB" if gpu < 4 else "SYS"}
        for bond, gpus in pairs.items():
            near_socket = (gpu < 4) == (gpus[0] < 4)
            row[f"mlx5_bond_{bond}"] = "PXB" if gpu in gpus else ("PHB" if near_socket else "SYS")
        table[gpu] = row
    return Topology(
        gpus=[Gpu(index=i, compute_capability="8.0", numa=0 if i < 4 else 1) for i in range(8)],
        gpu_links=_nv_matrix(8, 12),
        gpu_nic_distance=_distances(table),
        nics=[Nic(name=f"mlx5_bond_{i}", vendor_part_id=4125, rate_gbps=200.0, gdr_capable=True,
                  link_layer="Ethernet") for i in range(5)],
        rails=_rails(table),
        nvswitch=True,
    )


def lingjun_b300() -> Topology:
    """topo/alibaba-lingjun-b300-8gpu-8cx8-bond.txt (gpulingjun010006136067, space-aligned excerpt)."""
    names = [f"mlx5_bond_{i}" for i in range(8)]
    table: dict[int, dict[str, PcieDistance]] = {}
    for gpu in range(8):
        table[gpu] = {
            nic: ("PXB" if k == gpu else ("NODE" if (k < 4) == (gpu < 4) else "SYS"))
            for k, nic in enumerate(names)
        }
    return Topology(
        hostname="gpulingjun010006136067",
        gpus=[Gpu(index=i, numa=0 if i < 4 else 1,
                  cpu_affinity="0-63,128-191" if i < 4 else "64-127,192-255") for i in range(8)],
        gpu_links=_nv_matrix(8, 18),
        gpu_nic_distance=_distances(table),
        rails=_rails(table),
    )


def gcp_a3high_no_nics() -> Topology:
    """topo/gcp-a3high-8xh100-no-nic-columns.txt (GKE pod: 8x H100 NV18, no RDMA NIC)."""
    return Topology(
        gpus=[Gpu(index=i, numa=0 if i < 4 else 1) for i in range(8)],
        gpu_links=_nv_matrix(8, 18),
    )


def lab_sockets_only() -> Topology:
    """The local lab's node shape (no GPU, no RDMA): one veth-backed eth0 in a namespace."""
    return Topology(
        hostname="lab-node-0",
        interfaces=[
            Interface(name="lo", state="UNKNOWN", mtu=65536, ipv4=["127.0.0.1/8"]),
            Interface(name="eth0", state="UP", mtu=1500, ipv4=["10.42.0.5/24"]),
        ],
    )


def erdma_node(mtu: int) -> Topology:
    """An Alibaba eRDMA node as Alibaba's pages describe it (erdma_0 behind eth0).

    There is no real eRDMA capture in shared/fixtures yet, so this one is the shape the
    documentation gives (device prefix erdma, eth0, vendor 0x1ded), not a capture.
    """
    return Topology(
        hostname="erdma-node",
        nics=[Nic(name="erdma_0", netdev="eth0", transport="eRDMA", vendor_id="0x1ded",
                  state="PORT_ACTIVE", link_layer="Ethernet")],
        interfaces=[Interface(name="eth0", state="UP", mtu=mtu, ipv4=["10.42.0.7/24"])],
    )
