"""The `Topology` of one node, as the parsers find it.

This is a contract between the parsers (which fill it), the tuning rules (which read it) and
`gpuctl detect --json` (which prints it). Fields may be added; existing names are not renamed.
Unknown stays `None`: a parser never guesses a value the capture does not show.
"""

from __future__ import annotations

import re
from typing import Literal, cast

from pydantic import BaseModel, ConfigDict, Field

# Distances as nvidia-smi topo -m prints them, nearest first. "NV" stands for any NV# cell.
PcieDistance = Literal["X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS"]
DISTANCE_ORDER: tuple[str, ...] = ("X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS")


def natural_key(name: str) -> tuple[int | str, ...]:
    """mlx5_2 sorts before mlx5_10 (ibdev2netdev and sysfs list lexically; people read numerically)."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Gpu(_Model):
    index: int
    model: str | None = None
    memory_mib: int | None = None
    bus_id: str | None = None  # normalised to 0000:xx:yy.z lower case
    numa: int | None = None
    cpu_affinity: str | None = None  # as printed, e.g. "48-63,176-191"
    compute_capability: str | None = None  # "9.0"
    uuid: str | None = None


class GpuLink(_Model):
    """One cell of the GPU x GPU matrix."""

    kind: PcieDistance
    nvlinks: int | None = None  # the N of NV<N>; None when the cell is not NV#


class Nic(_Model):
    """One RDMA device (an ibverbs hca_id) and, where known, its Ethernet side."""

    name: str  # hca_id: mlx5_0, mlx5_bond_0, erdma_0
    port: int | None = None  # ibverbs port (1-based); a multi-port HCA gives one Nic per port
    netdev: str | None = None
    transport: Literal["InfiniBand", "eRDMA", "iWARP", "unknown"] | None = None
    link_layer: Literal["Ethernet", "InfiniBand"] | None = None
    vendor_id: str | None = None  # "0x02c9" (Mellanox), "0x1ded" (Alibaba eRDMA)
    vendor_part_id: int | None = None  # 4129 = ConnectX-7
    model: str | None = None  # human name where the part id is known
    fw_ver: str | None = None
    board_id: str | None = None
    sys_image_guid: str | None = None
    state: str | None = None  # PORT_ACTIVE / ACTIVE / DOWN ... as reported
    rate_gbps: float | None = None
    active_mtu: int | None = None
    max_mtu: int | None = None
    gid_index: int | None = None  # RoCE v2 GID carrying an IPv4 address
    gid_ipv4: str | None = None
    numa: int | None = None
    bus_id: str | None = None
    gdr_capable: bool | None = None


class Interface(_Model):
    """A Linux network interface from `ip -j addr` / `ip -j link`."""

    name: str
    mtu: int | None = None
    state: str | None = None  # operstate: UP, DOWN, UNKNOWN
    kind: str | None = None  # bond, bridge, vlan, ... (None: plain device)
    master: str | None = None  # the bond or bridge this one belongs to
    ipv4: list[str] = Field(default_factory=list)  # CIDR notation, e.g. "10.0.0.5/24"
    ipv6: list[str] = Field(default_factory=list)
    mac: str | None = None


class Rail(_Model):
    """A NIC that serves GPUs, with the GPUs nearest to it."""

    nic: str
    gpus: list[int]
    distance: PcieDistance  # the nearest distance between this NIC and its GPUs


class Topology(_Model):
    hostname: str | None = None
    gpus: list[Gpu] = Field(default_factory=list)
    # gpu_links[i][j]: the link from GPU i to GPU j (diagonal is kind "X"). Empty without GPUs.
    gpu_links: list[list[GpuLink]] = Field(default_factory=list)
    # gpu_nic_distance[gpu index as str][nic name] -> distance, from topo -m or the NCCL XML.
    gpu_nic_distance: dict[str, dict[str, PcieDistance]] = Field(default_factory=dict)
    nics: list[Nic] = Field(default_factory=list)
    rails: list[Rail] = Field(default_factory=list)
    interfaces: list[Interface] = Field(default_factory=list)
    nvswitch: bool | None = None  # NVSwitch fabric present (NVLS possible on sm90+)
    pcie_only_view: bool = False  # the matrix came from `topo -mp`: no NV# does not mean no NVLink
    driver_version: str | None = None
    cuda_version: str | None = None
    nccl_version: str | None = None
    # What the parsers noticed and the user should know ("numa=off", "replayed capture", ...).
    notes: list[str] = Field(default_factory=list)
    # Files the topology was built from, in the order read.
    sources: list[str] = Field(default_factory=list)


# A NIC is a rail only when a GPU sits on the same PCIe switch as it: that is where GPUDirect
# RDMA runs at full speed. A NIC that only reaches GPUs through the CPU (PHB/NODE/SYS) is a
# storage, management or front-end port even when it carries RDMA (DGX A100 mlx5_4/5).
RAIL_DISTANCES: tuple[str, ...] = ("PIX", "PXB")


def compute_rails(gpu_nic_distance: dict[str, dict[str, PcieDistance]]) -> list[Rail]:
    """Rails from a GPU -> NIC distance table: each NIC with its nearest GPUs at PIX/PXB.

    Names decide nothing here: `mlx5_bond_*` devices are rails on Alibaba Lingjun nodes and a
    front-end port on others, so only the PCIe distance counts.
    """
    nics: list[str] = []
    for per_nic in gpu_nic_distance.values():
        nics.extend(name for name in per_nic if name not in nics)
    rails: list[Rail] = []
    for nic in nics:
        near = [
            (DISTANCE_ORDER.index(per_nic[nic]), int(gpu))
            for gpu, per_nic in gpu_nic_distance.items()
            if per_nic.get(nic) in RAIL_DISTANCES
        ]
        if not near:
            continue
        best = min(rank for rank, _ in near)
        gpus = sorted(gpu for rank, gpu in near if rank == best)
        distance = cast(PcieDistance, DISTANCE_ORDER[best])
        rails.append(Rail(nic=nic, gpus=gpus, distance=distance))
    return rails
