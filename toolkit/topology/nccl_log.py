"""`NCCL_DEBUG=INFO` logs: what NCCL actually did, as opposed to what it was configured to do.

The summary keeps, for every fact, the line it came from, so that a check (`log_check`) can point
the user at the evidence. Lines carry a `host:pid:tid [cudaDev]` prefix; the first line of a
captured log is often cut mid-prefix, and logs from several ranks interleave: the parser reads
each line on its own and never depends on order.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.errors import ParseError

TransportKind = Literal["P2P", "SHM", "NET", "COLLNET", "NVLS", "other"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Evidence(_Model):
    line: int
    text: str


class ChannelConnection(_Model):
    """One `Channel 00/0 : 7[3] -> 0[0] [receive] via NET/IB/0/GDRDMA` line."""

    line: int
    channel: int
    src_rank: int
    src_dev: str  # cudaDev (or bus id on old NCCL) in the brackets, as printed
    dst_rank: int
    dst_dev: str
    direction: Literal["send", "receive"] | None = None  # only network connections say
    via: str  # everything after "via", e.g. "NET/IB/0(8)/GDRDMA", "P2P/CUMEM", "SHM/direct/direct"
    kind: TransportKind
    net: str | None = None  # "IB", "Socket" or the net plugin's name, for NET connections
    net_dev: int | None = None  # the NET device index: NET/IB/<n>
    proxy_rank: int | None = None  # PXN: NET/IB/0(8) goes through rank 8's NIC
    gdr: bool = False  # "/GDRDMA": the NIC reads/writes GPU memory directly


class NcclLogSummary(_Model):
    source: str
    nccl_version: str | None = None
    n_ranks: int | None = None
    n_nodes: int | None = None
    local_ranks: int | None = None
    ranks: list[int] = Field(default_factory=list)  # ranks whose `comm ... rank N` line is here
    hosts: list[str] = Field(default_factory=list)
    networks: list[str] = Field(default_factory=list)  # "Using network IB|Socket|<plugin>"
    network_lines: list[int] = Field(default_factory=list)
    net_plugin: str | None = None
    ib_no_device: list[int] = Field(default_factory=list)  # lines saying "NET/IB : No device found"
    ib_devices: dict[int, str] = Field(default_factory=dict)  # NET/IB : Using [0]mlx5_0:1/RoCE ...
    socket_interfaces: list[str] = Field(default_factory=list)  # NET/Socket : Using [0]eth0:...
    socket_addresses: list[str] = Field(default_factory=list)  # same order: "10.128.0.52"
    socket_lines: list[int] = Field(default_factory=list)
    gdr_disabled: list[Evidence] = Field(default_factory=list)  # "GPU Direct RDMA Disabled ..."
    connections: list[ChannelConnection] = Field(default_factory=list)
    ring_pxn: bool | None = None  # "Connected all rings, use ring PXN 1 GDR 1"
    ring_gdr: bool | None = None
    nvls_multicast: bool | None = None
    nvls_lines: list[int] = Field(default_factory=list)
    channel_counts: dict[str, int] = Field(default_factory=dict)  # "coll": 16, "nvls": 16, ...
    rings: dict[int, list[int]] = Field(default_factory=dict)  # Channel 00/16 : 0 7 6 ...
    env: dict[str, str] = Field(default_factory=dict)  # NCCL_IB_GID_INDEX set by environment to 3
    warnings: list[Evidence] = Field(default_factory=list)  # NCCL WARN lines

    @property
    def net_connections(self) -> list[ChannelConnection]:
        return [c for c in self.connections if c.kind == "NET"]

    @property
    def rails_used(self) -> list[int]:
        """The NET/IB device indexes any channel went through (PXN included)."""
        return sorted({c.net_dev for c in self.net_connections
                       if c.net == "IB" and c.net_dev is not None})

    @property
    def uses_socket(self) -> bool:
        return "Socket" in self.networks or any(c.net == "Socket" for c in self.connections)


# host:pid:tid [cudaDev] NCCL INFO message. The host part is free text (GKE host names are long
# and hyphenated; the first line of a capture may have lost its beginning).
# Searched, not anchored: mpirun may put "[1,0]<stdout>:" in front.
_LINE = re.compile(r"(?:(?P<host>[^\s:]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>[^\]]*)\] )?"
                   r"NCCL (?P<level>INFO|WARN|TRACE|ABORT) ?(?P<msg>.*)$")
_VERSION = re.compile(r"NCCL version (\S+)")
_COMM = re.compile(r"\brank (\d+) nRanks (\d+) nNodes (\d+) localRanks (\d+)")
_USING_NETWORK = re.compile(r"^Using network (.+?)\s*$")
_PLUGIN = re.compile(r"Loaded (?:net|collnet) plugin (.+?)\s*$", re.I)
_IB_USING = re.compile(r"^NET/IB ?: Using (.*)$")
_IB_DEV = re.compile(r"\[(\d+)\]([^\s:\[]+)")
_SOCKET_USING = re.compile(r"^NET/Socket ?: Using (.*)$")
_SOCKET_IF = re.compile(r"\[\d+\]([^:\s<]+)(?::([^\s<]+))?")
_CHANNEL_CONN_HINT = re.compile(r"^Channel \d+/\d+ : .* via ")
_CHANNEL_CONN = re.compile(
    r"^Channel (?P<ch>\d+)/\d+ : (?P<src>\d+)\[(?P<sdev>[^\]]+)\] -> (?P<dst>\d+)\[(?P<ddev>[^\]]+)\]"
    r"(?: \[(?P<dir>send|receive)\])? via (?P<via>.+?)\s*$"
)
_NET_VIA = re.compile(r"^NET/(?P<net>[^/]+)/(?P<dev>\d+)(?:\((?P<proxy>\d+)\))?(?P<rest>(?:/.*)?)$")
_RING = re.compile(r"^Channel (\d+)/(\d+) :((?:\s+\d+)+)\s*$")
_RING_PXN = re.compile(r"Connected all rings(?:, use ring PXN (\d) GDR (\d))?")
_NVLS_MC = re.compile(r"NVLS multicast support is (not )?available")
_COUNTS = re.compile(r"(\d+) ([a-z2]+) channels( per peer)?")
_ENV = re.compile(r"^(NCCL_\w+) set by environment to (.*?)\.?\s*$")


def looks_like_nccl_log(text: str) -> bool:
    return bool(re.search(r"NCCL (INFO|WARN) ", text))


def _via_kind(via: str) -> TransportKind:
    head = via.split("/", 1)[0]
    if head in ("P2P", "SHM", "NET", "NVLS"):
        return head  # type: ignore[return-value]
    if head.startswith("CollNet") or head == "COLLNET":
        return "COLLNET"
    return "other"


def _connection(match: re.Match[str], source: str, line: int) -> ChannelConnection:
    via = match.group("via")
    kind = _via_kind(via)
    fields: dict[str, object] = {}
    if kind == "NET":
        net = _NET_VIA.match(via)
        if net is None:
            raise ParseError(f"cannot read network transport {via!r}", source=source, line=line)
        fields = {
            "net": net.group("net"),
            "net_dev": int(net.group("dev")),
            "proxy_rank": int(net.group("proxy")) if net.group("proxy") else None,
            "gdr": "GDRDMA" in net.group("rest").split("/"),
        }
    return ChannelConnection(
        line=line,
        channel=int(match.group("ch")),
        src_rank=int(match.group("src")),
        src_dev=match.group("sdev"),
        dst_rank=int(match.group("dst")),
        dst_dev=match.group("ddev"),
        direction=match.group("dir"),
        via=via,
        kind=kind,
        **fields,
    )


class _Builder:
    """Accumulates one summary; `feed` handles one NCCL message."""

    def __init__(self, source: str) -> None:
        self.summary = NcclLogSummary(source=source)
        self.source = source

    def feed(self, message: str, level: str, line: int) -> None:
        s = self.summary
        if level == "WARN":
            s.warnings.append(Evidence(line=line, text=message))
        version = _VERSION.search(message)
        if version and s.nccl_version is None:
            s.nccl_version = version.group(1)
        comm = _COMM.search(message)
        if comm:
            rank, n_ranks, n_nodes, local_ranks = (int(g) for g in comm.groups())
            s.n_ranks, s.n_nodes, s.local_ranks = n_ranks, n_nodes, local_ranks
            if rank not in s.ranks:
                s.ranks.append(rank)
        if match := _USING_NETWORK.match(message):
            if match.group(1) not in s.networks:
                s.networks.append(match.group(1))
            s.network_lines.append(line)
        if match := _PLUGIN.search(message):
            s.net_plugin = match.group(1)
        if message.startswith("NET/IB") and "No device found" in message:
            s.ib_no_device.append(line)
        if match := _IB_USING.match(message):
            for index, device in _IB_DEV.findall(match.group(1)):
                s.ib_devices[int(index)] = device
        if match := _SOCKET_USING.match(message):
            s.socket_lines.append(line)
            for interface, address in _SOCKET_IF.findall(match.group(1)):
                if interface not in s.socket_interfaces:
                    s.socket_interfaces.append(interface)
                    s.socket_addresses.append(address)
        if "GPU Direct RDMA Disabled" in message:
            s.gdr_disabled.append(Evidence(line=line, text=message))
        if _CHANNEL_CONN_HINT.match(message):
            match = _CHANNEL_CONN.match(message)
            if match is None:
                raise ParseError(f"cannot read channel connection {message!r}",
                                 source=self.source, line=line)
            s.connections.append(_connection(match, self.source, line))
        elif match := _RING.match(message):
            s.rings[int(match.group(1))] = [int(r) for r in match.group(3).split()]
        if (match := _RING_PXN.search(message)) and match.group(1) is not None:
            s.ring_pxn = match.group(1) == "1"
            s.ring_gdr = match.group(2) == "1"
        if match := _NVLS_MC.search(message):
            s.nvls_multicast = match.group(1) is None
            s.nvls_lines.append(line)
        if message.rstrip().endswith("channels per peer") or re.search(r"\d+ coll channels", message):
            for count, name, per_peer in _COUNTS.findall(message):
                key = name + ("_per_peer" if per_peer else "")
                s.channel_counts[key] = max(int(count), s.channel_counts.get(key, 0))
        if match := _ENV.match(message):
            s.env[match.group(1)] = match.group(2)


def parse_nccl_log(text: str, source: str = "<input>") -> NcclLogSummary:
    """Summarise an `NCCL_DEBUG=INFO` (or TRACE) log, from one rank or many interleaved."""
    builder = _Builder(source)
    hosts: list[tuple[str, int]] = []
    seen = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if "NCCL " not in line:
            continue
        match = _LINE.search(line)
        if match is None:
            continue
        seen += 1
        host = match.group("host")
        if host and host not in (h for h, _ in hosts):
            hosts.append((host, number))
        builder.feed(match.group("msg"), match.group("level"), number)
    if not seen:
        raise ParseError("no `NCCL INFO` line: not an NCCL log, or NCCL_DEBUG=INFO was not set",
                         source=source, line=1)
    summary = builder.summary
    summary.hosts = _real_hosts(hosts)
    summary.ranks.sort()
    return summary


def _real_hosts(hosts: list[tuple[str, int]]) -> list[str]:
    # A log cut at its start leaves "pgds-aihub0008" on line 1 for "tpgds-aihub0008": drop a
    # host that is only the tail of another one.
    names = [h for h, _ in hosts]
    return [h for h in names if not any(o != h and o.endswith(h) for o in names)]
