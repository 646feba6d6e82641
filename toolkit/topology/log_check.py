"""Checks on a parsed NCCL log: was the fabric used the way the node's topology says it could be?

The three failures users meet most, and none of which makes NCCL fail, only run slowly:
TCP sockets instead of RDMA, one rail carrying the traffic of eight, and GPUDirect RDMA off on
some channels. Each `Finding` carries the log lines that prove it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.topology.model import Topology
from toolkit.topology.nccl_log import ChannelConnection, NcclLogSummary

Severity = Literal["error", "warning", "info"]
_ORDER: dict[str, int] = {"error": 0, "warning": 1, "info": 2}
_MAX_EVIDENCE = 20  # line numbers per finding: enough to find them, not a wall of numbers
_ACTIVE_STATES = {"PORT_ACTIVE", "ACTIVE", "Active", "Up", "UP"}


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    severity: Severity
    code: str  # stable identifier for scripts: "socket-fallback", "single-rail", ...
    message: str
    lines: list[int] = Field(default_factory=list)  # evidence in the log, 1-based


def _lines(*groups: list[int]) -> list[int]:
    return sorted({n for group in groups for n in group})[:_MAX_EVIDENCE]


def _active_rdma_nics(topology: Topology) -> list[str]:
    return [n.name for n in topology.nics if n.state is None or n.state in _ACTIVE_STATES]


def _rail_nics(topology: Topology) -> tuple[list[str], bool]:
    """The NICs that should carry GPU traffic, and whether that came from real rail data
    (GPU<->NIC distance) rather than a count of active RDMA devices."""
    if topology.rails:
        return [r.nic for r in topology.rails], True
    return _active_rdma_nics(topology), False


def check_log(summary: NcclLogSummary, topology: Topology | None = None) -> list[Finding]:
    """Findings for `summary`, errors first. `topology` (the node's detected topology) turns
    several warnings into errors: it says what the node could have used."""
    findings = [
        *_check_socket(summary, topology),
        *_check_rails(summary, topology),
        *_check_gdr(summary, topology),
        *_check_warnings(summary),
    ]
    return sorted(findings, key=lambda f: _ORDER[f.severity])


def _check_socket(summary: NcclLogSummary, topology: Topology | None) -> list[Finding]:
    socket_conns = [c.line for c in summary.net_connections if c.net == "Socket"]
    evidence = _lines(summary.ib_no_device, summary.network_lines, summary.socket_lines,
                      socket_conns)
    rdma_nics = _active_rdma_nics(topology) if topology is not None else []
    if not summary.uses_socket:
        if summary.ib_no_device:
            return [Finding(severity="warning", code="ib-no-device",
                            message="NET/IB found no RDMA device; check that the RDMA devices "
                                    "are visible to the process (container device plugin, "
                                    "/dev/infiniband, rdma-core installed)",
                            lines=evidence)]
        return []
    via = ", ".join(summary.socket_interfaces) or "a TCP socket"
    if rdma_nics:
        return [Finding(severity="error", code="socket-fallback",
                        message=f"inter-node traffic went over TCP sockets ({via}) although the "
                                f"node has {len(rdma_nics)} active RDMA device(s) "
                                f"({', '.join(rdma_nics)}); check NCCL_IB_HCA, NCCL_NET and that "
                                "the RDMA devices are visible inside the job",
                        lines=evidence)]
    if summary.ib_no_device:
        return [Finding(severity="error", code="socket-fallback",
                        message=f"NET/IB found no RDMA device, so NCCL fell back to TCP sockets "
                                f"({via}); the RDMA fabric was not used",
                        lines=evidence)]
    if topology is not None:
        return [Finding(severity="warning", code="socket-no-rdma",
                        message=f"traffic went over TCP sockets ({via}); the topology shows no "
                                "active RDMA device on this node",
                        lines=evidence)]
    return [Finding(severity="warning", code="socket-unknown",
                    message=f"traffic went over TCP sockets ({via}); pass --topology to check "
                            "whether this node has RDMA devices NCCL should have used",
                    lines=evidence)]


def _net_ib(summary: NcclLogSummary) -> list[ChannelConnection]:
    return [c for c in summary.net_connections if c.net == "IB"]


def _check_rails(summary: NcclLogSummary, topology: Topology | None) -> list[Finding]:
    conns = _net_ib(summary)
    used = summary.rails_used
    if len(used) != 1:
        return []
    evidence = _lines([c.line for c in conns])
    rail = f"NET/IB/{used[0]}"
    if used[0] in summary.ib_devices:
        rail += f" ({summary.ib_devices[used[0]]})"
    if topology is not None:
        rails, from_distance = _rail_nics(topology)
        if len(rails) >= 2:
            what = "rail NICs" if from_distance else "active RDMA devices"
            return [Finding(severity="error", code="single-rail",
                            message=f"all {len(conns)} network connections went through one "
                                    f"NIC, {rail}, although the node has {len(rails)} {what} "
                                    f"({', '.join(rails)}): one rail carries the traffic of "
                                    "all GPUs",
                            lines=evidence)]
        return []
    if len(summary.ib_devices) >= 2:
        return [Finding(severity="error", code="single-rail",
                        message=f"all {len(conns)} network connections went through one NIC, "
                                f"{rail}, although NCCL listed {len(summary.ib_devices)} "
                                f"({', '.join(summary.ib_devices.values())})",
                        lines=evidence)]
    if (summary.local_ranks or 0) > 1:
        return [Finding(severity="warning", code="single-rail",
                        message=f"all {len(conns)} network connections of "
                                f"{summary.local_ranks} local GPUs went through one NIC, {rail};"
                                " pass --topology to check whether the node has more rails",
                        lines=evidence)]
    return []


def _check_gdr(summary: NcclLogSummary, topology: Topology | None) -> list[Finding]:
    conns = _net_ib(summary)
    if not conns:
        return []
    without = [c for c in conns if not c.gdr]
    if not without:
        return []
    with_gdr = [c for c in conns if c.gdr]
    off = sorted({(c.channel, c.net_dev) for c in without})
    described = ", ".join(f"{channel:02d} (NET/IB/{dev})" for channel, dev in off)
    if with_gdr:
        on_devs = sorted({c.net_dev for c in with_gdr if c.net_dev is not None})
        return [Finding(severity="error", code="gdr-partial",
                        message=f"GPUDirect RDMA was off on {len(without)} of {len(conns)} "
                                f"network connections (channels {described}) while it was on "
                                f"for NET/IB/{', NET/IB/'.join(str(d) for d in on_devs)}: those "
                                "channels stage data through host memory, typically a NIC far "
                                "from the GPU (check NCCL_CROSS_NIC and the GPU-NIC distance)",
                        lines=_lines([c.line for c in without]))]
    expected = topology is not None and any(r.distance in ("PIX", "PXB") for r in topology.rails)
    return [Finding(severity="warning" if expected else "info", code="gdr-off",
                    message="GPUDirect RDMA was off on every network connection"
                            + (" although the topology puts a NIC on each GPU's PCIe switch; "
                               "check nvidia-peermem / dma-buf support and NCCL_NET_GDR_LEVEL"
                               if expected else ""),
                    lines=_lines([c.line for c in without]))]


def _check_warnings(summary: NcclLogSummary) -> list[Finding]:
    seen: dict[str, list[int]] = {}
    for warning in summary.warnings:
        seen.setdefault(warning.text, []).append(warning.line)
    return [Finding(severity="warning", code="nccl-warn", message=f"NCCL WARN {text}",
                    lines=_lines(lines)) for text, lines in seen.items()]
