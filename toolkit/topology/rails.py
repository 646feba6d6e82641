"""One vocabulary for rails: what an active RDMA device is, and which devices are a node's rails.

`tune` (NCCL_IB_HCA and the rules that follow from it) and `check-log` (was every rail used?)
both ask here, so they can never disagree about what the node's rails are.

- A NIC's *distance* to a GPU is the `nvidia-smi topo -m` cell (or the NCCL XML equivalent).
- A *rail* is an active RDMA device that serves GPUs: with GPU<->NIC distances, one with a GPU at
  PIX/PXB (NEAR); without them, every active device less ports that look like management.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolkit.topology.model import Interface, Nic, Topology, natural_key

NEAR = ("PIX", "PXB")  # GPU<->NIC distances that do not cross a PCIe host bridge


def is_active(nic: Nic) -> bool:
    if nic.state is None:
        return True  # not reported: do not drop a device we cannot judge
    state = nic.state.upper()
    return not any(word in state for word in ("DOWN", "INIT", "POLL", "DISABLED", "ARMED"))


def nic_gpus(topology: Topology) -> dict[str, dict[int, str]]:
    """NIC name -> {GPU index: distance}, from the rails and the GPU x NIC matrix."""
    table: dict[str, dict[int, str]] = {}
    for gpu_key, row in topology.gpu_nic_distance.items():
        for nic, distance in row.items():
            table.setdefault(nic, {})[int(gpu_key)] = distance
    for rail in topology.rails:
        for gpu in rail.gpus:
            table.setdefault(rail.nic, {}).setdefault(gpu, rail.distance)
    return table


def interface_named(topology: Topology, name: str | None) -> Interface | None:
    if name is None:
        return None
    return next((i for i in topology.interfaces if i.name == name), None)


@dataclass(frozen=True)
class RailChoice:
    names: list[str]
    notes: list[str]


def select_rails(topology: Topology) -> RailChoice:
    """Active RDMA devices that serve GPUs, naturally sorted.

    With GPU<->NIC distances, a rail is a NIC with a GPU at PIX/PXB (NICs paired only with each
    other, like storage or in-band ports, are not). Without them every device is a candidate, less
    ports that look like management: a bond netdev with a small MTU, or an active MTU below the
    other ports' (the H200 capture's ConnectX-6 Lx bond at 1024 next to ConnectX-7 at 4096).
    """
    by_name = {nic.name: nic for nic in topology.nics}
    distances = nic_gpus(topology)
    names = set(by_name) | set(distances)
    notes: list[str] = []
    if distances:
        near = {n for n in names if any(d in NEAR for d in distances.get(n, {}).values())}
        far = sorted(names - near, key=natural_key)
        if far:
            notes.append(f"not rails (no GPU at PIX/PXB): {', '.join(far)}")
        names = near
    elif topology.gpus:
        notes.append("no GPU<->NIC distances in the capture: every active RDMA device is taken as a rail")
    inactive = sorted((n for n in names if n in by_name and not is_active(by_name[n])), key=natural_key)
    if inactive:
        notes.append(f"not used (port not active): {', '.join(inactive)}")
        names -= set(inactive)
    if not distances:
        names -= set(_management_ports(topology, [by_name[n] for n in names if n in by_name], notes))
    return RailChoice(sorted(names, key=natural_key), notes)


def _management_ports(topology: Topology, nics: list[Nic], notes: list[str]) -> list[str]:
    dropped = []
    mtus = [n.active_mtu for n in nics if n.active_mtu is not None]
    top_mtu = max(mtus) if mtus else None
    for nic in nics:
        iface = interface_named(topology, nic.netdev)
        small_bond = (
            iface is not None and (iface.kind == "bond" or iface.name.startswith("bond"))
            and iface.mtu is not None and iface.mtu <= 1500
        )
        low_mtu = top_mtu is not None and nic.active_mtu is not None and nic.active_mtu < top_mtu
        if small_bond or low_mtu:
            why = f"bond {nic.netdev} with MTU {iface.mtu}" if small_bond and iface else (
                f"active_mtu {nic.active_mtu} below the other ports' {top_mtu}"
            )
            notes.append(f"{nic.name} looks like a management port ({why}): not a rail")
            dropped.append(nic.name)
    return dropped
