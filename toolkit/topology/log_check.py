"""Checks on a parsed NCCL log: was the fabric used the way the node's topology says it could be?

The failures users meet most, and none of which makes NCCL fail, only run slowly: TCP sockets
instead of RDMA, one rail carrying the traffic of eight, GPUDirect RDMA off on some channels, and
a VM whose emulated PCI bridges hide where GPUs and NICs sit. Each `Finding` carries the log lines
that prove it.

`judge_log` turns the findings into one verdict:

- `problem`: a finding of severity "error" (the log proves the fabric was misused);
- `unknown`: a check could not decide (severity "unknown": e.g. sockets used and nothing says an
  RDMA device exists), or the log has no line showing which transport carried the traffic;
- `ok`: no error, nothing undecided, and `evidence` quotes the lines that prove the fabric (or,
  for a single-node run, NVLink/PCIe peer-to-peer) carried the traffic.

What a node has comes from `topology` (the node's detected topology) where given, else from the
log itself (`localRanks`, the `NET/IB : Using` list); rails and active NICs are
`toolkit.topology.rails`' definitions, the same ones `tune` uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.topology.model import Topology
from toolkit.topology.nccl_log import NCCL_RESULTS, TCP_NETS, ChannelConnection, Evidence, NcclLogSummary
from toolkit.topology.rails import NEAR, is_active, nic_gpus, select_rails

Severity = Literal["error", "unknown", "warning", "info"]
Verdict = Literal["ok", "problem", "unknown"]
_ORDER: dict[str, int] = {"error": 0, "unknown": 1, "warning": 2, "info": 3}
_MAX_EVIDENCE = 20  # line numbers per finding: enough to find them, not a wall of numbers
_MAX_QUOTES = 8  # quoted evidence lines for a verdict
_TRACE = re.compile(r"^\S+ -> (\d+)")
SLOW_PCI_GBPS = 2.0  # a PCI link NCCL rates at or below this is an emulated bridge, not a slot
TOPO_FILE_DOC = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-topo-file"


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    severity: Severity
    code: str  # stable identifier for scripts: "socket-fallback", "single-rail", ...
    message: str
    lines: list[int] = Field(default_factory=list)  # evidence in the log, 1-based


class LogVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: Verdict
    findings: list[Finding] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)  # lines proving the fabric was used


@dataclass(frozen=True)
class _Node:
    """What the node has, and where that came from (for the messages)."""

    gpus: int | None  # GPUs of the node (topology) or of the job on it (the log's localRanks)
    gpus_from: str
    rails: list[str] | None  # None: nothing says which NICs the node has
    rails_from: str
    from_topology: bool  # rails are the topology's (decisive), not NCCL's NET/IB list (a hint)
    near: dict[str, set[int]]  # rail -> the GPU indexes at PIX/PXB from it (topology only)
    rdma: list[str]  # active RDMA devices the topology shows
    near_nic: bool  # a rail sits on a GPU's PCIe switch (GPUDirect RDMA expected)


def _lines(*groups: list[int]) -> list[int]:
    return sorted({n for group in groups for n in group})[:_MAX_EVIDENCE]


def _node(summary: NcclLogSummary, topology: Topology | None) -> _Node:
    gpus: int | None = None
    gpus_from = ""
    if summary.local_ranks is not None:
        gpus, gpus_from = summary.local_ranks, "the log's localRanks"
    elif topology is not None and topology.gpus:
        gpus, gpus_from = len(topology.gpus), "the topology"
    rails: list[str] | None = None
    rails_from = ""
    rdma: list[str] = []
    near: dict[str, set[int]] = {}
    from_topology = False
    if topology is not None and (topology.nics or topology.rails or topology.gpu_nic_distance):
        choice = select_rails(topology)
        rdma = [n.name for n in topology.nics if is_active(n)]
        near = {nic: {g for g, d in at.items() if d in NEAR} for nic, at in nic_gpus(topology).items()}
        if choice.names:
            rails, rails_from, from_topology = choice.names, "rails", True
        else:  # the capture does not settle the rails: say why, fall back to NCCL's list
            rails_from = "; ".join(choice.notes) or "no rail in the topology"
    if rails is None and summary.ib_devices:
        rails, rails_from = summary.ib_device_names, "RDMA devices in NCCL's NET/IB list"
    return _Node(gpus, gpus_from, rails, rails_from, from_topology,
                 {nic: g for nic, g in near.items() if g}, rdma,
                 any(near.values()))


def order(findings: list[Finding]) -> list[Finding]:
    """Errors first, then undecided, warnings, notes; stable within a severity."""
    return sorted(findings, key=lambda f: _ORDER[f.severity])


def check_log(summary: NcclLogSummary, topology: Topology | None = None) -> list[Finding]:
    """Findings for `summary`, errors first. `topology` (the node's detected topology) says what
    the node could have used, which turns several undecided findings into errors."""
    node = _node(summary, topology)
    findings = [
        *_check_socket(summary, node, topology is not None),
        *_check_rails(summary, node),
        *_check_gdr(summary, node),
        *_check_system_topology(summary),
        *_check_gids(summary),
        *_check_device_kinds(summary),
        *_check_errors(summary),
        *_check_warnings(summary),
    ]
    return order(findings)


def judge_log(summary: NcclLogSummary, topology: Topology | None = None) -> LogVerdict:
    """The verdict on one log: `ok` with the lines that prove it, `problem`, or `unknown`."""
    findings = check_log(summary, topology)
    evidence = _evidence(summary)
    if any(f.severity == "error" for f in findings):
        return LogVerdict(verdict="problem", findings=findings, evidence=evidence)
    if not evidence and not any(f.severity == "unknown" for f in findings):
        findings.append(_no_transport(summary))
    if any(f.severity == "unknown" for f in findings) or not evidence:
        return LogVerdict(verdict="unknown", findings=order(findings), evidence=evidence)
    return LogVerdict(verdict="ok", findings=findings, evidence=evidence)


def _quote(summary: NcclLogSummary, line: int) -> Evidence | None:
    text = summary.quotes.get(line)
    return Evidence(line=line, text=text) if text is not None else None


def _evidence(summary: NcclLogSummary) -> list[Evidence]:
    """Lines proving which fabric carried the traffic: the network NCCL chose, its device list,
    and one connection line per distinct (host, transport, device, GDR, PXN)."""
    fabric = summary.fabric_connections
    if fabric:
        picked: list[int] = summary.network_lines[:1] + summary.ib_lines[:1]
        if summary.net_plugin is not None:
            picked += summary.net_plugin.lines[:1]
        seen: set[tuple[str | None, str | None, int | None, bool, bool]] = set()
        for c in fabric:
            key = (c.host, c.net, c.net_dev, c.gdr, c.pxn)
            if key not in seen:
                seen.add(key)
                picked.append(c.line)
    elif summary.n_nodes == 1 and summary.connections:
        # One node: the "fabric" is NVLink/PCIe peer-to-peer; quote one line per transport.
        picked = []
        vias: set[str] = set()
        for c in summary.connections:
            if c.kind != "NET" and c.via not in vias:
                vias.add(c.via)
                picked.append(c.line)
    else:
        return []
    quotes = [q for n in dict.fromkeys(picked) if (q := _quote(summary, n)) is not None]
    return quotes[:_MAX_QUOTES]


def _no_transport(summary: NcclLogSummary) -> Finding:
    if summary.connections:
        return Finding(
            severity="unknown", code="no-network-connection",
            message=f"the log shows {len(summary.connections)} intra-node connection(s) and no "
                    "network one (`via NET/...`), and does not say the run had a single node: "
                    "keep the log up to `Connected all rings`/`Connected all trees` of every rank",
            lines=_lines([c.line for c in summary.connections]))
    return Finding(
        severity="unknown", code="no-transport",
        message="the log has no channel connection line (`Channel 00/0 : 0[0] -> 1[1] via ...`): "
                "nothing shows which transport carried the traffic; run with NCCL_DEBUG=INFO and "
                "keep the whole log (NCCL_DEBUG_SUBSYS, if set, must include INIT)")


# systemd names InfiniBand interfaces (IPoIB) with the prefix "ib" (systemd.net-naming-scheme(7):
# "ib — InfiniBand"), as the kernel's ib0, ib1 do: sockets over one of them mean IB hardware is there.
_IPOIB = re.compile(r"^ib(?:\d|[ps]\w)")
# Bridges and overlays that never reach another node's GPUs directly: libvirt (virbr0), Docker
# (docker0, br-<id>), Kubernetes CNIs (cni0, flannel.1, cali*, weave, kube-bridge), veth pairs.
_BRIDGE = re.compile(r"^(?:virbr\d|docker\d|br-[0-9a-f]|cni\d|flannel\.|cali|weave|kube-bridge|veth|lxcbr)")


def _rdma_in_log(summary: NcclLogSummary) -> tuple[list[str], list[int]]:
    """What the log itself shows of RDMA hardware NCCL did not use: devices it could not open, and
    IPoIB netdevs it sent over; with the lines."""
    found: list[str] = []
    lines: list[int] = []
    unopened = list(dict.fromkeys(e.text for e in summary.ib_open_failed if e.text != "ibv_open_device"))
    if summary.ib_open_failed:
        found.append(f"NCCL could not open {', '.join(unopened) if unopened else 'an RDMA device'} "
                     "(ibv_open_device failed)")
        lines += [e.line for e in summary.ib_open_failed]
    ipoib = [name for name in summary.socket_interfaces if _IPOIB.match(name)]
    if ipoib:
        found.append(f"the sockets ran over IPoIB interface(s) {', '.join(ipoib)}, so InfiniBand hardware is there")
        lines += summary.socket_lines
    return found, lines


def _check_socket(summary: NcclLogSummary, node: _Node, have_topology: bool) -> list[Finding]:
    socket_conns = [c.line for c in summary.net_connections if c.net in TCP_NETS]
    evidence = _lines(summary.ib_no_device, summary.network_lines, summary.socket_lines,
                      socket_conns, summary.tcp_plugin_lines)
    tcp = summary.tcp_transport
    if 1 in (summary.n_nodes, summary.n_ranks) and not socket_conns:
        # One node (or one rank): NCCL names a network at init but never uses it.
        if summary.uses_socket and summary.ib_no_device:
            return [Finding(severity="warning", code="socket-selected",
                            message=f"NET/IB found no RDMA device and NCCL chose TCP sockets "
                                    f"({', '.join(summary.socket_interfaces) or 'a socket'}); this "
                                    f"communicator ({'1 rank' if summary.n_ranks == 1 else '1 node'}) "
                                    "sends nothing over it, but a multi-node one here would",
                            lines=evidence)]
        return []
    if tcp is None:
        if summary.ib_no_device and not summary.fabric_connections:
            return [Finding(severity="warning", code="ib-no-device",
                            message="NET/IB found no RDMA device; check that the RDMA devices "
                                    "are visible to the process (container device plugin, "
                                    "/dev/infiniband, rdma-core installed)",
                            lines=evidence)]
        return []
    findings = _bridge_sockets(summary)
    via = f"TCP sockets ({', '.join(summary.socket_interfaces) or 'a TCP socket'})"
    if summary.tcp_plugin is not None:
        via = f"TCP ({tcp}{', ' + ', '.join(summary.socket_interfaces) if summary.socket_interfaces else ''})"
    disabled = (" NCCL_IB_DISABLE=1 was set by the environment, which turns NET/IB off."
                if summary.env.get("NCCL_IB_DISABLE", "").strip() == "1" else "")
    if summary.verbs_load_failed:
        disabled += " libibverbs failed to load (line " + str(summary.verbs_load_failed[0].line) + ")."
    if node.rdma:
        return [Finding(severity="error", code="socket-fallback",
                        message=f"inter-node traffic went over {via} although the "
                                f"node has {len(node.rdma)} active RDMA device(s) "
                                f"({', '.join(node.rdma)}); check NCCL_IB_HCA, NCCL_NET and that "
                                f"the RDMA devices are visible inside the job.{disabled}",
                        lines=evidence), *findings]
    listed = summary.ib_device_names
    if listed:
        return [Finding(severity="error", code="socket-fallback",
                        message=f"inter-node traffic went over {via} although "
                                f"NCCL's own NET/IB line lists {len(listed)} RDMA device(s) "
                                f"({', '.join(listed)}); check NCCL_NET / NCCL_IB_DISABLE.{disabled}",
                        lines=_lines(evidence, summary.ib_lines)), *findings]
    seen, seen_lines = _rdma_in_log(summary)
    if seen:
        return [Finding(severity="error", code="socket-fallback",
                        message=f"inter-node traffic went over {via} although the log shows RDMA hardware: "
                                f"{'; '.join(seen)}.{disabled} Make the RDMA devices usable to the job "
                                "(/dev/infiniband and rdma-core in the container, NCCL_IB_DISABLE unset)",
                        lines=_lines(evidence, seen_lines)), *findings]
    found = ("NET/IB found no RDMA device" if summary.ib_no_device
             else "the log names no RDMA device")
    if have_topology:
        return [Finding(severity="unknown", code="socket-no-rdma",
                        message=f"traffic went over {via}; {found} and the "
                                "topology shows no active RDMA device either: TCP may be all "
                                "this node has (or its RDMA devices are not in the capture)",
                        lines=evidence), *findings]
    return [Finding(severity="unknown", code="socket-unknown",
                    message=f"traffic went over {via}; {found}, so the log alone "
                            "cannot say whether the node has an RDMA fabric NCCL should have "
                            "used: pass --topology with the node's capture to decide",
                    lines=evidence), *findings]


def _bridge_sockets(summary: NcclLogSummary) -> list[Finding]:
    bridges = [name for name in summary.socket_interfaces if _BRIDGE.match(name)]
    if not bridges:
        return []
    return [Finding(severity="warning", code="socket-bridge",
                    message=f"NCCL's socket list includes {', '.join(bridges)}: a local bridge or overlay that "
                            "does not reach the other nodes' NICs directly; set NCCL_SOCKET_IFNAME to the "
                            "interface that does",
                    lines=summary.socket_lines[:_MAX_EVIDENCE])]


def _by_host(conns: list[ChannelConnection]) -> dict[str | None, list[ChannelConnection]]:
    table: dict[str | None, list[ChannelConnection]] = {}
    for c in conns:
        table.setdefault(c.host, []).append(c)
    return table


def _nic_name(summary: NcclLogSummary, c: ChannelConnection) -> str:
    label = f"NET/{c.net}/{c.net_dev}"
    device = summary.ib_device(c.net_dev, c.host) if c.net_dev is not None else None
    return f"{label} ({device.name})" if device is not None else label


def rails_by_host(summary: NcclLogSummary) -> dict[str, list[str]]:
    """Per host, the network devices its connections went through, as NCCL logged them
    (`NET/IB/0 (mlx5_0)`); hosts with no network connection are left out."""
    table: dict[str, list[str]] = {}
    for host, conns in _by_host([c for c in summary.connections if c.kind == "NET"]).items():
        names = sorted({_nic_name(summary, c) for c in conns if c.net_dev is not None})
        if names:
            table[host or "(unnamed host)"] = names
    return table


def _job_rails(node: _Node, logged: list[str]) -> list[str]:
    """The rails serving the GPUs this log speaks for, where the topology pairs GPUs and NICs
    and the log's cudaDevs are GPU indexes; else every rail."""
    rails = node.rails or []
    gpus = {int(d) for d in logged if d.isdigit()}
    if not node.near or len(gpus) != len(logged):
        return rails
    serving = [r for r in rails if node.near.get(r, set()) & gpus]
    return serving or rails


def _check_rails(summary: NcclLogSummary, node: _Node) -> list[Finding]:
    findings: list[Finding] = []
    for host, conns in _by_host(summary.fabric_connections).items():
        used = sorted({c.net_dev for c in conns if c.net_dev is not None})
        if len(used) != 1:
            continue
        logged = summary.local_devices.get(host or "", [])
        gpus = node.gpus if node.gpus is not None else len(logged)
        gpus_from = node.gpus_from or "the GPUs this log speaks for"
        rail = _nic_name(summary, conns[0])
        where = f" on {host}" if host and len(summary.hosts) > 1 else ""
        evidence = _lines([c.line for c in conns])
        if gpus <= 1:
            continue  # one GPU using its one NIC
        if node.rails is None:
            why = (f"the topology does not settle the node's rails ({node.rails_from})"
                   if node.rails_from else "nothing in the log lists the node's NICs: pass "
                   "--topology to check whether it has more rails")
            findings.append(Finding(
                severity="unknown", code="single-rail",
                message=f"all {len(conns)} network connections{where} of {gpus} local GPUs "
                        f"({gpus_from}) went through one NIC, {rail}; {why}",
                lines=evidence))
            continue
        rails = _job_rails(node, logged)
        if min(gpus, len(rails)) <= 1:
            continue  # one rail for these GPUs: using it is all the node can do
        if len(logged) < 2:
            findings.append(Finding(
                severity="unknown", code="single-rail",
                message=f"the network connections{where} all went through {rail}, but the log "
                        f"holds the lines of {len(logged)} local GPU only: one GPU on one rail "
                        f"says nothing about the node's {len(rails)} {node.rails_from}; keep "
                        "every rank's lines (NCCL_DEBUG_FILE=nccl.%h.%p) to check the rails",
                lines=evidence))
            continue
        message = (f"all {len(conns)} network connections{where} went through one NIC, {rail}, "
                   f"although the node has {gpus} GPUs ({gpus_from}) and {len(rails)} "
                   f"{node.rails_from} ({', '.join(rails)})")
        if not node.from_topology:
            findings.append(Finding(
                severity="unknown", code="single-rail",
                message=f"{message}; NCCL's list may hold NICs that serve no GPU (storage, "
                        "management): pass --topology to know whether these are rails",
                lines=evidence))
            continue
        findings.append(Finding(severity="error", code="single-rail",
                                message=f"{message}: one rail carries the traffic of all GPUs",
                                lines=evidence))
    return findings


def _check_gdr(summary: NcclLogSummary, node: _Node) -> list[Finding]:
    conns = summary.fabric_connections
    if not conns:
        return []
    without = [c for c in conns if not c.gdr]
    if not without:
        return []
    with_gdr = [c for c in conns if c.gdr]
    off = sorted({(c.channel, c.net, c.net_dev) for c in without},
                 key=lambda k: (k[0], k[1] or "", k[2] if k[2] is not None else -1))
    described = ", ".join(f"{channel:02d} (NET/{net}/{dev})" for channel, net, dev in off)
    if with_gdr:
        on = sorted({f"NET/{c.net}/{c.net_dev}" for c in with_gdr})
        return [Finding(severity="error", code="gdr-partial",
                        message=f"GPUDirect RDMA was off on {len(without)} of {len(conns)} "
                                f"network connections (channels {described}) while it was on "
                                f"for {', '.join(on)}: those channels stage data through host "
                                "memory, typically a NIC far from the GPU (check NCCL_CROSS_NIC "
                                "and the GPU-NIC distance)",
                        lines=_lines([c.line for c in without]))]
    if node.near_nic:
        return [Finding(severity="error", code="gdr-off",
                        message="GPUDirect RDMA was off on every network connection although the "
                                "topology puts a NIC on a GPU's PCIe switch; check nvidia-peermem "
                                "/ dma-buf support and NCCL_NET_GDR_LEVEL",
                        lines=_lines([c.line for c in without]))]
    return [Finding(severity="info", code="gdr-off",
                    message="GPUDirect RDMA was off on every network connection (pass --topology "
                            "to check whether the NICs sit next to the GPUs)",
                    lines=_lines([c.line for c in without]))]


def _check_device_kinds(summary: NcclLogSummary) -> list[Finding]:
    """NCCL's NET/IB list naming software RDMA (Soft-RoCE, Soft-iWARP): NET/IB then runs over an
    emulation, without GPUDirect RDMA and at no better than TCP speed."""
    from toolkit.topology.model import Nic
    from toolkit.topology.rdma_kinds import rdma_kind

    software = [(name, rdma_kind(Nic(name=name))) for name in summary.ib_device_names]
    software = [(name, kind) for name, kind in software if kind.kind == "software"]
    if not software:
        return []
    return [Finding(severity="warning", code="software-rdma",
                    message=f"NCCL's NET/IB uses {', '.join(n for n, _ in software)}: {software[0][1].what}; "
                            "this is not the fabric of a GPU cluster",
                    lines=summary.ib_lines[:_MAX_EVIDENCE])]


# What a RoCE connection that cannot reach its peer prints (net_ib.cc / ibvwrap.cc).
_QP_FAILED = re.compile(r"ibv_modify_qp|Connection timed out|completion with error 12|IBV_WC_RETRY_EXC_ERR")


def _check_gids(summary: NcclLogSummary) -> list[Finding]:
    """A link-local GID (fe80::/10) in a RoCE connection: it is never routed, so RoCE v2 between
    subnets fails (sjeaugey in NCCL #769: the link-local address "isn't properly routed and fails"),
    though on one flat network it works. An error where NCCL_IB_GID_INDEX forced it and the log shows
    connections failing; a warning otherwise."""
    local = [u for u in summary.gids_in_use if u.link_local]
    if not local:
        return []
    indexes = sorted({u.index for u in local})
    forced = summary.env.get("NCCL_IB_GID_INDEX", "").strip()
    by_env = forced.lstrip("-").isdigit() and int(forced) in indexes
    failing = [w.line for w in summary.warnings if _QP_FAILED.search(w.text)]
    shown = ", ".join(f"GID {u.index} = {u.gid}" for u in local[:3])
    what = (f"NCCL_IB_GID_INDEX={forced} (set by the environment) makes RoCE use a link-local GID ({shown})"
            if by_env else f"RoCE connections use a link-local GID ({shown})")
    version = summary.nccl_version or ""
    auto = _at_least(version, (2, 21))
    fix = ("set NCCL_IB_GID_INDEX to the RoCE v2 GID that carries the node's IPv4 address (show_gids)"
           + (", or unset it and let NCCL pick one (NCCL_IB_ADDR_FAMILY, NCCL >= 2.21)" if auto is not False else
              "; unsetting it does not help before NCCL 2.21, whose default index is 0"))
    return [Finding(severity="error" if by_env and failing else "warning", code="link-local-gid",
                    message=f"{what}: a link-local GID is not routed, so RoCE v2 across subnets fails (it works on "
                            f"one flat network only){'; the log shows connections failing' if failing else ''}; "
                            f"{fix}",
                    lines=_lines([u.line for u in local], failing))]


def _at_least(version: str, floor: tuple[int, int]) -> bool | None:
    """Whether an NCCL version string ("2.21.5+cuda12.4") is at least `floor`; None when unreadable."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return None if match is None else (int(match.group(1)), int(match.group(2))) >= floor


def _check_system_topology(summary: NcclLogSummary) -> list[Finding]:
    system = summary.system
    if system is None:
        return []
    slow = [link for link in system.links if link.kind == "PCI" and link.bw_gbps <= SLOW_PCI_GBPS]
    if not slow and system.max_bw > SLOW_PCI_GBPS:
        return []
    rates = sorted({f"{link.bw_gbps:g}" for link in slow})
    shown = ", ".join(f"{link.target}" + (f" ({link.info})" if link.info else "") for link in slow[:4])
    what = (f"{len(slow)} PCI link(s) at {'/'.join(rates)} GB/s ({shown}"
            f"{', ...' if len(slow) > 4 else ''})" if slow else f"maxBw {system.max_bw:g} GB/s")
    return [Finding(severity="warning", code="vm-emulated-pci",
                    message=f"NCCL's topology print (`=== System : maxBw {system.max_bw:g} totalBw "
                            f"{system.total_bw:g} ===`) shows {what}, far below any real PCIe or "
                            "NVLink figure: the emulated PCI bridges of a VM, which hide which "
                            "GPU and NIC share a switch and make NCCL stage traffic through the "
                            "CPU. The known remedy is NCCL_TOPO_FILE: an XML topology describing "
                            f"the host's real PCI tree ({TOPO_FILE_DOC})",
                    lines=_lines([system.line], [link.line for link in slow]))]


def _check_errors(summary: NcclLogSummary) -> list[Finding]:
    """`bootstrap.cc:256 -> 3`: an NCCL call returned an error; the run failed there."""
    if not summary.error_traces:
        return []
    first = summary.error_traces[0]
    trace = _TRACE.match(first.text)
    code = int(trace.group(1)) if trace else 0
    cause = [w for w in summary.warnings if w.line < first.line]
    because = f", after NCCL WARN {cause[-1].text!r} (line {cause[-1].line})" if cause else ""
    last = summary.error_traces[-1].line
    # NCCL falls back from some failures (CollNet/SHARP: "using point-to-point network instead"):
    # connections set up after the last trace show the run went on.
    recovered = any(c.line > last for c in summary.connections)
    what = (f"{'' if recovered else 'the run failed; '}{len(summary.error_traces)} error trace line(s)"
            + (" in all, and channels were connected after them: NCCL fell back and went on" if recovered
               else " in all"))
    return [Finding(severity="warning" if recovered else "error",
                    code="nccl-error-recovered" if recovered else "nccl-error",
                    message=f"NCCL returned error {code} ({NCCL_RESULTS.get(code, 'unknown code')}) "
                            f"at {first.text.split(' ->')[0]} (line {first.line}){because}: {what}",
                    lines=_lines([cause[-1].line] if cause else [], [e.line for e in summary.error_traces]))]


def _check_warnings(summary: NcclLogSummary) -> list[Finding]:
    seen: dict[str, list[int]] = {}
    for warning in summary.warnings:
        seen.setdefault(warning.text, []).append(warning.line)
    return [Finding(severity="warning", code="nccl-warn", message=f"NCCL WARN {text}",
                    lines=_lines(lines)) for text, lines in seen.items()]
