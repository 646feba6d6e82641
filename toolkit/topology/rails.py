"""One vocabulary for rails: what an active RDMA device is, and which devices are a node's rails.

`detect` (Topology.rails), `tune` (NCCL_IB_HCA and the rules that follow from it) and `check-log`
(was every rail used?) all ask here, so they can never disagree about what the node's rails are.

- A NIC's *distance* to a GPU is the `nvidia-smi topo -m` cell (or the NCCL XML equivalent).
- A NIC's *state* is `active`, `inactive` or `unknown`. Only a state a capture reports counts:
  `PORT_ACTIVE` (ibv_devinfo), `Active` (ibstat), `Up` (ibdev2netdev), `ACTIVE` (rdma link), or a
  listing by NCCL itself (its topology XML and its `NET/IB : Using` line name only ports that
  were active when it ran). A device only `topo -m` shows has an *unknown* state: it is a PCI
  function, not yet an RDMA device anyone saw up.
- A *rail* is a device that serves GPUs, exists as an RDMA device and is up: with GPU<->NIC
  distances, one with a GPU at PIX/PXB (NEAR); without them, every active device less ports that
  look like management. Rails of different classes (link layer, speed) are never mixed silently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, cast

from toolkit.topology.model import DISTANCE_ORDER, Interface, Nic, PcieDistance, Rail, Topology, natural_key

NEAR = ("PIX", "PXB")  # GPU<->NIC distances that do not cross a PCIe host bridge
# A NIC is a rail only when a GPU sits on the same PCIe switch as it: that is where GPUDirect
# RDMA runs at full speed. A NIC that only reaches GPUs through the CPU (PHB/NODE/SYS) is a
# storage, management or front-end port even when it carries RDMA (DGX A100 mlx5_4/5).
RAIL_DISTANCES: tuple[str, ...] = NEAR

NicState = Literal["active", "inactive", "unknown"]

# Kinds of capture that list every RDMA device of the node (their absence from it means the
# device is not an RDMA device there), and NCCL's own listings (active ports only, after NCCL's
# NCCL_IB_HCA filter: proof a device is up, not a full inventory).
RDMA_TOOLS: tuple[str, ...] = ("ibv_devinfo", "ibstat", "ibdev2netdev", "rdma-link", "sysfs")
NCCL_LISTINGS: tuple[str, ...] = ("nccl-topo-xml", "nccl-log")

_ACTIVE = frozenset({"PORT_ACTIVE", "ACTIVE", "UP"})
_INACTIVE = frozenset({
    "PORT_DOWN", "DOWN", "PORT_INIT", "INIT", "INITIALIZING", "PORT_ARMED", "ARMED", "PORT_NOP", "NOP",
    "POLLING", "DISABLED", "PORT_ACTIVE_DEFER", "ACTIVE_DEFER", "LINKDOWN",
})
_PLACEHOLDER = re.compile(r"NIC\d+")


def is_placeholder(name: str) -> bool:
    """`NIC3`: a topo -m column whose NIC Legend is missing, not a device name NCCL can match."""
    return bool(_PLACEHOLDER.fullmatch(name))


def compute_rails(gpu_nic_distance: dict[str, dict[str, PcieDistance]]) -> list[Rail]:
    """Rails from a GPU -> NIC distance table: each NIC with its nearest GPUs at PIX/PXB.

    Names decide nothing here: `mlx5_bond_*` devices are rails on Alibaba Lingjun nodes and a
    front-end port on others, so only the PCIe distance counts. This is the structural view
    (`Topology.rails`); `select_rails` adds whether each device exists and is up.
    """
    nics: list[str] = []
    for per_nic in gpu_nic_distance.values():
        nics.extend(name for name in per_nic if name not in nics)
    if not any(d in RAIL_DISTANCES for per_nic in gpu_nic_distance.values() for d in per_nic.values()):
        return _nearest_rails(gpu_nic_distance, nics)
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


def rails_near(rails: Iterable[Rail]) -> bool:
    """Whether every rail has its GPUs at PIX/PXB (False: they are each GPU's nearest NICs instead,
    see `_nearest_rails`)."""
    return all(rail.distance in NEAR for rail in rails)


def _nearest_rails(gpu_nic_distance: dict[str, dict[str, PcieDistance]], nics: list[str]) -> list[Rail]:
    """No NIC shares a PCIe switch with any GPU (a PCIe server with one RDMA card, a VM): distance
    then does not tell rails from front-end ports, so each GPU's nearest NICs are its rails. A node
    whose only RDMA card sits behind the CPU still sends its GPUs' traffic through it."""
    best_of: dict[str, list[tuple[int, int]]] = {}
    for gpu, per_nic in gpu_nic_distance.items():
        ranks = {nic: DISTANCE_ORDER.index(d) for nic, d in per_nic.items() if d not in ("X", "NV")}
        if not ranks:
            continue
        best = min(ranks.values())
        for nic, rank in ranks.items():
            if rank == best:
                best_of.setdefault(nic, []).append((rank, int(gpu)))
    rails = []
    for nic in nics:
        if nic in best_of:
            rank = min(r for r, _ in best_of[nic])
            gpus = sorted(g for r, g in best_of[nic] if r == rank)
            rails.append(Rail(nic=nic, gpus=gpus, distance=cast(PcieDistance, DISTANCE_ORDER[rank])))
    return rails


def nic_state(nic: Nic) -> NicState:
    """`active`, `inactive`, or `unknown` (no state reported, or one that is cut or garbled)."""
    if nic.state is None:
        return "active" if any(kind in NCCL_LISTINGS for kind in nic.seen_by) else "unknown"
    state = re.sub(r"\s*\(\d+\)$", "", nic.state).strip().upper().replace(" ", "_")
    if state in _ACTIVE:
        return "active"
    if state in _INACTIVE:
        return "inactive"
    return "unknown"


def is_active(nic: Nic) -> bool:
    """Known to be up. A device whose state is not reported is *not* active (see `nic_state`)."""
    return nic_state(nic) == "active"


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


def _listed_by(nics: Iterable[Nic], kinds: tuple[str, ...]) -> set[str]:
    return {n.name for n in nics if any(kind in kinds for kind in n.seen_by)}


def nic_class(nic: Nic) -> str:
    """`200 Gb/s InfiniBand`, `25 Gb/s Ethernet`, `Ethernet` (speed unknown) ..."""
    return _class_of((nic.link_layer, nic.rate_gbps))


@dataclass(frozen=True)
class RailChoice:
    """The node's rails (`names`, naturally sorted) and why others are not (`notes`).

    `unknown`: devices that would be rails but whose state no capture reports; they are left out
    and a note says so. Empty `names` means: write no device list, leave NCCL's detection on.
    """

    names: list[str]
    notes: list[str]
    unknown: list[str] = field(default_factory=list)


def _join(names: Iterable[str]) -> str:
    return ", ".join(sorted(names, key=natural_key))


def _device_states(nics: list[Nic]) -> dict[str, NicState]:
    """Per device name (all its ports): active if a port is, else inactive if one is, else unknown."""
    states: dict[str, NicState] = {}
    for nic in nics:
        state = nic_state(nic)
        current = states.get(nic.name)
        if current == "active" or (current == "inactive" and state == "unknown"):
            continue
        states[nic.name] = state
    return states


def select_rails(topology: Topology) -> RailChoice:
    """Active RDMA devices that serve GPUs, naturally sorted, or none with the reason in `notes`.

    With GPU<->NIC distances, a rail is a NIC with a GPU at PIX/PXB (NICs paired only with each
    other, like storage or in-band ports, are not). Without them every listed device is a
    candidate, less ports that look like management: a bond netdev with a small MTU, or an active
    MTU below the other ports' (the H200 capture's ConnectX-6 Lx bond at 1024 next to ConnectX-7
    at 4096). Then:

    - a candidate must exist as an RDMA device (when an RDMA tool listed the node's devices, a
      topo -m column it does not list is not one) and be up;
    - when a candidate's state is unknown, no list is made: one without it could leave a rail out;
    - without distances the list is the device inventory, so it must come from a capture that
      lists every device (not `ibv_devinfo -d mlx5_0`, not an NCCL log's filtered `Using` line);
    - candidates of different classes (InfiniBand vs Ethernet, 25 vs 200 Gb/s) are narrowed to the
      class that serves the GPUs, and without distances to none.
    """
    notes: list[str] = []
    nics = topology.nics
    by_name: dict[str, Nic] = {}
    for nic in nics:
        by_name.setdefault(nic.name, nic)
    states = _device_states(nics)
    complete = _listed_by(nics, RDMA_TOOLS)
    rdma_seen = {n.name for n in nics if any(k != "topo-matrix" for k in n.seen_by)}
    if not any(n.seen_by for n in nics):
        # A Topology built without provenance (by hand, or by an older caller): a NIC that
        # reports a state came from an RDMA tool's listing, so take those as the inventory.
        complete = rdma_seen = {n.name for n in nics if n.state is not None}
    distances = nic_gpus(topology)
    named = {n: d for n, d in distances.items() if not is_placeholder(n)}
    placeholders = [n for n in distances if is_placeholder(n)]

    near_unnamed = [n for n in placeholders if any(v in NEAR for v in distances[n].values())]
    if named:
        candidates = {n for n, d in named.items() if any(v in NEAR for v in d.values())}
        nearest_only = not candidates and not near_unnamed
        if nearest_only:
            # No NIC on any GPU's PCIe switch: each GPU's nearest NICs carry its traffic.
            nearest = {r.nic: r for r in compute_rails(topology.gpu_nic_distance) if r.nic in named}
            candidates = set(nearest)
            if candidates:
                shown = ", ".join(f"{n} ({nearest[n].distance} to GPU {', '.join(map(str, nearest[n].gpus))})"
                                  for n in sorted(candidates, key=natural_key))
                notes.append(f"no RDMA NIC shares a PCIe switch with a GPU: each GPU's nearest NICs are its rails: "
                             f"{shown}; GPUDirect RDMA through the CPU is slower, and NCCL may leave it off "
                             "(NCCL_NET_GDR_LEVEL)")
        far = set(named) - candidates
        if far and nearest_only:
            notes.append(f"not rails (no GPU has them among its nearest NICs): {_join(far)}")
        elif far:
            notes.append(f"not rails (no GPU at PIX/PXB): {_join(far)}")
        if near_unnamed:
            notes.append(
                f"nvidia-smi topo -m names no device for {_join(near_unnamed)}, which a GPU sits next to (its NIC "
                "Legend is cut or incomplete): a device list without them could leave a rail out"
            )
            return RailChoice([], notes, sorted(near_unnamed, key=natural_key))
    else:
        candidates = {name for name in by_name if not is_placeholder(name)}
        if placeholders:
            notes.append(
                f"nvidia-smi topo -m names no device for {_join(placeholders)} (no NIC Legend, or the capture was "
                "cut before it): its GPU<->NIC distances cannot be tied to RDMA device names"
            )
        elif topology.gpus and candidates:
            notes.append("no GPU<->NIC distances in the capture: every active RDMA device is taken as a rail")

    if complete:
        missing = {n for n in candidates if n not in rdma_seen}
        if missing:
            notes.append(f"not rails (in nvidia-smi topo -m but not listed as RDMA devices by {_tools(nics)}): "
                         f"{_join(missing)}")
            candidates -= missing
    inactive = {n for n in candidates if states.get(n) == "inactive"}
    unknown = {n for n in candidates if states.get(n, "unknown") == "unknown"}
    if inactive:
        notes.append(f"not used (port not active): {_join(inactive)}")
    names = candidates - inactive - unknown
    if not named:
        names -= set(_management_ports(topology, [by_name[n] for n in names if n in by_name], notes))
    unknown_list = sorted(unknown, key=natural_key)
    if unknown:
        notes.append(
            f"state unknown, so not counted as active: {_join(unknown)} (no ibv_devinfo, ibstat, ibdev2netdev or rdma "
            "link output lists them with a state)"
            + (f"; a device list of the others ({_join(names)}) could leave a rail out" if names else "")
        )
        return RailChoice([], notes, unknown_list)
    if not named and names and not complete:
        notes.append(
            f"{_join(names)}: named only by {_partial_sources(nics, names)}, not by a listing of every RDMA device "
            "of the node; a device list of them could leave others out"
        )
        return RailChoice([], notes, unknown_list)
    if placeholders and not named and names and (
            len(near_unnamed) != len(placeholders) or len(names) != len(near_unnamed)):
        notes.append(
            f"{len(near_unnamed)} of the matrix's {len(placeholders)} unnamed NICs have a GPU at PIX/PXB and "
            f"{len(names)} active RDMA devices are named ({_join(names)}): which of them are the GPUs' NICs is not "
            "known"
        )
        return RailChoice([], notes, unknown_list)
    names = _one_class(names, by_name, named, notes)
    names = _hardware_only(names, by_name, notes)
    return RailChoice(sorted(names, key=natural_key), notes, unknown_list)


def _hardware_only(names: set[str], by_name: dict[str, Nic], notes: list[str]) -> set[str]:
    """Software RDMA (rxe, siw) and plain network interfaces are never rails; other vendors' hardware is one,
    named as what it is."""
    from toolkit.topology.rdma_kinds import kinds_note, rdma_kind  # rdma_kinds imports the parsers

    devices = [by_name[n] for n in sorted(names, key=natural_key) if n in by_name]
    notes.extend(kinds_note(devices))
    return {n for n in names if n not in by_name or rdma_kind(by_name[n]).kind not in ("software", "netdev")}


_SOURCE_WORDS = {
    "nccl-log": "the NCCL log's `NET/IB : Using` line (the devices that passed that run's NCCL_IB_HCA filter, "
                "on any host of the job)",
    "nccl-topo-xml": "the NCCL topology XML",
    "rdma-link": "rdma link",
    "sysfs": "/sys/class/infiniband",
}


def source_words(kind: str) -> str:
    """A `Nic.seen_by` entry as a reader would name it."""
    return _SOURCE_WORDS.get(kind, kind)


def _partial_sources(nics: list[Nic], names: set[str]) -> str:
    kinds = sorted({k for n in nics if n.name in names for k in n.seen_by if k != "topo-matrix"})
    return ", ".join(source_words(k) for k in kinds) or "no RDMA tool"


def _tools(nics: list[Nic]) -> str:
    kinds = sorted({k for n in nics for k in n.seen_by if k in RDMA_TOOLS}, key=RDMA_TOOLS.index)
    return ", ".join(source_words(k) for k in kinds)


def _one_class(names: set[str], by_name: dict[str, Nic], named: dict[str, dict[int, str]],
               notes: list[str]) -> set[str]:
    """Never a rail set of mixed link layers or speeds without saying so.

    With distances, keep the class whose NICs serve the most GPUs at PIX/PXB (then the fastest) and
    name the others; without them there is nothing to choose by: no list at all.
    """
    groups: dict[tuple[str | None, float | None], set[str]] = {}
    for name in names:
        nic = by_name.get(name)
        groups.setdefault((nic.link_layer, nic.rate_gbps) if nic else (None, None), set()).add(name)
    layers = {layer for layer, _ in groups if layer is not None}
    rates = {rate for _, rate in groups if rate is not None}
    if len(layers) <= 1 and len(rates) <= 1:
        return names
    ordered = sorted(groups.items(), key=lambda item: min(natural_key(n) for n in item[1]))
    described = "; ".join(f"{_class_of(key)}: {_join(members)}" for key, members in ordered)
    if not named:
        notes.append(
            f"RDMA devices of different classes ({described}) and no GPU<->NIC distances to choose between them: "
            "one NCCL_IB_HCA list would mix them"
        )
        return set()

    def served(item: tuple[tuple[str | None, float | None], set[str]]) -> tuple[int, float]:
        (_, rate), members = item
        gpus = {g for n in members for g, d in named.get(n, {}).items() if d in NEAR}
        return len(gpus), rate or 0.0

    key, best = max(ordered, key=served)
    notes.append(
        f"RDMA devices of different classes serve the GPUs ({described}): the rails are the {_class_of(key)} "
        f"devices ({_join(best)}), which serve the most GPUs; left out: {_join(names - best)}"
    )
    return best


def _class_of(key: tuple[str | None, float | None]) -> str:
    layer, rate = key
    text = layer or "link layer unknown"
    return f"{rate:g} Gb/s {text}" if rate is not None else text


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
