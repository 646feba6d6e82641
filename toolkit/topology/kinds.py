"""Recognise what a capture is from its content: users paste whatever they have.

`recognise(text)` names the kind of one capture. `split_transcript(text)` cuts a terminal
transcript (`$ show_gids` ... `$ ibv_devinfo` ...) into one segment per command, so each can be
recognised on its own. The GPU-side kinds are sniffed here; the network kinds ask the modules
that parse them (`rdma`, `iproute`, `nccl_log`) through their `looks_like_<kind>` functions, so
the knowledge of a format lives in one place.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, cast

from toolkit.bench.nccl_tests import looks_like_nccl_tests
from toolkit.topology.nvsmi_topo import strip_ansi

Kind = Literal[
    "manifest", "nccl-topo-xml", "nvsmi-q-xml", "topo-matrix", "nvsmi-q", "query-gpu-csv",
    "ip-addr-json", "ip-link-json", "ibv_devinfo", "ibstat", "show_gids", "ibdev2netdev",
    "rdma-link", "nccl-log", "nccl-tests", "ip-brief",
]

# The first line gather.sh writes into MANIFEST.
MANIFEST_MAGIC = "# gpuctl gather manifest"

# Kept free of nested quantifiers: a matrix row must not send the regex into backtracking.
_TOPO_HEADER = re.compile(r"^[ \t]*GPU0[ \t][^\n]*?CPU[ \t]+Affinity", re.MULTILINE)
_Q_TEXT = re.compile(r"^(=+NVSMI LOG=+|Driver Version\s+: )", re.MULTILINE)
_CSV_HEADER = re.compile(
    r"^(?:[\w.]+(?: \[[^\]]+\])?, )*(?:index|name|pci\.bus_id|uuid)(?: \[[^\]]+\])?(?:, |$)",
    re.MULTILINE,
)
# Shell prompts and notes that introduce a command's output in a pasted transcript.
_PROMPT = re.compile(
    r"^(?:.*?[$#>]\s*|# cmd:.*?)"
    r"(?:sudo\s+)?(?:kubectl exec .*? -- )?"
    r"(nvidia-smi|ibv_devinfo|ibstat|show_gids|ibdev2netdev|rdma|ip|cat|ib_write_bw)\b.*$"
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
    ("nccl-log", "toolkit.topology.nccl_log", "looks_like_nccl_log"),
)


@dataclass(frozen=True)
class Segment:
    first_line: int  # 1-based line of the segment's first line in the whole capture
    text: str

    def padded(self) -> str:
        """The text behind blank lines, so a parser's line numbers are the file's."""
        return "\n" * (self.first_line - 1) + self.text


def _sniffer(module: str, name: str) -> Callable[[str], bool] | None:
    try:
        return cast(Callable[[str], bool], getattr(importlib.import_module(module), name))
    except (ImportError, AttributeError):  # that parser is not installed in this build
        return None


def _xml_root(text: str) -> str | None:
    match = re.search(r"<([A-Za-z_][\w.-]*)[\s>/]", re.sub(r"<[?!][^>]*>", "", text))
    return match.group(1) if match else None


def recognise(text: str) -> Kind | None:
    """The kind of one capture, or None when nothing here can read it."""
    body = "\n".join(
        line for line in strip_ansi(text).splitlines() if not line.startswith("# source:")
    )
    stripped = body.lstrip()
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
    if looks_like_nccl_tests(body):
        return "nccl-tests"
    for kind, module, name in _NETWORK_SNIFFERS:
        sniff = _sniffer(module, name)
        if sniff is not None and sniff(text):
            return kind
    return None


def split_transcript(text: str) -> list[Segment]:
    """Cut at shell prompts naming a known command; no prompt (or one) gives the whole text."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if _PROMPT.match(line)]
    if len(starts) < 2:
        return [Segment(1, text)]
    segments: list[Segment] = []
    if any(line.strip() and not line.startswith("#") for line in lines[: starts[0]]):
        segments.append(Segment(1, "\n".join(lines[: starts[0]])))
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        segments.append(Segment(start + 2, "\n".join(lines[start + 1 : end])))
    return [s for s in segments if s.text.strip()]
