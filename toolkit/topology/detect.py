"""Assemble one node's `Topology` from whatever captures there are.

Each path is a bundle directory written by `gather.sh` (a MANIFEST names each file and the exit
status of the command behind it) or a single capture file of any kind `kinds.recognise` knows.
Every capture is parsed on its own into a partial Topology (or a NIC list, a GID table...);
`merge` then lays them over each other:

- the topo matrix gives the structure (GPUs, links, GPU/NIC distances); the NCCL XML stands in
  when there is no matrix, and replaces a `-mp` matrix's links (it shows NVLink);
- `--query-gpu`, `-q`, `-q -x` give models, memory, bus ids and the NVSwitch fabric;
- `ibv_devinfo`, `ibstat`, GID tables, `ibdev2netdev`/`rdma link` give NIC details;
- `ip -j addr/link` give interfaces and MTU.

Where two captures disagree on a value the first one read wins and a note says so: the user
sees the conflict instead of a silently chosen answer. Reading files happens here only in
`detect_paths`; `assemble` is pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkit.errors import ParseError
from toolkit.topology.kinds import MANIFEST_MAGIC, Kind, recognise, split_transcript
from toolkit.topology.model import Gpu, Interface, Nic, Topology, compute_rails
from toolkit.topology.nvsmi_topo import numa_off_note

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
SYSFS_GIDS_DIR = "sys-class-infiniband"
MANIFEST = "MANIFEST"


@dataclass(frozen=True)
class Capture:
    source: str
    text: str
    kind: Kind | None = None  # known in advance (bundle file); else recognised from the text


@dataclass
class Manifest:
    """What gather.sh recorded: per file the command's exit status or "missing"."""

    status: dict[str, str] = field(default_factory=dict)  # file -> "0", "127", "missing"
    commands: dict[str, str] = field(default_factory=dict)  # file -> command line
    meta: dict[str, str] = field(default_factory=dict)  # "host", "replayed", "date", ...


def parse_manifest(text: str, source: str = MANIFEST) -> Manifest:
    """`key: value` header lines, then `file<TAB>status<TAB>command` lines."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != MANIFEST_MAGIC:
        raise ParseError(f"first line is not {MANIFEST_MAGIC!r}", source=source, line=1)
    manifest = Manifest()
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip() or line.startswith("#"):
            continue
        if "\t" in line:
            parts = line.split("\t", 2)
            if len(parts) != 3:
                raise ParseError("expected file<TAB>status<TAB>command", source=source, line=number)
            name, status, command = parts
            manifest.status[name] = status.strip()
            manifest.commands[name] = command.strip()
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise ParseError(f"cannot read manifest line {line!r}", source=source, line=number)
        manifest.meta[key.strip()] = value.strip()
    return manifest


# --- one capture -> partial results ----------------------------------------------------------


@dataclass
class Parts:
    """Everything the captures said, before merging."""

    topologies: list[Topology] = field(default_factory=list)  # GPU side, in reading order
    nic_lists: list[list[Nic]] = field(default_factory=list)
    gids: list[Any] = field(default_factory=list)  # rdma.GidEntry
    netdevs: list[dict[str, tuple[str, str]]] = field(default_factory=list)
    interfaces: list[list[Interface]] = field(default_factory=list)
    nccl_versions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)


def _gpu_parser(kind: Kind) -> Callable[[str, str], Topology] | None:
    # Imported here: a bundle with only RDMA files need not load the XML machinery, and the
    # other way round.
    if kind == "topo-matrix":
        from toolkit.topology.nvsmi_topo import parse_topo_matrix
        return parse_topo_matrix
    if kind == "query-gpu-csv":
        from toolkit.topology.nvsmi_query import parse_query_gpu_csv
        return parse_query_gpu_csv
    if kind == "nvsmi-q":
        from toolkit.topology.nvsmi_query import parse_nvsmi_q
        return parse_nvsmi_q
    if kind == "nvsmi-q-xml":
        from toolkit.topology.nvsmi_query import parse_nvsmi_q_xml
        return parse_nvsmi_q_xml
    if kind == "nccl-topo-xml":
        from toolkit.topology.nccl_xml import parse_nccl_topo_xml
        return parse_nccl_topo_xml
    return None


def read_capture(kind: Kind, text: str, source: str, parts: Parts) -> None:
    """Parse one capture of a known kind into `parts`."""
    gpu = _gpu_parser(kind)
    if gpu is not None:
        parts.topologies.append(gpu(text, source))
    elif kind in ("ibv_devinfo", "ibstat", "show_gids", "ibdev2netdev", "rdma-link"):
        from toolkit.topology import rdma

        if kind == "ibv_devinfo":
            parts.nic_lists.append(rdma.parse_ibv_devinfo(text, source))
        elif kind == "ibstat":
            parts.nic_lists.append(rdma.parse_ibstat(text, source))
        elif kind == "show_gids":
            parts.gids.extend(rdma.parse_show_gids(text, source))
        elif kind == "ibdev2netdev":
            parts.netdevs.append(rdma.parse_ibdev2netdev(text, source))
        else:
            parts.netdevs.append(rdma.parse_rdma_link(text, source))
    elif kind in ("ip-addr-json", "ip-link-json", "ip-brief"):
        from toolkit.topology import iproute

        parsers = {"ip-addr-json": iproute.parse_ip_addr_json, "ip-link-json": iproute.parse_ip_link_json,
                   "ip-brief": iproute.parse_ip_brief}
        parts.interfaces.append(parsers[kind](text, source))
    elif kind == "nccl-log":
        from toolkit.topology.nccl_log import parse_nccl_log

        version = parse_nccl_log(text, source).nccl_version
        if version:
            parts.nccl_versions.append(version)
    elif kind == "nccl-tests":
        parts.notes.append(f"{source}: nccl-tests results say nothing about topology; skipped")
        return
    elif kind == "manifest":
        return
    parts.sources.append(source)


def read_text_capture(capture: Capture, parts: Parts) -> None:
    """A capture whose kind may be unknown: a transcript is cut per command and recognised."""
    if capture.kind is not None:
        read_capture(capture.kind, capture.text, capture.source, parts)
        return
    segments = split_transcript(capture.text)
    recognised = False
    for segment in segments:
        kind = recognise(segment.text)
        if kind is None:
            if len(segments) > 1:
                parts.notes.append(
                    f"{capture.source}:{segment.first_line}: output not recognised; skipped"
                )
            continue
        recognised = True
        text = segment.padded() if len(segments) > 1 else segment.text
        read_capture(kind, text, capture.source, parts)
    if not recognised:
        raise ParseError(
            "not a capture gpuctl can read (expected nvidia-smi topo -m / --query-gpu / -q, "
            "an NCCL topology XML, ibv_devinfo, ibstat, show_gids, ibdev2netdev, rdma link, "
            "ip -j addr/link or an NCCL log)",
            source=capture.source,
        )


# --- merging ---------------------------------------------------------------------------------


def _fill(into: dict[str, Any], other: dict[str, Any], what: str, notes: list[str]) -> None:
    for key, value in other.items():
        if value is None or value == [] or key in ("index", "name", "port"):
            continue
        current = into.get(key)
        if current is None or current == []:
            into[key] = value
        elif current != value and not isinstance(value, list):
            notes.append(f"{what} {key}: {current!r} kept, another capture says {value!r}")


def _merge_gpus(topologies: list[Topology], notes: list[str]) -> list[Gpu]:
    merged: dict[int, dict[str, Any]] = {}
    for topo in topologies:
        for gpu in topo.gpus:
            fields = merged.setdefault(gpu.index, {"index": gpu.index})
            _fill(fields, gpu.model_dump(), f"GPU{gpu.index}", notes)
    return [Gpu(**merged[i]) for i in sorted(merged)]


def _nic_key(nic: Nic) -> tuple[str, int]:
    return nic.name, nic.port or 1


def _merge_nics(parts: Parts, structure: list[Nic], notes: list[str]) -> list[Nic]:
    merged: dict[tuple[str, int], dict[str, Any]] = {}
    # RDMA tools first: they are the authority on a NIC; the matrix/XML only add what they lack.
    for nic in [n for nics in parts.nic_lists for n in nics] + structure:
        fields = merged.setdefault(_nic_key(nic), {"name": nic.name, "port": nic.port})
        if fields.get("port") is None:
            fields["port"] = nic.port
        _fill(fields, nic.model_dump(), nic.name, notes)
    for mapping in parts.netdevs:
        for key, (netdev, state) in mapping.items():
            name, _, port = key.partition("/")
            fields = merged.setdefault((name, int(port or 1)), {"name": name})
            if netdev and fields.get("netdev") is None:
                fields["netdev"] = netdev
            if fields.get("state") is None:
                fields["state"] = state
    nics = [Nic(**merged[key]) for key in merged]
    if parts.gids:
        from toolkit.topology.rdma import merge_gids

        nics = merge_gids(nics, parts.gids)
    return nics


def _merge_interfaces(parts: Parts, notes: list[str]) -> list[Interface]:
    merged: dict[str, dict[str, Any]] = {}
    for interfaces in parts.interfaces:
        for interface in interfaces:
            fields = merged.setdefault(interface.name, {"name": interface.name})
            _fill(fields, interface.model_dump(), interface.name, notes)
    return [Interface(**fields) for fields in merged.values()]


def _structure(topologies: list[Topology]) -> Topology | None:
    """The capture whose links and distances describe the node: a full matrix, else the XML."""
    with_links = [t for t in topologies if t.gpu_links or t.gpu_nic_distance]
    full = [t for t in with_links if not t.pcie_only_view]
    candidates = full or with_links
    return candidates[0] if candidates else None


def assemble(parts: Parts, manifest: Manifest | None = None, meta: dict[str, str] | None = None
             ) -> Topology:
    """Merge everything read into one Topology. Pure: no files, no commands."""
    notes = list(parts.notes)
    structure = _structure(parts.topologies)
    topo = Topology(sources=list(dict.fromkeys(parts.sources)))
    topo.gpus = _merge_gpus(parts.topologies, notes)
    if structure is not None:
        topo.gpu_links = structure.gpu_links
        topo.pcie_only_view = structure.pcie_only_view
        topo.gpu_nic_distance = structure.gpu_nic_distance
    topo.nvswitch = True if any(t.nvswitch for t in parts.topologies) else None
    for attr in ("driver_version", "cuda_version"):
        values = [getattr(t, attr) for t in parts.topologies if getattr(t, attr)]
        setattr(topo, attr, values[0] if values else None)
    topo.nccl_version = parts.nccl_versions[0] if parts.nccl_versions else None
    structural_nics = [n for t in parts.topologies for n in t.nics]
    topo.nics = _merge_nics(parts, structural_nics, notes)
    topo.interfaces = _merge_interfaces(parts, notes)
    topo.rails = compute_rails(topo.gpu_nic_distance)
    for t in parts.topologies:
        notes.extend(n for n in t.notes if not n.startswith("numa=off") and n not in notes)
    meta = meta or {}
    topo.hostname = meta.get("hostname") or None
    if topo.nccl_version is None and meta.get("nccl_version"):
        topo.nccl_version = meta["nccl_version"]
    notes.extend(_node_notes(topo, manifest, meta, bool(parts.topologies)))
    topo.notes = notes
    return topo


# Manifest entries that are not a command: what their absence means.
_MISSING_NOT_A_TOOL = {
    SYSFS_GIDS_DIR: "no /sys/class/infiniband on the node: no RDMA device",
    "nccl-version.txt": "no NCCL library found on the node (ldconfig, package manager, nccl.h)",
    "proc-cmdline.txt": "/proc/cmdline not readable",
    "numa-nodes.txt": "no /sys/devices/system/node: NUMA layout unknown",
}


def _node_notes(topo: Topology, manifest: Manifest | None, meta: dict[str, str],
                gpu_side_read: bool) -> list[str]:
    notes: list[str] = []
    cmdline = meta.get("cmdline", "")
    numa = numa_off_note(topo.gpus)
    if numa and re.search(r"(^|\s)numa=off(\s|$)", cmdline):
        notes.append("numa=off: every GPU reports NUMA 0: the kernel command line has numa=off")
    elif numa:
        notes.append(numa)
    if not topo.gpus and manifest is None and not gpu_side_read:
        # Only RDMA/ip captures were given: the GPUs were not looked at, not found absent.
        notes.append("no GPU capture among the inputs (nvidia-smi, NCCL XML): GPUs unknown")
    elif not topo.gpus:
        notes.append("no GPU found: tuning for sockets (no nvidia-smi output with a GPU in it)")
    elif topo.gpu_nic_distance:
        serving = {rail.nic for rail in topo.rails}
        others = [n for n in dict.fromkeys(k for d in topo.gpu_nic_distance.values() for k in d)
                  if n not in serving]
        if others:
            notes.append(
                f"not rails (no GPU on their PCIe switch; front-end, storage or management): "
                f"{', '.join(others)}"
            )
    if manifest is not None:
        replayed = manifest.meta.get("replayed")
        if replayed:
            notes.append(f"replayed capture: {replayed}")
        missing = [f for f, s in manifest.status.items() if s == "missing"]
        tools = sorted({manifest.commands.get(f, f).split()[0] for f in missing
                        if f not in _MISSING_NOT_A_TOOL})
        if tools:
            notes.append(f"not installed on the node: {', '.join(tools)}")
        notes.extend(_MISSING_NOT_A_TOOL[f] for f in missing if f in _MISSING_NOT_A_TOOL)
    return notes


# --- files and bundles -----------------------------------------------------------------------


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise ParseError(f"cannot read: {error.strerror}", source=str(path)) from None


def nccl_version_from(text: str) -> str | None:
    """`libnccl.so.2.21.5`, `libnccl2 2.21.5-1+cuda12.4` or NCCL_MAJOR/MINOR/PATCH defines."""
    match = re.search(r"nccl\S*?[\s.](\d+\.\d+\.\d+)", text, re.IGNORECASE)
    if match:
        return match.group(1)
    parts = [re.search(rf"#define NCCL_{k}\s+(\d+)", text) for k in ("MAJOR", "MINOR", "PATCH")]
    if all(parts):
        return ".".join(m.group(1) for m in parts if m)
    return None


def read_bundle(directory: Path, parts: Parts) -> tuple[Manifest | None, dict[str, str]]:
    manifest_path = directory / MANIFEST
    manifest = parse_manifest(_read(manifest_path), str(manifest_path)) \
        if manifest_path.is_file() else None
    meta: dict[str, str] = {}
    for name, key in (("hostname.txt", "hostname"), ("proc-cmdline.txt", "cmdline"),
                      ("nccl-version.txt", "nccl_version")):
        path = directory / name
        if path.is_file():
            text = _read(path).strip()
            meta[key] = (nccl_version_from(text) or "") if key == "nccl_version" else text
    if manifest is None:  # a folder of pasted captures: recognise each one
        for path in sorted(p for p in directory.iterdir() if p.is_file()):
            read_text_capture(Capture(str(path), _read(path)), parts)
        return None, meta
    for name, kind in BUNDLE_FILES.items():
        path = directory / name
        if not path.is_file():
            continue
        text = _read(path)
        status = manifest.status.get(name, "0")
        if not text.strip():
            continue
        # A failed or empty-handed command prints a message, not its table ("No devices were
        # found", "NVIDIA-SMI has failed ..."): keep it as a note, do not parse it.
        if recognise(text) != kind:
            first = text.strip().splitlines()[0][:120]
            notes_for = f"{path}: {manifest.commands.get(name, name)} (exit {status}): {first}"
            parts.notes.append(notes_for)
            continue
        read_capture(kind, text, str(path), parts)
    sysfs = directory / SYSFS_GIDS_DIR
    if sysfs.is_dir() and any(sysfs.iterdir()):
        from toolkit.topology.rdma import parse_sysfs_gids

        parts.gids.extend(parse_sysfs_gids(sysfs))
        parts.sources.append(str(sysfs))
    return manifest, meta


def detect_paths(paths: list[Path]) -> Topology:
    """The node's Topology from bundle directories and single capture files."""
    parts = Parts()
    manifest: Manifest | None = None
    meta: dict[str, str] = {}
    for path in paths:
        if path.is_dir():
            bundle_manifest, bundle_meta = read_bundle(path, parts)
            manifest = manifest or bundle_manifest
            meta = {**bundle_meta, **meta}
        elif path.is_file():
            read_text_capture(Capture(str(path), _read(path)), parts)
        else:
            raise ParseError("no such file or directory", source=str(path))
    return assemble(parts, manifest, meta)
