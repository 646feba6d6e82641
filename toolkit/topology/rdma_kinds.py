"""What kind of RDMA device a NIC is: ConnectX, Alibaba eRDMA, another vendor's hardware, or
software emulation. gpuctl's tuning rules and checks are written for ConnectX (RoCE and IB) and
eRDMA; anything else is named wherever it would become a rail, and software RDMA never is one.

Read from what the captures say, never guessed: the ibverbs vendor id and part id, the provider
prefix of the device name (the kernel driver names its devices: rxe0, bnxt_re0, irdma0, qedr0), and
ibstat's `CA type` words. A device renamed by rdma-core's udev rule to its PCI path (`rocep216s0f1`)
says nothing of its vendor: unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from toolkit.topology.model import Nic
from toolkit.topology.rdma import MELLANOX_PARTS, VENDOR_ALIBABA_ERDMA, VENDOR_MELLANOX

Kind = Literal["connectx", "erdma", "software", "netdev", "other", "unknown"]


@dataclass(frozen=True)
class RdmaKind:
    kind: Kind
    what: str  # "Soft-RoCE (rxe): RDMA emulated in software ...", "Broadcom NetXtreme RoCE (bnxt_re)"


# Device-name prefixes the kernel's RDMA drivers give their devices (drivers/infiniband/hw/* and
# sw/*: each registers "<prefix>%d"), with the hardware they drive.
_SOFTWARE = (
    (re.compile(r"rxe"), "Soft-RoCE (rxe): RDMA emulated by the kernel over an Ethernet interface, no RDMA hardware "
                         "and no GPUDirect RDMA"),
    (re.compile(r"siw"), "Soft-iWARP (siw): RDMA emulated by the kernel over TCP, no RDMA hardware and no "
                         "GPUDirect RDMA"),
)
_HARDWARE = (
    (re.compile(r"bnxt_re"), "Broadcom NetXtreme RoCE (bnxt_re)"),
    (re.compile(r"irdma|i40iw"), "Intel Ethernet RDMA (irdma)"),
    (re.compile(r"qedr"), "Marvell/QLogic FastLinQ RoCE (qedr)"),
    (re.compile(r"hns"), "Huawei HiSilicon RoCE (hns)"),
    (re.compile(r"ionic"), "AMD Pensando RDMA (ionic)"),
    (re.compile(r"efa"), "AWS Elastic Fabric Adapter (efa)"),
    (re.compile(r"hfi1"), "Intel Omni-Path (hfi1)"),
    (re.compile(r"mana"), "Microsoft Azure MANA RDMA (mana)"),
    (re.compile(r"mlx4"), "Mellanox ConnectX-3 (mlx4)"),
)


# Linux interface names (systemd.net-naming-scheme(7): en*, ib*; the kernel's eth*, bond*): NCCL's
# topology XML lists these for its socket transport; they are not ibverbs devices.
_NETDEV = re.compile(r"(?:eth\d+|en[bopsx]\w+|bond\d+|ib\d+)")


def rdma_kind(nic: Nic) -> RdmaKind:
    name = nic.name
    if _NETDEV.fullmatch(name):
        return RdmaKind("netdev", "a network interface NCCL lists for its socket transport, not an RDMA device")
    for pattern, what in _SOFTWARE:
        if pattern.match(name):
            return RdmaKind("software", what)
    if nic.vendor_id == "0x0000" and (nic.fw_ver in (None, "0.0.0")):
        return RdmaKind("software", "vendor id 0x0000 and no firmware: a software RDMA device")
    if name.startswith("erdma") or nic.vendor_id == VENDOR_ALIBABA_ERDMA:
        return RdmaKind("erdma", "Alibaba eRDMA")
    if name.startswith("mlx5_") or nic.vendor_id == VENDOR_MELLANOX or (
            nic.vendor_part_id is not None and nic.vendor_part_id in MELLANOX_PARTS):
        return RdmaKind("connectx", nic.model or "Mellanox/NVIDIA ConnectX")
    for pattern, what in _HARDWARE:
        if pattern.match(name):
            return RdmaKind("other", what)
    if nic.model and "Broadcom" in nic.model:
        return RdmaKind("other", f"Broadcom ({nic.model})")
    return RdmaKind("unknown", "vendor not shown by the capture (no vendor id, and a device name that names no "
                               "driver)")


def kinds_note(nics: list[Nic]) -> list[str]:
    """One note per kind that gpuctl's rules are not written for, naming its devices."""
    found: dict[tuple[Kind, str], list[str]] = {}
    for nic in nics:
        kind = rdma_kind(nic)
        named = found.setdefault((kind.kind, kind.what), []) if kind.kind not in ("connectx", "erdma") else None
        if named is not None and nic.name not in named:
            named.append(nic.name)
    notes = []
    for (which, what), names in found.items():
        devices = ", ".join(names)
        if which in ("software", "netdev"):
            notes.append(f"{devices}: {what}: never a rail")
        elif which == "other":
            notes.append(f"{devices}: {what}, not an mlx5 ConnectX or eRDMA device, which gpuctl's tuning rules and "
                         "checks are written for; check this device's bandwidth with ib_write_bw before relying on it")
        else:
            notes.append(f"{devices}: RDMA device of unknown vendor ({what})")
    return notes
