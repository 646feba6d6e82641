"""Topology rules: small pure functions from what the node reports to NCCL settings with reasons.

Each rule takes a `Context` and returns an `Outcome` (settings of layer "topology-rule" plus notes
for the user). A rule that cannot decide from the capture sets nothing and says why in a note:
leaving NCCL's own choice is always better than guessing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from toolkit.topology.model import DISTANCE_ORDER, Nic, Topology, natural_key
from toolkit.topology.rails import NEAR, interface_named, is_active, nic_gpus, select_rails, source_words
from toolkit.tuning.config import NcclSetting
from toolkit.tuning.tables import VendorProfile, Version

ENV_DOCS = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
# Interfaces that never carry the cluster address (container/virtual plumbing).
_VIRTUAL_IF = re.compile(r"^(lo|docker|veth|virbr|cni|flannel|cali|tunl|kube|br-)")


@dataclass(frozen=True)
class Context:
    topology: Topology
    fabric: str  # erdma | rdma | tcp
    mtu: int | None
    nccl_version: Version | None
    profile: VendorProfile | None
    # The interface the provider built the cluster network on (ClusterOutputs), when known.
    fabric_interface: str | None = None
    # Whether `fabric` was asked for (the spec, --fabric) rather than inferred from the capture:
    # an asked-for tcp is positive evidence for sockets, an inferred one is only an absence.
    fabric_asked: bool = False


@dataclass
class Outcome:
    settings: list[NcclSetting] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _rule(name: str, value: str, reason: str, source: str) -> NcclSetting:
    return NcclSetting(name=name, value=value, layer="topology-rule", reason=reason, source=source)


def _dist_rank(distance: str) -> int:
    return DISTANCE_ORDER.index(distance)


def _rail_nics(ctx: Context, rails: list[str]) -> list[Nic]:
    by_name = {nic.name: nic for nic in ctx.topology.nics}
    return [by_name[n] for n in rails if n in by_name]


def _has_rdma(topology: Topology) -> bool:
    """Positive evidence of RDMA devices: a capture lists one, or reports one active."""
    return topology.rdma_devices_listed is True or any(is_active(n) for n in topology.nics)


def _names_rdma_devices(topology: Topology) -> bool:
    """The capture names RDMA devices (as the engine's fabric inference counts them): then a tcp
    fabric was asked for, not inferred from the capture."""
    return bool(topology.nics or topology.rails or any(row for row in topology.gpu_nic_distance.values()))


# ---------------------------------------------------------------------------- the rules


def rule_sockets_only(ctx: Context) -> Outcome:
    """NCCL_IB_DISABLE=1 only on positive evidence: the fabric asked for is tcp, or an RDMA tool
    ran and listed no device. A capture that merely shows no RDMA device proves nothing (only
    nvidia-smi was captured, or only an NCCL log): NCCL's own detection then stays in charge."""
    out = Outcome()
    topology = ctx.topology
    evidence = "; ".join(topology.rdma_evidence)
    if ctx.fabric != "tcp":
        if topology.rdma_devices_listed is False:
            out.notes.append(
                f"the fabric is {ctx.fabric} but the node lists no RDMA device ({evidence}): NCCL falls back to TCP "
                "sockets until one appears (check the RDMA driver); NCCL_IB_DISABLE is not set, so NCCL uses the "
                "device once it is there"
            )
        return out
    if _names_rdma_devices(topology):
        why = "the fabric asked for is tcp (the RDMA devices the capture shows are not to be used)"
    elif ctx.fabric_asked:
        why = "the fabric asked for is tcp"
    elif topology.rdma_devices_listed is False:
        why = f"no RDMA device on this node ({evidence})"
    else:
        shown = (f"the capture shows RDMA in use ({evidence}) but names no device"
                 if topology.rdma_devices_listed else
                 "no capture lists the node's RDMA devices or says it has none (ibv_devinfo, ibstat, "
                 "ibdev2netdev, rdma link, an NCCL topology XML, an NCCL log using NET/IB)")
        out.notes.append(
            f"NCCL_IB_DISABLE not written: {shown}, so a tcp fabric may only have been inferred from what the "
            "capture lacks. NCCL's own detection stays in charge: it uses TCP sockets only if it finds no RDMA "
            "device. To force sockets, pass --set NCCL_IB_DISABLE=1"
        )
        return out
    out.settings.append(_rule(
        "NCCL_IB_DISABLE", "1",
        f"{why}: NCCL uses TCP sockets (NET/Socket); disabling IB verbs avoids probing for devices",
        f"{ENV_DOCS}#nccl-ib-disable",
    ))
    if not topology.gpus:
        out.notes.append("no GPU in the capture: tuned for sockets only (a lab or CPU machine)")
    return out


def rule_ib_hca(ctx: Context) -> Outcome:
    """NCCL_IB_HCA from the rails `select_rails` is sure of, exact-matched so mlx5_1 cannot also
    match mlx5_10; no list (NCCL's detection) when a rail's state or name is unknown, or the
    classes are mixed with nothing to choose by."""
    out = Outcome()
    topology = ctx.topology
    if ctx.fabric == "tcp" or not (topology.nics or nic_gpus(topology)):
        return out
    choice = select_rails(topology)
    out.notes.extend(choice.notes)
    if not choice.names:
        out.notes.append("NCCL_IB_HCA not written: the capture does not show which RDMA devices are the node's "
                         "rails (see the notes above), so NCCL's own device detection stays in charge")
        return out
    rails = _rail_nics(ctx, choice.names)
    seen = sorted({k for n in rails for k in n.seen_by if k != "topo-matrix"})
    states = f"; seen up by {', '.join(source_words(k).split(' (')[0] for k in seen)}" if seen else ""
    # The leading '=' applies to the whole list (env docs: "A second optional prefix '=' indicates
    # that the tokens are exact names"). No ':port' suffix: all ports of each device are used.
    value = "=" + ",".join(choice.names)
    out.settings.append(_rule(
        "NCCL_IB_HCA", value,
        f"active RDMA devices{' that serve GPUs' if nic_gpus(topology) else ''} "
        f"({len(choice.names)} rail{'s' if len(choice.names) != 1 else ''}"
        f"{states}); the leading equals sign makes "
        "every name an exact match (without it mlx5_1 also selects mlx5_10..mlx5_19)",
        f"{ENV_DOCS}#nccl-ib-hca",
    ))
    return out


def rule_gid_index(ctx: Context) -> Outcome:
    """NCCL_IB_GID_INDEX from the RoCE v2 IPv4 GID the rails report (or, with no rail list, the
    active devices that report one: the index is not a narrowing, only which GID to use)."""
    out = Outcome()
    if ctx.fabric == "tcp":
        return out
    rails = _rail_nics(ctx, select_rails(ctx.topology).names) or [
        n for n in ctx.topology.nics if is_active(n) and n.gid_index is not None
    ]
    roce = [n for n in rails if n.link_layer == "Ethernet" or n.transport == "eRDMA"]
    if not roce:
        return out  # InfiniBand link layer routes by LID: no GID index needed
    found = {n.name: n.gid_index for n in roce if n.gid_index is not None}
    auto = ctx.nccl_version is not None and ctx.nccl_version >= (2, 21)
    source = f"{ENV_DOCS}#nccl-ib-gid-index"
    if not found:
        if not auto:
            out.notes.append(
                "RoCE GID index not in the capture and NCCL < 2.21 uses index 0 (link-local RoCE v1): "
                "run show_gids and pass --set NCCL_IB_GID_INDEX=<RoCE v2 IPv4 index>"
            )
        return out
    values = Counter(found.values())
    if len(values) == 1:
        index = next(iter(values))
        ips = sorted({n.gid_ipv4 for n in roce if n.gid_index == index and n.gid_ipv4})
        where = f" ({', '.join(ips)})" if ips else ""
        out.settings.append(_rule(
            "NCCL_IB_GID_INDEX", str(index),
            f"GID table: index {index} is the RoCE v2 GID carrying the IPv4 address{where} on "
            f"{', '.join(sorted(found, key=natural_key))}",
            source,
        ))
        return out
    if auto:
        out.settings.append(_rule(
            "NCCL_IB_GID_INDEX", "-1",
            f"the rails report different RoCE v2 IPv4 GID indexes ({dict(sorted(found.items()))}); "
            "NCCL >= 2.21 picks the RoCE v2 AF_INET GID per device when the index is -1",
            f"{ENV_DOCS}#nccl-ib-addr-family",
        ))
    else:
        index, _ = values.most_common(1)[0]
        out.settings.append(_rule(
            "NCCL_IB_GID_INDEX", str(index),
            f"most rails use RoCE v2 IPv4 GID index {index}; NCCL < 2.21 takes one index for all devices",
            source,
        ))
        out.notes.append(f"RoCE v2 GID indexes differ between rails: {dict(sorted(found.items()))}")
    return out


def rule_socket_ifname(ctx: Context) -> Outcome:
    """NCCL_SOCKET_IFNAME: the interface that carries this node's cluster address."""
    out = Outcome()
    topology = ctx.topology
    if ctx.fabric == "tcp" and ctx.fabric_interface:
        return _socket_ifname_from_fabric(ctx)
    candidates = [
        i for i in topology.interfaces
        if i.ipv4 and not _VIRTUAL_IF.match(i.name) and i.master is None
        and (i.state or "UP").upper() != "DOWN"
        and any(not a.startswith(("127.", "169.254.")) for a in i.ipv4)
    ]
    if not candidates:
        if not topology.interfaces and ctx.fabric_interface:
            return _socket_ifname_from_provider(ctx)
        if not topology.interfaces:
            out.notes.append("no interface list in the capture: NCCL_SOCKET_IFNAME left to the vendor profile / NCCL")
        return out
    # RDMA rail netdevs carry data, not the bootstrap; prefer a front-end interface when one exists.
    rail_netdevs = {n.netdev for n in _rail_nics(ctx, select_rails(topology).names) if n.netdev}
    front = [i for i in candidates if i.name not in rail_netdevs] or candidates
    front.sort(key=lambda i: (0 if i.kind == "bond" or i.name.startswith("bond") else
                              1 if i.name.startswith(("eth", "en")) else 2))
    chosen = front[0]
    if len(front) > 1:
        out.notes.append(
            f"several interfaces carry IPv4 ({', '.join(i.name for i in front)}); chose {chosen.name}"
        )
    address = next(a for a in chosen.ipv4 if not a.startswith(("127.", "169.254.")))
    out.settings.append(_rule(
        "NCCL_SOCKET_IFNAME", f"={chosen.name}",
        f"{chosen.name} carries the node's address {address}"
        f"{' (not a GPU rail)' if chosen.name not in rail_netdevs else ''}; the leading equals sign "
        "matches exactly that interface, so a later eth1/bond1 is not picked up for bootstrap",
        f"{ENV_DOCS}#nccl-socket-ifname",
    ))
    return out


def _socket_ifname_from_fabric(ctx: Context) -> Outcome:
    """On a TCP fabric NCCL's data itself goes over sockets, so it must use the interface the
    cluster network was built on, not whichever interface happens to carry the node's address."""
    out = Outcome()
    name = ctx.fabric_interface
    seen = next((i for i in ctx.topology.interfaces if i.name == name), None)
    address = next((a for a in seen.ipv4 if not a.startswith("127.")), None) if seen else None
    where = f" with address {address}" if address else (" (not in the capture)" if seen is None else "")
    out.settings.append(_rule(
        "NCCL_SOCKET_IFNAME", f"={name}",
        f"the fabric is tcp, so NCCL's data goes over sockets: {name} is the cluster's fabric interface "
        f"(from the provider's outputs){where}; the leading equals sign matches exactly that interface",
        f"{ENV_DOCS}#nccl-socket-ifname",
    ))
    return out


def _socket_ifname_from_provider(ctx: Context) -> Outcome:
    """No interface list in the capture, but the provider says which interface it built the node's
    network on: write that one, exact-matched, rather than a vendor prefix."""
    out = Outcome()
    name = ctx.fabric_interface
    out.settings.append(_rule(
        "NCCL_SOCKET_IFNAME", f"={name}",
        f"{name} is the interface the provider built this node's network on (cluster outputs); the capture has "
        "no interface list to confirm it. The leading equals sign matches exactly that interface",
        f"{ENV_DOCS}#nccl-socket-ifname",
    ))
    return out


# GeForce cards (and the consumer TITANs) have no GPUDirect RDMA; nvidia-smi names them
# "NVIDIA GeForce RTX 4090", older drivers "GeForce RTX 3090", some "NVIDIA TITAN RTX". A bare
# "RTX <2-5>0<5-9>0" (RTX 3090, RTX 4090 D, RTX 5090) is the consumer series too, while the
# professional cards are "RTX A6000", "RTX 6000 Ada Generation", "RTX PRO 6000", "Quadro RTX 8000".
_CONSUMER_GPU = re.compile(r"\bGeForce\b|\bTITAN\b|(?<!Quadro )\bRTX\s+[2-5]0[5-9]0\b", re.IGNORECASE)
GDR_GPUS_SOURCE = (
    "https://docs.nvidia.com/networking/display/GPUDirectRDMAv18/System+Requirements+and+Recommendations"
)


def consumer_gpu(model: str) -> bool:
    """Whether a GPU model string names a GeForce/consumer card (no GPUDirect RDMA)."""
    return bool(_CONSUMER_GPU.search(model))


def rule_gdr_level(ctx: Context) -> Outcome:
    """NCCL_NET_GDR_LEVEL: GPUDirect RDMA up to the farthest rail<->GPU distance, if it allows GDR."""
    out = Outcome()
    if ctx.fabric == "tcp":
        return out
    consumer = sorted({g.model for g in ctx.topology.gpus if g.model and consumer_gpu(g.model)})
    if consumer:
        out.notes.append(
            f"{', '.join(consumer)}: a GeForce card has no GPUDirect RDMA (NVIDIA lists Tesla and Quadro GPUs "
            f"for it: {GDR_GPUS_SOURCE}), so NCCL_NET_GDR_LEVEL is not written; NCCL finds no GPUDirect RDMA "
            "support and stages network data through host memory on its own"
        )
        return out
    rails = select_rails(ctx.topology).names
    distances = nic_gpus(ctx.topology)
    nearest = {
        n: min(distances[n].values(), key=_dist_rank) for n in rails if distances.get(n)
    }
    if not nearest:
        return out
    source = f"{ENV_DOCS}#nccl-net-gdr-level-formerly-nccl-ib-gdr-level"
    no_gdr = [n.name for n in _rail_nics(ctx, rails) if n.gdr_capable is False]
    if no_gdr:
        out.settings.append(_rule(
            "NCCL_NET_GDR_LEVEL", "LOC",
            f"{', '.join(no_gdr)} report no GPUDirect RDMA support: data is staged through host memory",
            source,
        ))
        return out
    worst = max(nearest.values(), key=_dist_rank)
    if worst not in NEAR:
        far = sorted((n for n, d in nearest.items() if d not in NEAR), key=natural_key)
        out.notes.append(
            f"{', '.join(far)} sit {worst} from their nearest GPU: GPUDirect RDMA would cross the CPU; "
            "NCCL's own choice is kept"
        )
        return out
    out.settings.append(_rule(
        "NCCL_NET_GDR_LEVEL", worst,
        f"every rail NIC has a GPU at {worst} or nearer (PCIe switches only, no host bridge): "
        "GPUDirect RDMA up to that distance",
        source,
    ))
    return out


def rule_cross_nic(ctx: Context) -> Outcome:
    """NCCL_CROSS_NIC=0 for a rail layout: each GPU has its own nearest NIC."""
    out = Outcome()
    if ctx.fabric != "rdma":
        return out  # eRDMA NICs share one VPC network: not rails in NCCL's sense
    rails = select_rails(ctx.topology).names
    if len(rails) < 2:
        return out  # env docs: "This has no effect on systems with only one NIC."
    distances = nic_gpus(ctx.topology)
    gpu_rails: dict[int, list[str]] = {}
    for nic in rails:
        for gpu, distance in distances.get(nic, {}).items():
            if distance in NEAR:
                gpu_rails.setdefault(gpu, []).append(nic)
    gpus = {g.index for g in ctx.topology.gpus} or set(gpu_rails)
    if not gpus or any(len(gpu_rails.get(g, [])) != 1 for g in gpus):
        out.notes.append("rail layout not 1 NIC per GPU (or per GPU group): NCCL_CROSS_NIC left at NCCL's default")
        return out
    per_nic = Counter(nic for nics in gpu_rails.values() for nic in nics)
    shape = "1:1" if set(per_nic.values()) == {1} else f"one NIC per {max(per_nic.values())} GPUs"
    out.settings.append(_rule(
        "NCCL_CROSS_NIC", "0",
        f"rail layout ({shape}, {len(rails)} rails): keep each ring/tree on the same NIC index on every "
        "node so traffic stays on its rail switch",
        f"{ENV_DOCS}#nccl-cross-nic",
    ))
    return out


def _compute_capability(ctx: Context) -> float | None:
    caps = {g.compute_capability for g in ctx.topology.gpus}
    if len(caps) != 1 or None in caps:
        return None
    return float(next(iter(caps)) or 0)


def _nvswitch(topology: Topology) -> bool | None:
    if topology.nvswitch is not None:
        return topology.nvswitch
    links = [cell for i, row in enumerate(topology.gpu_links) for j, cell in enumerate(row) if i != j]
    if not links or topology.pcie_only_view:
        return None
    if len(topology.gpus) >= 8 and all(cell.kind == "NV" for cell in links):
        # 8 GPUs each NV#-linked to all 7 others with one count: only an NVSwitch baseboard does that.
        return True
    if all(cell.kind != "NV" for cell in links):
        return False
    return None


def rule_nvls(ctx: Context) -> Outcome:
    """NVLink SHARP only with NVSwitch and sm90+; otherwise NCCL_NVLS_ENABLE=0 with the reason."""
    out = Outcome()
    if len(ctx.topology.gpus) < 2:
        return out
    cc = _compute_capability(ctx)
    nvswitch = _nvswitch(ctx.topology)
    source = f"{ENV_DOCS}#nccl-nvls-enable"
    if cc is not None and cc < 9.0:
        out.settings.append(_rule(
            "NCCL_NVLS_ENABLE", "0",
            f"GPUs are sm{int(cc * 10)}: NVLink SHARP needs third-generation NVSwitch with Hopper (sm90) or "
            "later; 0 allocates no NVLS resources",
            source,
        ))
    elif nvswitch is False:
        out.settings.append(_rule(
            "NCCL_NVLS_ENABLE", "0", "no NVSwitch between the GPUs: NVLink SHARP is not possible", source,
        ))
    elif cc is not None and nvswitch:
        out.notes.append(f"NVLS available (NVSwitch, sm{int(cc * 10)}): NCCL's default keeps it on")
    else:
        out.notes.append("GPU architecture or NVSwitch not shown by the capture: NVLS left to NCCL's detection")
    return out


def _rail_mtu(ctx: Context) -> int | None:
    rails = _rail_nics(ctx, select_rails(ctx.topology).names)
    mtus = [i.mtu for n in rails if (i := interface_named(ctx.topology, n.netdev)) and i.mtu]
    if not mtus and ctx.fabric_interface:
        fabric = interface_named(ctx.topology, ctx.fabric_interface)
        mtus = [fabric.mtu] if fabric is not None and fabric.mtu else []
    return min(mtus) if mtus else None


# What NCCL_PROTO=^LL128 costs: the variable is global, not per transport.
_LL128_COST = (
    "The cost: NCCL_PROTO applies to every transport, so LL128 is also off over NVLink inside the node, "
    "where it is safe and NCCL uses it for medium-size messages"
)


def rule_ll128(ctx: Context) -> Outcome:
    """Keep LL128 only where its conditions hold (eRDMA: MTU 8500; NCCL 2.18.1 on 1:1 NIC/GPU)."""
    out = Outcome()
    constraints = ctx.profile.constraints if ctx.profile else {}
    if ctx.fabric == "erdma" and "ll128_mtu" in constraints:
        need = int(constraints["ll128_mtu"])
        # The node's own MTU (its capture, taken after the mtu role ran) wins over the spec's.
        node_mtu = _rail_mtu(ctx)
        mtu = node_mtu if node_mtu is not None else ctx.mtu
        if node_mtu is not None and ctx.mtu is not None and node_mtu != ctx.mtu:
            out.notes.append(f"the capture shows MTU {node_mtu} on the fabric interfaces, the spec asks for "
                             f"{ctx.mtu}: LL128 is decided on the node's {node_mtu}")
        if mtu != need:
            if mtu is not None:
                shown = f"MTU is {mtu}"
            else:
                shown = ("the MTU is not known (no --mtu or spec, and the capture shows no fabric interface MTU; "
                         "gpuctl configure passes the spec's MTU), so to be safe")
            out.settings.append(_rule(
                "NCCL_PROTO", "^LL128",
                f"Alibaba: with NCCL's LL128 protocol on eRDMA the MTU must be {need}, and a wrong MTU "
                f"causes data-consistency problems; {shown}, so LL128 is excluded (LL and Simple stay). "
                f"{_LL128_COST}{'' if mtu is not None else '; pass the MTU to keep it'}",
                str(constraints.get("source", "")),
            ))
        return out
    if ctx.nccl_version is not None and ctx.nccl_version[:3] == (2, 18, 1):
        one_gpu_nics = [n for n, gpus in nic_gpus(ctx.topology).items()
                        if sum(1 for d in gpus.values() if d in NEAR) == 1]
        if one_gpu_nics:
            out.settings.append(_rule(
                "NCCL_PROTO", "^LL128",
                "NCCL 2.18.1 known issue: where a NIC shares a PCI switch with only one GPU (like HGX "
                "H100) Tree sends data through the CPU and LL128 can corrupt data; the release notes' "
                "workaround is NCCL_PROTO=^LL128",
                "https://docs.nvidia.com/deeplearning/nccl/release-notes/rel_2-18-1.html",
            ))
    return out


RULES: tuple[Callable[[Context], Outcome], ...] = (
    rule_sockets_only,
    rule_ib_hca,
    rule_gid_index,
    rule_socket_ifname,
    rule_gdr_level,
    rule_cross_nic,
    rule_nvls,
    rule_ll128,
)
