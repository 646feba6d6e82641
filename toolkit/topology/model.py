"""The `Topology` of one node, as the parsers find it: data types only.

This is a contract between the parsers (which fill it), the tuning rules (which read it) and
`gpuctl detect --json` (which prints it). Fields may be added; existing names are not renamed.
Unknown stays `None`: a parser never guesses a value the capture does not show. What a rail is
(and which devices are active) is decided in `toolkit.topology.rails`, not here.
"""

from __future__ import annotations

import re
from typing import Any, Literal

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
    # The captures that listed this device, by kind: "ibv_devinfo", "ibstat", "ibdev2netdev",
    # "rdma-link", "show_gids", "sysfs" (RDMA tools: the device exists), "topo-matrix" (a column of
    # nvidia-smi topo -m: a PCI function, not proof of an RDMA device), "nccl-topo-xml" and
    # "nccl-log" (NCCL lists only ports that were active when it ran).
    seen_by: list[str] = Field(default_factory=list)


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
    # Whether RDMA devices are known to be there: True when a capture lists one (an RDMA tool,
    # the NCCL XML, an NCCL log using NET/IB); False only when an RDMA tool ran and listed none
    # ("No IB devices found", an empty `rdma link` from a tool that is installed); None when no
    # capture says either way (only nvidia-smi, only nccl-tests output, no RDMA tool ran).
    rdma_devices_listed: bool | None = None
    # What that answer rests on, one line per capture ("ibv_devinfo: 11 devices (file)").
    rdma_evidence: list[str] = Field(default_factory=list)
    # What the parsers noticed and the user should know ("numa=off", "replayed capture", ...).
    notes: list[str] = Field(default_factory=list)
    # Files the topology was built from, in the order read.
    sources: list[str] = Field(default_factory=list)
    # The parsed NCCL log among the captures (toolkit.topology.nccl_log.NcclLogSummary), for the
    # tuner's evidence (net plugin, devices NCCL used). Not part of `detect --json`.
    nccl_log: Any = Field(default=None, exclude=True, repr=False)
