"""The one registry of capture kinds: how each is recognised, which parser reads it, which command
prints it. `detect` reads captures through it; the lab's replay (`providers.lab.replay`) asks it
which command a captured file answers.

`recognise(text)` names the kind of one capture. `split_transcript(text)` cuts a terminal
transcript (`$ show_gids` ... `$ ibv_devinfo` ...) into one segment per command, so each can be
recognised on its own. The GPU-side kinds are sniffed here; the network kinds ask the modules
that parse them (`rdma`, `iproute`, `nccl_log`) through their `looks_like_<kind>` functions, so
the knowledge of a format lives in one place. Parsers are imported when first used: a bundle
with only RDMA files does not load the XML machinery.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, cast

from toolkit.topology.text import command_prompt, is_shell_prompt, prompt_host, strip_ansi

Kind = Literal[
    "manifest", "nccl-topo-xml", "nvsmi-q-xml", "topo-matrix", "nvsmi-q", "query-gpu-csv",
    "ip-addr-json", "ip-link-json", "ibv_devinfo", "ibstat", "show_gids", "ibdev2netdev",
    "rdma-link", "nccl-log", "nccl-tests", "ip-brief", "gid-lines",
]
# What a parser's result is, so `detect` knows where it goes.
Yields = Literal["gpu", "nics", "gids", "netdevs", "interfaces", "nccl-log", "nothing"]

# The first line gather.sh writes into MANIFEST.
MANIFEST_MAGIC = "# gpuctl gather manifest"


@dataclass(frozen=True)
class KindInfo:
    kind: Kind
    module: str
    parser: str  # function (text, source) -> result
    yields: Yields
    # The command that prints this kind and an argument that selects it, for the lab's stand-ins;
    # None for kinds a stand-in must never answer (ip: the lab node's own network needs the real one).
    command: tuple[str, str] | None = None
    # Whether the command lists every RDMA device of the node (ibv_devinfo, not ibv_devinfo -d X).
    lists_devices: bool = False


KINDS: dict[Kind, KindInfo] = {info.kind: info for info in (
    KindInfo("manifest", "toolkit.topology.detect", "parse_manifest", "nothing"),
    KindInfo("nccl-topo-xml", "toolkit.topology.nccl_xml", "parse_nccl_topo_xml", "gpu"),
    KindInfo("nvsmi-q-xml", "toolkit.topology.nvsmi_query", "parse_nvsmi_q_xml", "gpu", ("nvidia-smi", "-q -x")),
    KindInfo("topo-matrix", "toolkit.topology.nvsmi_topo", "parse_topo_matrix", "gpu", ("nvidia-smi", "topo")),
    KindInfo("nvsmi-q", "toolkit.topology.nvsmi_query", "parse_nvsmi_q", "gpu", ("nvidia-smi", "-q")),
    KindInfo("query-gpu-csv", "toolkit.topology.nvsmi_query", "parse_query_gpu_csv", "gpu",
             ("nvidia-smi", "--query-gpu")),
    KindInfo("ip-addr-json", "toolkit.topology.iproute", "parse_ip_addr_json", "interfaces"),
    KindInfo("ip-link-json", "toolkit.topology.iproute", "parse_ip_link_json", "interfaces"),
    KindInfo("ip-brief", "toolkit.topology.iproute", "parse_ip_brief", "interfaces"),
    KindInfo("ibv_devinfo", "toolkit.topology.rdma", "parse_ibv_devinfo", "nics", ("ibv_devinfo", ""), True),
    KindInfo("ibstat", "toolkit.topology.rdma", "parse_ibstat", "nics", ("ibstat", ""), True),
    KindInfo("show_gids", "toolkit.topology.rdma", "parse_show_gids", "gids", ("show_gids", "")),
    KindInfo("gid-lines", "toolkit.topology.rdma", "parse_gid_lines", "gids"),
    KindInfo("ibdev2netdev", "toolkit.topology.rdma", "parse_ibdev2netdev", "netdevs", ("ibdev2netdev", ""), True),
    KindInfo("rdma-link", "toolkit.topology.rdma", "parse_rdma_link", "netdevs", ("rdma", "link"), True),
    KindInfo("nccl-log", "toolkit.topology.nccl_log", "parse_nccl_log", "nccl-log"),
    KindInfo("nccl-tests", "toolkit.bench.nccl_tests", "parse_nccl_tests", "nothing"),
)}

# Bundle file -> the kind gather.sh stores in it (see gather.sh; keep the two in step).
BUNDLE_FILES: dict[str, Kind] = {
    "nvidia-smi-topo-m.txt": "topo-matrix",
    "nvidia-smi-query-gpu.csv": "query-gpu-csv",
    "nvidia-smi-q.xml": "nvsmi-q-xml",
    "ibv_devinfo-v.txt": "ibv_devinfo",
    "ibstat.txt": "ibstat",
    "show_gids.txt": "show_gids",
    "ibdev2netdev.txt": "ibdev2netdev",
    "rdma-link.txt": "rdma-link",
    "ip-addr.json": "ip-addr-json",
    "ip-link.json": "ip-link-json",
}

# Kept free of nested quantifiers: a matrix row must not send the regex into backtracking.
_TOPO_HEADER = re.compile(r"^[ \t]*GPU0[ \t][^\n]*?CPU[ \t]+Affinity", re.MULTILINE)
_Q_TEXT = re.compile(r"^(=+NVSMI LOG=+|Driver Version\s+: )", re.MULTILINE)
_CSV_HEADER = re.compile(
    r"^(?:[\w.]+(?: \[[^\]]+\])?, )*(?:index|name|pci\.bus_id|uuid)(?: \[[^\]]+\])?(?:, |$)",
    re.MULTILINE,
)

# kind -> (module, function) for the network kinds, asked in this order.
_NETWORK_SNIFFERS: tuple[tuple[Kind, str, str], ...] = (
    ("ip-addr-json", "toolkit.topology.iproute", "looks_like_ip_addr_json"),
    ("ip-link-json", "toolkit.topology.iproute", "looks_like_ip_link_json"),
    ("ip-brief", "toolkit.topology.iproute", "looks_like_ip_brief"),
    ("show_gids", "toolkit.topology.rdma", "looks_like_show_gids"),
    ("ibv_devinfo", "toolkit.topology.rdma", "looks_like_ibv_devinfo"),
    ("ibstat", "toolkit.topology.rdma", "looks_like_ibstat"),
    ("ibdev2netdev", "toolkit.topology.rdma", "looks_like_ibdev2netdev"),
    ("rdma-link", "toolkit.topology.rdma", "looks_like_rdma_link"),
    ("gid-lines", "toolkit.topology.rdma", "looks_like_gid_lines"),  # last: GID lines out of a table
)


def _function(module: str, name: str) -> Callable[..., Any] | None:
    try:
        return cast(Callable[..., Any], getattr(importlib.import_module(module), name))
    except (ImportError, AttributeError):  # that parser is not installed in this build
        return None


def parser_for(kind: Kind) -> Callable[..., Any]:
    """The parser of `kind`: (text, source) -> a partial Topology, NICs, GIDs, ... (see `yields`).
    The RDMA parsers also take a list to append notes about cut records to."""
    info = KINDS[kind]
    function = _function(info.module, info.parser)
    if function is None:
        raise LookupError(f"no parser for {kind} in this build ({info.module}.{info.parser})")
    return function


@dataclass(frozen=True)
class Segment:
    first_line: int  # 1-based line of the segment's first line in the whole capture
    text: str
    command: str | None = None  # the command line of the prompt before it ("ibv_devinfo -d mlx5_0")
    host: str | None = None  # the host that prompt names

    def padded(self) -> str:
        """The text behind blank lines, so a parser's line numbers are the file's."""
        return "\n" * (self.first_line - 1) + self.text


def _xml_root(text: str) -> str | None:
    match = re.search(r"<([A-Za-z_][\w.-]*)[\s>/]", re.sub(r"<[?!][^>]*>", "", text))
    return match.group(1) if match else None


def _sniff(kind: Kind, module: str, name: str, text: str) -> bool:
    sniff = _function(module, name)
    return sniff is not None and bool(sniff(text))


def _after_prompts(lines: list[str]) -> list[str]:
    start = 0
    while start < len(lines) and (is_shell_prompt(lines[start]) or command_prompt(lines[start]) is not None):
        start += 1
    return lines[start:]


def recognise(text: str) -> Kind | None:
    """The kind of one capture, or None when nothing here can read it."""
    body = "\n".join(
        line for line in strip_ansi(text).splitlines() if not line.startswith("# source:")
    )
    # A pasted prompt (`root@host:/dir# cat topo_dump.xml`) before a document.
    stripped = "\n".join(_after_prompts(body.lstrip().splitlines())).lstrip()
    if stripped.startswith(MANIFEST_MAGIC):
        return "manifest"
    if stripped.startswith("<"):
        root = _xml_root(stripped)
        if root == "system":
            return "nccl-topo-xml"
        if root == "nvidia_smi_log":
            return "nvsmi-q-xml"
    if _TOPO_HEADER.search(body):
        return "topo-matrix"
    if _Q_TEXT.search(body):
        return "nvsmi-q"
    if _CSV_HEADER.search(body):
        return "query-gpu-csv"
    # An NCCL log is often saved together with the program's output (nccl-tests tables): its
    # NCCL lines are what says how the node's network was used, so the log wins.
    if _sniff("nccl-log", "toolkit.topology.nccl_log", "looks_like_nccl_log", body):
        return "nccl-log"
    if _sniff("nccl-tests", "toolkit.bench.nccl_tests", "looks_like_nccl_tests", body):
        return "nccl-tests"
    for kind, module, name in _NETWORK_SNIFFERS:
        if _sniff(kind, module, name, text):
            return kind
    return None


def also_nccl_log(kind: Kind, text: str) -> bool:
    """A matrix or a -q printout pasted together with an NCCL log and no prompt between them."""
    return kind in ("topo-matrix", "nvsmi-q", "query-gpu-csv") and _sniff(
        "nccl-log", "toolkit.topology.nccl_log", "looks_like_nccl_log", text)


def lists_every_device(kind: Kind, command: str | None) -> bool:
    """Whether a capture of `kind`, printed by `command` (when known), lists all RDMA devices.

    `ibv_devinfo -d mlx5_0`, `ibstat mlx5_0`, `rdma link show mlx5_0/1` and `show_gids mlx5_0`
    speak for one device; without a command line the capture is taken as the whole listing.
    """
    if not KINDS[kind].lists_devices:
        return False
    if command is None:
        return True
    words = command.split()[1:]
    if kind == "ibv_devinfo":
        return not any(w in ("-d", "--ib-dev") or w.startswith(("-d", "--ib-dev=")) for w in words)
    if kind == "rdma-link":
        return not any("/" in w or w.startswith(("mlx", "erdma", "hfi", "irdma", "bnxt")) for w in words)
    return not [w for w in words if not w.startswith("-")]


def replay_commands(text: str) -> list[tuple[str, str]]:
    """(command, argument hint) for each output in a captured file that a lab stand-in may replay."""
    found: list[tuple[str, str]] = []
    for segment in split_transcript(text):
        kind = recognise(segment.text)
        command = KINDS[kind].command if kind is not None else None
        if command is not None and command not in found:
            found.append(command)
    return found


def split_transcript(text: str) -> list[Segment]:
    """Cut at shell prompts naming a known command; no prompt (or one) gives the whole text.

    Each segment ends with a newline unless it is the end of a capture that stops mid-line, so
    a parser can still tell a cut last line. A command whose output is empty gives an empty
    segment when another prompt follows it (an empty `rdma link` listing says something).
    """
    lines = text.splitlines()
    starts = [(i, command) for i, line in enumerate(lines) if (command := command_prompt(line)) is not None]
    ends_cut = bool(text) and not text.endswith(("\n", "\r"))

    def body(first: int, end: int) -> str:
        joined = "\n".join(lines[first:end])
        return joined if (end >= len(lines) and ends_cut) or not joined else joined + "\n"

    if len(starts) < 2:
        if len(starts) == 1 and not any(
            line.strip() and not line.startswith("#") for line in lines[: starts[0][0]]
        ):
            index, command = starts[0]
            return [Segment(1, text, command, prompt_host(lines[index]))]
        return [Segment(1, text)]
    segments: list[Segment] = []
    if any(line.strip() and not line.startswith("#") for line in lines[: starts[0][0]]):
        segments.append(Segment(1, body(0, starts[0][0])))
    for n, (start, command) in enumerate(starts):
        last = n + 1 == len(starts)
        end = len(lines) if last else starts[n + 1][0]
        segment = Segment(start + 2, body(start + 1, end), command, prompt_host(lines[start]))
        if segment.text.strip() or not last:
            segments.append(segment)
    return segments
