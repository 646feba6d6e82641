"""`NCCL_DEBUG=INFO` logs: what NCCL actually did, as opposed to what it was configured to do.

The summary keeps, for every fact, the line it came from, so that a check (`log_check`) can point
the user at the evidence. Lines carry a `host:pid:tid [cudaDev]` prefix; the first line of a
captured log is often cut mid-prefix, and logs from several ranks interleave: the parser reads
each line on its own and never depends on order.

A log is often captured together with the output of the program that ran (nccl-tests, a training
script): the parser reads the NCCL lines and skips everything else, so a file that is both an
NCCL log and an nccl-tests table is read here for its NCCL half (and by `bench.nccl_tests` for
the other). What is read:

- the NCCL version (`NCCL INFO NCCL version 2.22.3+cuda12.6`, or the bare `NCCL version ...` line
  that rank 0 prints on stdout);
- the communicator shape (`comm 0x... rank 8 nRanks 16 nNodes 2 localRanks 8`);
- the network: `NET/IB : Using [0]mlx5_bond_6:1/RoCE [1]...; OOB bond0:10.0.0.1<0>` (device,
  port, link layer, flags such as SHARP, and the out-of-band interface and address),
  `NET/Socket : Using [0]eth0:10.0.0.1<0>`, `NET/IB : No device found`, `Using network X`, and
  the net plugin (`NET/Plugin: Loaded net plugin NCCL RDMA Plugin v7 (v7)`, `Plugin Path`,
  `Plugin version : 1.2@Tencent Cloud`, AWS OFI's `NET/OFI` lines, or why none was loaded:
  `NET/Plugin : Plugin load (libnccl-net.so) returned 2 : ...`);
- the transport of every channel connection: `P2P/IPC`, `P2P/CUMEM`, `SHM`, `NET/IB/0`,
  `NET/IB/0/GDRDMA`, PXN `NET/IB/0(8)/GDRDMA`, `NET/Socket/0`, `NET/<plugin name>/1/GDRDMA/Shared`;
- channel counts (`16 coll channels, 16 collnet channels, 16 nvls channels, 16 p2p channels`);
- the topology NCCL saw (`=== System : maxBw 48.0 totalBw 370.8 ===` and its `+ PCI[0.2] - ...`
  links), which shows a VM's emulated PCI bridges.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.errors import ParseError

TransportKind = Literal["P2P", "SHM", "NET", "COLLNET", "NVLS", "other"]
# NET/<name> transports that are TCP underneath: NCCL's own sockets and TCP net plugins.
TCP_NETS = frozenset({"Socket", "FastSocket", "GPUDirectTCPX", "GPUDirectTCPXO", "FasTrak"})


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Evidence(_Model):
    line: int
    text: str


class IbDevice(_Model):
    """One `[1]mlx5_bond_7:1/RoCE` entry of a `NET/IB : Using` line: NET/IB/<index> is this device."""

    index: int
    name: str  # the ibverbs device (hca_id): mlx5_0, mlx5_bond_6, hfi1_0
    port: int | None = None
    link_layer: str | None = None  # "RoCE" or "IB" as NCCL printed it
    flags: list[str] = Field(default_factory=list)  # what follows the link layer: "SHARP"
    host: str | None = None  # the host whose line listed it
    line: int


class NetInterface(_Model):
    """`[0]eth0:10.128.0.52<0>` of a `NET/Socket : Using` line, or the `OOB` part of `NET/IB`."""

    index: int | None = None  # None for the OOB interface, which has no index
    name: str
    address: str | None = None  # None where NCCL printed none (`[0]enp41s0f1:<0>`)
    host: str | None = None
    line: int


class NetPlugin(_Model):
    """The external net plugin NCCL loaded (`libnccl-net.so`), as far as the log names it."""

    name: str | None = None  # "NCCL RDMA Plugin v6", "Libfabric", "AWS Libfabric", "FasTrak"
    api: str | None = None  # the plugin API version in brackets: "v6"
    collnet: str | None = None  # "SHARP (v6)" from "Loaded collnet plugin SHARP (v6)"
    path: str | None = None  # "Plugin Path : /usr/local/lib/libnccl-net.so"
    version: str | None = None  # "Plugin version : 1.2@Tencent Cloud", "aws-ofi-nccl 1.3.0aws"
    provider: str | None = None  # AWS OFI: "NET/OFI Selected Provider is efa"
    transport: str | None = None  # "P2P plugin v8 IBext_v8": the plugin's IB transport
    vendor: str | None = None  # who ships it, only where a line names it (see `_plugin_vendor`)
    lines: list[int] = Field(default_factory=list)


class ChannelConnection(_Model):
    """One `Channel 00/0 : 7[3] -> 0[0] [receive] via NET/IB/0/GDRDMA` line."""

    line: int
    channel: int
    src_rank: int | None = None  # None only in the shortened `Channel 00 -> NET/IB/0` form
    src_dev: str | None = None  # cudaDev (or bus id on old NCCL) in the brackets, as printed
    dst_rank: int | None = None
    dst_dev: str | None = None
    direction: Literal["send", "receive"] | None = None  # only network connections say
    via: str  # everything after "via", e.g. "NET/IB/0(8)/GDRDMA", "P2P/CUMEM", "SHM/direct/direct"
    kind: TransportKind
    net: str | None = None  # "IB", "Socket" or the net plugin's name, for NET connections
    net_dev: int | None = None  # the NET device index: NET/IB/<n>
    proxy_rank: int | None = None  # PXN: NET/IB/0(8) goes through rank 8's NIC
    gdr: bool = False  # "/GDRDMA": the NIC reads/writes GPU memory directly
    host: str | None = None  # the line's host prefix
    cuda_dev: str | None = None  # the line's [cudaDev] prefix: which local GPU logged it

    @property
    def transport(self) -> str:
        """The transport without device numbers: "P2P/IPC", "SHM", "NET/IB", "NET/Socket" ..."""
        if self.kind == "NET":
            return f"NET/{self.net}"
        if self.kind == "P2P":
            return "/".join(self.via.split("/")[:2])
        return self.kind if self.kind != "other" else self.via

    @property
    def pxn(self) -> bool:
        return self.proxy_rank is not None


class GidInUse(_Model):
    """The GID a RoCE connection used, from NCCL's connect line (net_ib.cc, RoCE branch):
    `NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 1047 mtu 5 ... GID 0 (80FE/1A8A41FEFF21A75E)`. NCCL prints
    the GID's two 64-bit halves (subnet prefix, interface id) as numbers read on a little-endian host:
    80FE is fe80:0000:0000:0000. InfiniBand connections print a LID instead, so this is RoCE only."""

    line: int
    index: int  # the GID index (NCCL_IB_GID_INDEX, or the one NCCL chose)
    gid: str  # the decoded GID, e.g. fe80::5ea7:21ff:fe41:8a1a
    net_dev: int | None = None  # NCCL Dev <n>
    ib_dev: int | None = None  # IbDev <n>
    host: str | None = None

    @property
    def link_local(self) -> bool:
        return ipaddress.IPv6Address(self.gid).is_link_local


class TopoLink(_Model):
    """One `+ PCI[0.2] - PCI/0-65000 (104c823200000000)` line of NCCL's topology print."""

    line: int
    kind: str  # PCI, NVL, SYS, NET, C2C, ...
    bw_gbps: float  # GB/s as NCCL computed it
    target: str  # "PCI/0-65000", "GPU/0-68000", "NIC/0-67000", "NET/0-c", "NVS/0-0"
    info: str | None = None  # in brackets: PCI vendor/device ids, GPU rank, NET guid/speed


class SystemTopology(_Model):
    """`=== System : maxBw 48.0 totalBw 370.8 ===` and the links printed under it."""

    line: int
    max_bw: float  # the best bandwidth NCCL found from a GPU to anything (GB/s)
    total_bw: float
    links: list[TopoLink] = Field(default_factory=list)


class NcclLogSummary(_Model):
    source: str
    nccl_version: str | None = None
    n_ranks: int | None = None
    n_nodes: int | None = None
    local_ranks: int | None = None
    ranks: list[int] = Field(default_factory=list)  # ranks whose `comm ... rank N` line is here
    hosts: list[str] = Field(default_factory=list)
    # host -> the cudaDevs of the lines logged on it: how many local GPUs this log speaks for
    local_devices: dict[str, list[str]] = Field(default_factory=dict)
    networks: list[str] = Field(default_factory=list)  # "Using network IB|Socket|<plugin>"
    network_lines: list[int] = Field(default_factory=list)
    net_plugin: NetPlugin | None = None
    net_plugin_absent: list[Evidence] = Field(default_factory=list)  # "No plugin found", load errors
    ib_no_device: list[int] = Field(default_factory=list)  # lines saying "NET/IB : No device found"
    ib_devices: list[IbDevice] = Field(default_factory=list)  # NET/IB : Using [0]mlx5_0:1/RoCE ...
    ib_lines: list[int] = Field(default_factory=list)
    ib_oob: list[NetInterface] = Field(default_factory=list)  # "; OOB bond0:10.0.0.1<0>"
    socket_devices: list[NetInterface] = Field(default_factory=list)  # NET/Socket : Using [0]eth0:...
    socket_lines: list[int] = Field(default_factory=list)
    # RDMA devices the log shows exist though NCCL could not use them ("NET/IB : Unable to open device
    # mlx5_bond_0", "Call to ibv_open_device failed"), and libibverbs failing to load at all.
    ib_open_failed: list[Evidence] = Field(default_factory=list)
    verbs_load_failed: list[Evidence] = Field(default_factory=list)
    # A TCP transport behind a net plugin: `NET/FastSocket : ...` lines, GPUDirect-TCPX(O) lines; the
    # plugin's name where a line gives it ("FastSocket", "GPUDirectTCPX").
    tcp_plugin: str | None = None
    tcp_plugin_lines: list[int] = Field(default_factory=list)
    gids_in_use: list[GidInUse] = Field(default_factory=list)  # RoCE connect lines: the GID each QP used
    gdr_disabled: list[Evidence] = Field(default_factory=list)  # "GPU Direct RDMA Disabled ..."
    gdr_enabled: list[Evidence] = Field(default_factory=list)  # "GPU Direct RDMA ... enabled for HCA"
    connections: list[ChannelConnection] = Field(default_factory=list)
    ring_pxn: bool | None = None  # "Connected all rings, use ring PXN 1 GDR 1"
    ring_gdr: bool | None = None
    nvls_multicast: bool | None = None
    nvls_lines: list[int] = Field(default_factory=list)
    channel_counts: dict[str, int] = Field(default_factory=dict)  # "coll": 16, "nvls": 16, ...
    channel_count_lines: list[int] = Field(default_factory=list)
    rings: dict[int, list[int]] = Field(default_factory=dict)  # Channel 00/16 : 0 7 6 ...
    system: SystemTopology | None = None  # the first `=== System` print
    env: dict[str, str] = Field(default_factory=dict)  # NCCL_IB_GID_INDEX set by environment to 3
    warnings: list[Evidence] = Field(default_factory=list)  # NCCL WARN lines
    error_traces: list[Evidence] = Field(default_factory=list)  # "init.cc:516 -> 3": NCCL failed
    # line -> message, for the lines a check may quote as evidence (network choice, NET/IB and
    # NET/Socket lists, plugin lines, channel connections)
    quotes: dict[int, str] = Field(default_factory=dict)

    @property
    def net_connections(self) -> list[ChannelConnection]:
        return [c for c in self.connections if c.kind == "NET"]

    @property
    def fabric_connections(self) -> list[ChannelConnection]:
        """Network connections over anything but TCP: NET/IB or an RDMA net plugin (not NET/Socket,
        and not a TCP plugin such as FastSocket or GPUDirect-TCPX)."""
        return [c for c in self.net_connections if c.net not in TCP_NETS]

    @property
    def tcp_transport(self) -> str | None:
        """The TCP transport that carried (or was set to carry) the traffic: "NCCL's socket transport"
        or a TCP net plugin by name; None when neither shows."""
        if any(c.net in TCP_NETS - {"Socket"} for c in self.connections) or (
                self.tcp_plugin is not None and not self.fabric_connections):
            return f"the {self.tcp_plugin or 'TCP'} net plugin"
        return "NCCL's socket transport" if self.uses_socket else None

    @property
    def rails_used(self) -> list[int]:
        """The NET device indexes any channel went through (PXN included), sockets excepted."""
        return sorted({c.net_dev for c in self.fabric_connections if c.net_dev is not None})

    @property
    def uses_socket(self) -> bool:
        return "Socket" in self.networks or any(c.net == "Socket" for c in self.connections)

    @property
    def socket_interfaces(self) -> list[str]:
        return list(dict.fromkeys(d.name for d in self.socket_devices))

    @property
    def socket_addresses(self) -> list[str]:
        """The address of each of `socket_interfaces` ("" where NCCL printed none)."""
        first = {d.name: d.address or "" for d in reversed(self.socket_devices)}
        return [first[name] for name in self.socket_interfaces]

    @property
    def ib_device_names(self) -> list[str]:
        """The RDMA devices NCCL listed, each once, in index order."""
        ordered = sorted(self.ib_devices, key=lambda d: (d.index, d.line))
        return list(dict.fromkeys(d.name for d in ordered))

    def ib_device(self, index: int, host: str | None = None) -> IbDevice | None:
        """The device NET/IB/<index> stands for (on `host`, where the log names several)."""
        for device in self.ib_devices:
            if device.index == index and (host is None or device.host in (host, None)):
                return device
        return None

    @property
    def transports_by_channel(self) -> dict[int, list[str]]:
        """channel -> the distinct `via` strings of its connections, sorted."""
        table: dict[int, set[str]] = {}
        for c in self.connections:
            table.setdefault(c.channel, set()).add(c.via)
        return {channel: sorted(vias) for channel, vias in sorted(table.items())}

    @property
    def transport_counts(self) -> dict[str, int]:
        """`via` -> how many connection lines went through it."""
        counts: dict[str, int] = {}
        for c in self.connections:
            counts[c.via] = counts.get(c.via, 0) + 1
        return counts


# host:pid:tid [cudaDev] NCCL INFO message. The host part is free text (GKE host names are long
# and hyphenated; the first line of a capture may have lost its beginning).
# Searched, not anchored: mpirun may put "[1,0]<stdout>:" in front.
# A WARN line names the source location first: "h:1:2 [4] misc/socket.cc:397 NCCL WARN ...".
_LINE = re.compile(r"(?:(?P<host>[^\s:]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>[^\]]*)\] "
                   r"(?:(?P<where>[\w./-]+:\d+) )?)?"
                   r"NCCL (?P<level>INFO|WARN|TRACE|ABORT) ?(?P<msg>.*)$")
# NCCL's error trace: "bootstrap.cc:256 -> 3" is a call that returned ncclResult_t 3.
_ERROR_TRACE = re.compile(r"^([\w./-]+\.(?:cc|c|cu|h|cpp):\d+) -> (\d+)")
NCCL_RESULTS = {1: "unhandled CUDA error", 2: "system error", 3: "internal error", 4: "invalid argument",
                5: "invalid usage", 6: "remote error"}
# The topology print without any prefix (pasted on its own): "=== System : ...", "CPU/0 (1/1/2)",
# "+ PCI[24.0] - GPU/4000 (0)".
_BARE_TOPOLOGY = re.compile(r"^\s*(?:=== System : maxBw|\+ [A-Z0-9]+\[[\d.]+\] - \S)")
_VERSION = re.compile(r"NCCL version (\S+)")
# Rank 0 prints the version on stdout without any prefix (mpirun may add "[1,0]<stdout>:").
_BARE_VERSION = re.compile(r"(?:^|[\s>:])NCCL version (\d\S*)\s*$")
_COMM = re.compile(r"\brank (\d+) nRanks (\d+) nNodes (\d+) localRanks (\d+)")
_INIT_RANK = re.compile(r"\bcomm \S+ rank (\d+) nranks (\d+) ")  # "ncclCommInitRank comm 0x.. rank 0 nranks 1"
# The shortened form people paste: "Channel 00 -> NET/IB/0/GDRDMA     Channel 01 -> NET/IB/1".
_SHORT_CHANNEL = re.compile(r"(?:^|\s)Channel (\d+) -> ((?:NET|P2P|SHM)/\S+)")
_USING_NETWORK = re.compile(r"^Using network (.+?)\s*$")
_PLUGIN = re.compile(r"Loaded (net|collnet) plugin (.+?)\s*$", re.I)
_PLUGIN_API = re.compile(r"^(.*?)\s*\((v\d+)\)$")
_PLUGIN_PATH = re.compile(r"^Plugin Path\s*:\s*(\S.*?)\s*$")
_PLUGIN_VERSION = re.compile(r"^Plugin version\s*:\s*(\S.*?)\s*$")
_OFI_VERSION = re.compile(r"^NET/OFI Using (aws-ofi-nccl \S+)")
_P2P_PLUGIN = re.compile(r"^P2P plugin (?:v\d+ )?(\S+)\s*$")
_OFI_PROVIDER = re.compile(r"^NET/OFI Selected [Pp]rovider is (\S+)")
_PLUGIN_ABSENT = re.compile(r"No plugin found|Plugin load \(.*\) returned|Could not find: libnccl-net|"
                            r"are not supported")
_IB_USING = re.compile(r"^NET/IB ?: Using (.*)$")
# [0]mlx5_bond_6:1/RoCE  [0]mlx5_0:1/IB/SHARP  [0]hfi1_0:1/IB
_IB_DEV = re.compile(r"\[(\d+)\]([^\s:\[\]]+)(?::(\d+))?((?:/[A-Za-z][\w-]*)*)")
_OOB = re.compile(r"OOB ([^\s:<]+):([^\s<]*)")
_SOCKET_USING = re.compile(r"^NET/Socket ?: Using (.*)$")
_SOCKET_IF = re.compile(r"\[(\d+)\]([^:\s<\[]+)(?::([^\s<]*))?")
_CHANNEL_CONN_HINT = re.compile(r"^(?:Channel|Ring) \d+(?:/\d+)? : .* via ")
_CHANNEL_CONN = re.compile(
    r"^(?:Channel|Ring) (?P<ch>\d+)(?:/\d+)? : (?P<src>\d+)(?:\[(?P<sdev>[^\]]+)\])? -> "
    r"(?P<dst>\d+)(?:\[(?P<ddev>[^\]]+)\])?(?: \[(?P<dir>send|receive)\])? via (?P<via>.+?)\s*$"
)
_NET_VIA = re.compile(r"^NET/(?P<net>[^/]+)/(?P<dev>\d+)(?:\((?P<proxy>\d+)\))?(?P<rest>(?:/.*)?)$")
_RING = re.compile(r"^Channel (\d+)(?:/(\d+))? :((?:\s+\d+)+)\s*$")
_RING_PXN = re.compile(r"Connected all rings(?:, use ring PXN (\d) GDR (\d))?")
_NVLS_MC = re.compile(r"NVLS multicast support is (not )?available")
_COUNTS = re.compile(r"(\d+) ([a-z2]+) channels( per peer)?")
_ENV = re.compile(r"^(NCCL_\w+) set by environment to (.*?)\.?\s*$")
_SYSTEM = re.compile(r"^=== System : maxBw ([\d.]+) totalBw ([\d.]+) ===")
_TOPO_LINK = re.compile(r"^\+ (?P<kind>[A-Z0-9]+)\[(?P<bw>[\d.]+)\] - (?P<target>\S+)(?: \((?P<info>[^)]*)\))?")
# Lines worth quoting as evidence of what the network did.
_QUOTED = re.compile(r"^(?:Using network |NET/|Plugin Path|Plugin version|(?:Channel|Ring) \d+(?:/\d+)? : .* via )")
_GDR_ON = re.compile(r"GPU Direct RDMA .*[Ee]nabled for HCA")
# net_ib.cc's RoCE connect line: "... GID %ld (%lX/%lX) ..." (index, subnet prefix, interface id);
# "NCCL Dev %d IbDev %d" (2.12+), "Dev %d Port %d" before.
_GID_IN_USE = re.compile(r"\bGID (-?\d+) \(([0-9A-Fa-f]{1,16})/([0-9A-Fa-f]{1,16})\)")
_GID_DEVS = re.compile(r"(?:NCCL (?:Merged)?Dev|\bDev) (\d+)(?: IbDev (\d+))?")
# The device NCCL found but could not open (net_ib.cc "NET/IB : Unable to open device %s"; ibvwrap.cc
# "Call to ibv_open_device failed", which names none).
_IB_OPEN_FAILED = re.compile(r"NET/IB ?: Unable to open device (\S+)|Call to ibv_open_device failed")
# ibvwrap.cc / ibvsymbols.cc: "Failed to open libibverbs.so[.1]"; libibverbs' own driver warning.
_VERBS_LOAD_FAILED = re.compile(r"Failed to open libibverbs|libibverbs: Warning: couldn't load driver")
# TCP transports behind a net plugin: Google's FastSocket ("NET/FastSocket : Using ...", "Loaded net
# plugin FastSocket") and GPUDirect-TCPX/TCPXO ("NET/GPUDirectTCPX", the plugin's tcpx* warnings).
# Only a plugin that loaded or a transport that speaks: "Plugin load (libnccl-net-tcpx.so) returned 2"
# names a plugin that did not load.
_TCP_PLUGIN = re.compile(r"^(?:NET/|NET/Plugin ?: ?Loaded net plugin )(FastSocket|GPUDirectTCPXO?|FasTrak)\b")
_TCPX_WHERE = re.compile(r"\btcpx\w*\(")  # the TCPX plugin's functions name the line's source
_TCP_PLUGIN_NAMES = {"fastsocket": "FastSocket", "gpudirecttcpx": "GPUDirectTCPX", "gpudirecttcpxo": "GPUDirectTCPXO",
                     "fastrak": "FasTrak (GPUDirect-TCPXO)"}


def looks_like_nccl_log(text: str) -> bool:
    """Any `NCCL INFO`/`NCCL WARN` line, wherever it is: an NCCL log may be interleaved with the
    program's own output (nccl-tests' table, a training script), and is still an NCCL log. NCCL's
    topology print (`=== System : maxBw ...`) pasted on its own is one too."""
    # [ \t]*, never \s*: under re.M, \s* runs across newlines, and blank lines made that quadratic.
    return bool(re.search(r"NCCL (INFO|WARN) |^[ \t]*=== System : maxBw [\d.]+ totalBw", text, re.M))


def _via_kind(via: str) -> TransportKind:
    head = via.split("/", 1)[0]
    if head in ("P2P", "SHM", "NET", "NVLS"):
        return head  # type: ignore[return-value]
    if head.startswith("CollNet") or head == "COLLNET":
        return "COLLNET"
    if via.startswith("direct shared memory"):  # NCCL < 2.5
        return "SHM"
    return "other"


def _connection(match: re.Match[str], source: str, line: int, host: str | None,
                cuda_dev: str | None) -> ChannelConnection:
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
        host=host or None,
        cuda_dev=cuda_dev,
        **fields,
    )


def _plugin_vendor(plugin: NetPlugin) -> str | None:
    """Who ships the plugin, only from what the log printed (name, path, version)."""
    text = " ".join(p for p in (plugin.name, plugin.path, plugin.version) if p)
    if "Tencent" in text or "TCCL" in text:
        return "Tencent Cloud"
    if "aws-ofi-nccl" in text or "Libfabric" in text or plugin.provider is not None:
        return "AWS OFI (libfabric)"
    if "FasTrak" in text or "TCPX" in text:
        return "Google Cloud GPUDirect-TCPX/TCPXO"
    if "hpcx" in text.lower():
        return "NVIDIA HPC-X nccl-rdma-sharp-plugins"
    if re.search(r"rdma[-_]sharp[-_]plugin", text) or "NCCL RDMA Plugin" in text:
        # Tencent builds its plugin from the same source and name: only a path or version line
        # that names Tencent tells them apart.
        return "nccl-rdma-sharp-plugins (NVIDIA's, or a cloud's build of it)"
    return None


class _Builder:
    """Accumulates one summary; `feed` handles one NCCL message."""

    def __init__(self, source: str) -> None:
        self.summary = NcclLogSummary(source=source)
        self.source = source

    def _plugin(self, line: int) -> NetPlugin:
        s = self.summary
        if s.net_plugin is None:
            s.net_plugin = NetPlugin()
        if line not in s.net_plugin.lines:
            s.net_plugin.lines.append(line)
        return s.net_plugin

    def feed(self, message: str, level: str, line: int, host: str | None, dev: str | None) -> None:
        s = self.summary
        if level == "WARN":
            s.warnings.append(Evidence(line=line, text=message))
        if (trace := _ERROR_TRACE.match(message)) and trace.group(2) != "0":
            s.error_traces.append(Evidence(line=line, text=message.strip()))
        version = _VERSION.search(message)
        if version and s.nccl_version is None:
            s.nccl_version = version.group(1)
        comm = _COMM.search(message)
        if comm:
            rank, n_ranks, n_nodes, local_ranks = (int(g) for g in comm.groups())
            s.n_ranks, s.n_nodes, s.local_ranks = n_ranks, n_nodes, local_ranks
            if rank not in s.ranks:
                s.ranks.append(rank)
        if _QUOTED.search(message):
            s.quotes[line] = message.strip()
        elif (init := _INIT_RANK.search(message)) and s.n_ranks is None:
            s.n_ranks = int(init.group(2))
        if match := _USING_NETWORK.match(message):
            if match.group(1) not in s.networks:
                s.networks.append(match.group(1))
            s.network_lines.append(line)
        self._feed_plugin(message, line)
        if message.startswith("NET/IB") and "No device found" in message:
            s.ib_no_device.append(line)
        if match := _IB_USING.match(message):
            self._feed_ib(match.group(1), line, host)
        if match := _SOCKET_USING.match(message):
            s.socket_lines.append(line)
            for index, name, address in _SOCKET_IF.findall(match.group(1)):
                device = NetInterface(index=int(index), name=name, address=address or None,
                                      host=host, line=line)
                if not any((d.host, d.index, d.name) == (host, device.index, name)
                           for d in s.socket_devices):
                    s.socket_devices.append(device)
        self._feed_unused_rdma(message, line)
        if (gid := _GID_IN_USE.search(message)) is not None and message.startswith("NET/IB"):
            self._feed_gid(gid, message, line, host)
        if "GPU Direct RDMA Disabled" in message:
            s.gdr_disabled.append(Evidence(line=line, text=message))
        elif _GDR_ON.search(message):
            s.gdr_enabled.append(Evidence(line=line, text=message))
        if _CHANNEL_CONN_HINT.match(message):
            match = _CHANNEL_CONN.match(message)
            if match is None:
                raise ParseError(f"cannot read channel connection {message!r}",
                                 source=self.source, line=line)
            s.connections.append(_connection(match, self.source, line, host, dev))
        elif match := _RING.match(message):
            s.rings[int(match.group(1))] = [int(r) for r in match.group(3).split()]
        if (match := _RING_PXN.search(message)) and match.group(1) is not None:
            s.ring_pxn = match.group(1) == "1"
            s.ring_gdr = match.group(2) == "1"
        if match := _NVLS_MC.search(message):
            s.nvls_multicast = match.group(1) is None
            s.nvls_lines.append(line)
        if message.rstrip().endswith("channels per peer") or re.search(r"\d+ coll channels", message):
            s.channel_count_lines.append(line)
            for count, name, per_peer in _COUNTS.findall(message):
                key = name + ("_per_peer" if per_peer else "")
                s.channel_counts[key] = max(int(count), s.channel_counts.get(key, 0))
        if match := _ENV.match(message):
            s.env[match.group(1)] = match.group(2)
        self._feed_topology(message.strip(), line)

    def _feed_gid(self, match: re.Match[str], message: str, line: int, host: str | None) -> None:
        prefix, interface = (int(h, 16) for h in match.group(2, 3))
        if prefix >= 1 << 64 or interface >= 1 << 64:
            return  # not two 64-bit halves: not the line this reads
        raw = prefix.to_bytes(8, "little") + interface.to_bytes(8, "little")
        devs = _GID_DEVS.search(message)
        use = GidInUse(line=line, index=int(match.group(1)), gid=str(ipaddress.IPv6Address(raw)),
                       net_dev=int(devs.group(1)) if devs else None, ib_dev=int(devs.group(2)) if devs else None,
                       host=host)
        if not any((u.host, u.net_dev, u.index, u.gid) == (use.host, use.net_dev, use.index, use.gid)
                   for u in self.summary.gids_in_use):
            self.summary.gids_in_use.append(use)
        self.summary.quotes.setdefault(line, message.strip())

    def _feed_unused_rdma(self, message: str, line: int) -> None:
        s = self.summary
        if (opened := _IB_OPEN_FAILED.search(message)) is not None:
            s.ib_open_failed.append(Evidence(line=line, text=opened.group(1) or "ibv_open_device"))
        if _VERBS_LOAD_FAILED.search(message):
            s.verbs_load_failed.append(Evidence(line=line, text=message.strip()))
        if (tcp := _TCP_PLUGIN.search(message)) is not None:
            s.tcp_plugin = s.tcp_plugin or _TCP_PLUGIN_NAMES.get(tcp.group(1).lower(), tcp.group(1))
            s.tcp_plugin_lines.append(line)
            s.quotes.setdefault(line, message.strip())

    def feed_short_channels(self, pairs: list[tuple[str, str]], line: int, text: str) -> None:
        """`Channel 00 -> NET/IB/0/GDRDMA`: the transport of a channel, without its ranks."""
        for channel, via in pairs:
            kind = _via_kind(via)
            fields: dict[str, object] = {}
            if kind == "NET" and (net := _NET_VIA.match(via)) is not None:
                fields = {"net": net.group("net"), "net_dev": int(net.group("dev")),
                          "proxy_rank": int(net.group("proxy")) if net.group("proxy") else None,
                          "gdr": "GDRDMA" in net.group("rest").split("/")}
            self.summary.connections.append(ChannelConnection(
                line=line, channel=int(channel), via=via, kind=kind, **fields))
            self.summary.quotes[line] = text

    def _feed_plugin(self, message: str, line: int) -> None:
        s = self.summary
        if match := _PLUGIN.search(message):
            plugin = self._plugin(line)
            what, name = match.group(1).lower(), match.group(2)
            if what == "collnet":
                plugin.collnet = name
            else:
                api = _PLUGIN_API.match(name)
                plugin.name, plugin.api = (api.group(1), api.group(2)) if api else (name, None)
        elif match := _PLUGIN_PATH.match(message):
            self._plugin(line).path = match.group(1)
        elif (match := _PLUGIN_VERSION.match(message)) or (match := _OFI_VERSION.match(message)):
            self._plugin(line).version = match.group(1)
        elif match := _P2P_PLUGIN.match(message):
            self._plugin(line).transport = match.group(1)
        elif match := _OFI_PROVIDER.match(message):
            self._plugin(line).provider = match.group(1)
        elif message.startswith("NET/Plugin") and _PLUGIN_ABSENT.search(message):
            s.net_plugin_absent.append(Evidence(line=line, text=message.strip()))
            return
        else:
            return
        if s.net_plugin is not None:
            s.net_plugin.vendor = _plugin_vendor(s.net_plugin)

    def _feed_ib(self, listing: str, line: int, host: str | None) -> None:
        s = self.summary
        s.ib_lines.append(line)
        for index, name, port, tail in _IB_DEV.findall(listing):
            parts = [p for p in tail.split("/") if p]
            device = IbDevice(index=int(index), name=name, port=int(port) if port else None,
                              link_layer=parts[0] if parts else None, flags=parts[1:],
                              host=host, line=line)
            key = (device.host, device.index, device.name, device.port, device.link_layer)
            if not any((d.host, d.index, d.name, d.port, d.link_layer) == key for d in s.ib_devices):
                s.ib_devices.append(device)
        if match := _OOB.search(listing):
            name, address = match.group(1), match.group(2) or None
            if not any((d.host, d.name) == (host, name) for d in s.ib_oob):
                s.ib_oob.append(NetInterface(name=name, address=address, host=host, line=line))

    def _feed_topology(self, message: str, line: int) -> None:
        s = self.summary
        if match := _SYSTEM.match(message):
            if s.system is None:
                s.system = SystemTopology(line=line, max_bw=float(match.group(1)),
                                          total_bw=float(match.group(2)))
        elif s.system is not None and (match := _TOPO_LINK.match(message)):
            link = TopoLink(line=line, kind=match.group("kind"), bw_gbps=float(match.group("bw")),
                            target=match.group("target"), info=match.group("info"))
            if not any((k.kind, k.bw_gbps, k.target, k.info) == (link.kind, link.bw_gbps,
                                                                  link.target, link.info)
                       for k in s.system.links):
                s.system.links.append(link)


def parse_nccl_log(text: str, source: str = "<input>") -> NcclLogSummary:
    """Summarise an `NCCL_DEBUG=INFO` (or TRACE) log, from one rank or many interleaved, alone or
    mixed with other output (whose lines are skipped)."""
    builder = _Builder(source)
    hosts: list[tuple[str, int]] = []
    devices: dict[str, list[str]] = {}
    seen = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if line.startswith("# source:"):  # a capture's provenance note (see kinds.recognise)
            continue
        if "NCCL " not in line:
            if _BARE_TOPOLOGY.match(line):  # NCCL's topology print pasted without its prefixes
                seen += 1
                builder._feed_topology(line.strip(), number)
            elif short := _SHORT_CHANNEL.findall(line):
                seen += 1
                builder.feed_short_channels(short, number, line.strip())
            continue
        match = _LINE.search(line)
        if match is None:
            bare = _BARE_VERSION.search(line)
            if bare and builder.summary.nccl_version is None:
                builder.summary.nccl_version = bare.group(1)
            continue
        seen += 1
        host = match.group("host")
        if host and host not in (h for h, _ in hosts):
            hosts.append((host, number))
        dev = match.group("dev")
        if dev is not None:
            listed = devices.setdefault(host or "", [])
            if dev not in listed:
                listed.append(dev)
        builder.feed(match.group("msg"), match.group("level"), number, host or None, dev)
        if _TCPX_WHERE.search(line[: match.start("level")]):  # "tcpxCommProgress(...):1231 NCCL WARN"
            builder.summary.tcp_plugin = builder.summary.tcp_plugin or "GPUDirectTCPX"
            builder.summary.tcp_plugin_lines.append(number)
    if not seen:
        raise ParseError("no `NCCL INFO` line: not an NCCL log, or NCCL_DEBUG=INFO was not set",
                         source=source, line=1)
    summary = builder.summary
    summary.hosts = _real_hosts(hosts)
    summary.local_devices = {h: sorted(d, key=_dev_key) for h, d in devices.items()
                             if not h or h in summary.hosts}
    summary.ranks.sort()
    return summary


def _dev_key(dev: str) -> tuple[int, str]:
    return (int(dev), dev) if dev.isdigit() else (1 << 30, dev)


def _real_hosts(hosts: list[tuple[str, int]]) -> list[str]:
    # A log cut at its start leaves "pgds-aihub0008" on line 1 for "tpgds-aihub0008": drop a
    # host that is only the tail of another one.
    names = [h for h, _ in hosts]
    return [h for h in names if not any(o != h and o.endswith(h) for o in names)]
