"""Assemble one node's `Topology` from whatever captures there are.

Each path is a bundle directory written by `gather.sh` (a MANIFEST names each file and the exit
status of the command behind it) or a single capture file of any kind `kinds.recognise` knows.
Every capture is parsed on its own (through the one registry, `kinds.KINDS`) into a partial
Topology (or a NIC list, a GID table...); `assemble` then lays them over each other:

- the topo matrix gives the structure (GPUs, links, GPU/NIC distances); the NCCL XML stands in
  when there is no matrix, and replaces a `-mp` matrix's links (it shows NVLink);
- `--query-gpu`, `-q`, `-q -x` give models, memory, bus ids and the NVSwitch fabric;
- `ibv_devinfo`, `ibstat`, GID tables, `ibdev2netdev`/`rdma link` give NIC details and states;
  an NCCL log's `NET/IB : Using` line names devices NCCL used;
- `ip -j addr/link` give interfaces and MTU.

Evidence, not absence: `Topology.rdma_devices_listed` is False only when an RDMA tool ran and
listed nothing; a capture that simply has no RDMA output leaves it None. Captures of one node
only: prompts (`[user@host ~]$`), `hostname.txt` and single-host NCCL logs name their host, and
captures of different hosts are reported (refused with `strict`).

Where two captures disagree on a value the first one read wins and a note says so: the user
sees the conflict instead of a silently chosen answer. Reading files happens here only in
`detect_paths`, through `toolkit.topology.reading` (every file bounded, and all of them together;
no link followed inside a bundle); `assemble` is pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolkit.errors import ParseError
from toolkit.topology.kinds import (
    BUNDLE_FILES,
    KINDS,
    MANIFEST_MAGIC,
    Kind,
    also_nccl_log,
    lists_every_device,
    parser_for,
    recognise,
    split_transcript,
)
from toolkit.topology.model import Gpu, Interface, Nic, Topology, natural_key
from toolkit.topology.nvsmi_topo import numa_off_note
from toolkit.topology.rails import compute_rails, rails_near
from toolkit.topology.rdma import UNNAMED, looks_like_gid_lines, looks_like_show_gids, roce_v2_ipv4
from toolkit.topology.rdma_kinds import kinds_note
from toolkit.topology.reading import Reads, folder_files, read_capture_file, regular_or_absent
from toolkit.topology.text import cut, prompt_hosts, same_host, shown

__all__ = ["BUNDLE_FILES", "Capture", "Manifest", "Parts", "assemble", "detect_paths", "parse_manifest"]

SYSFS_GIDS_DIR = "sys-class-infiniband"
MANIFEST = "MANIFEST"
# Kinds whose parser takes a `notes` list for what it found cut or left out.
_TAKES_NOTES = frozenset({"ibv_devinfo", "ibstat", "show_gids", "gid-lines", "ibdev2netdev", "rdma-link"})
# How NCCL prints a device's link layer -> the ibverbs name.
_NCCL_LINK_LAYERS: dict[str, Literal["Ethernet", "InfiniBand"]] = {"RoCE": "Ethernet", "IB": "InfiniBand"}


@dataclass(frozen=True)
class Capture:
    source: str
    text: str
    kind: Kind | None = None  # known in advance (bundle file); else recognised from the text
    command: str | None = None  # the command that printed it, where known (MANIFEST)


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
            raise ParseError(f"cannot read manifest line {shown(line)}", source=source, line=number)
        manifest.meta[key.strip()] = value.strip()
    return manifest


# --- one capture -> partial results ----------------------------------------------------------


@dataclass
class Parts:
    """Everything the captures said, before merging."""

    topologies: list[Topology] = field(default_factory=list)  # GPU side, in reading order
    nic_lists: list[list[Nic]] = field(default_factory=list)
    gids: list[Any] = field(default_factory=list)  # rdma.GidEntry
    # ibdev2netdev / rdma link: hca -> (netdev, state), with the seen_by word of that listing
    netdevs: list[tuple[dict[str, tuple[str, str]], str]] = field(default_factory=list)
    interfaces: list[list[Interface]] = field(default_factory=list)
    nccl_versions: list[str] = field(default_factory=list)
    nccl_logs: list[Any] = field(default_factory=list)  # nccl_log.NcclLogSummary
    notes: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    # (host, where it was seen): prompts, hostname.txt, single-host NCCL logs
    hosts: list[tuple[str, str]] = field(default_factory=list)
    # (what an RDMA listing said, how many devices it listed): 0 is "ran and listed nothing"
    rdma_listings: list[tuple[str, int]] = field(default_factory=list)


def _seen_word(kind: Kind, command: str | None) -> str:
    """How a NIC list names its source in `Nic.seen_by`: the kind for a full listing, the command
    line for one that speaks for one device (`ibv_devinfo -d mlx5_0`)."""
    if lists_every_device(kind, command) or not KINDS[kind].lists_devices:
        return kind
    return command or f"{kind} (one device)"


def read_capture(kind: Kind, text: str, source: str, parts: Parts, command: str | None = None) -> None:
    """Parse one capture of a known kind into `parts`."""
    info = KINDS[kind]
    if info.yields == "nothing":
        if kind == "nccl-tests":
            parts.notes.append(f"{source}: nccl-tests results say nothing about topology; skipped")
        return
    parser = parser_for(kind)
    local_notes: list[str] = []
    result = parser(text, source, local_notes) if kind in _TAKES_NOTES else parser(text, source)
    parts.notes.extend(local_notes)
    seen = _seen_word(kind, command)
    if seen == kind and info.lists_devices and text and not text.endswith(("\n", "\r")):
        local_notes.append(f"{source}: the {kind} output ends mid-line (no newline at its end): it may be cut, "
                           "so it is not taken as a list of every RDMA device")
        parts.notes.append(local_notes[-1])
    if local_notes and seen == kind and info.lists_devices:
        seen = f"{kind} (cut)"  # a listing the capture stops in does not list every device
    full = seen == kind and info.lists_devices
    if info.yields == "gpu":
        parts.topologies.append(result)
    elif info.yields == "nics":
        nics = [n.model_copy(update={"seen_by": [*n.seen_by, seen]}) for n in result]
        parts.nic_lists.append(nics)
        names = sorted({n.name for n in nics})
        if full:
            parts.rdma_listings.append((
                f"{kind} ran and listed {len(names)} device(s) ({source})" if names
                else f"{kind} ran and listed no device ({source}: No IB devices found)", len(names)))
        elif names:
            parts.rdma_listings.append((f"{seen} shows {', '.join(names)} ({source})", len(names)))
    elif info.yields == "gids":
        parts.gids.extend(result)
        _devices_from_gids(result, seen, source, parts)
    elif info.yields == "netdevs":
        parts.netdevs.append((result, seen))
        parts.rdma_listings.append((f"{seen} lists {len(result)} port(s) ({source})", len(result)))
    elif info.yields == "interfaces":
        parts.interfaces.append(result)
    elif info.yields == "nccl-log":
        _read_nccl_log(result, source, parts)
    parts.sources.append(source)


def _devices_from_gids(gids: list[Any], seen: str, source: str, parts: Parts) -> None:
    """A GID table is evidence that its devices exist (a GID is only there for a port the driver
    made), not of their ports' state: the devices are listed, their state stays unknown."""
    ports: dict[tuple[str, int], str | None] = {}
    for gid in gids:
        if gid.device and gid.device != UNNAMED:
            netdev = ports.get((gid.device, gid.port))
            ports[(gid.device, gid.port)] = netdev or gid.netdev
    if not ports:
        return
    parts.nic_lists.append([Nic(name=device, port=port, netdev=netdev, seen_by=[seen])
                            for (device, port), netdev in ports.items()])
    names = sorted({device for device, _ in ports}, key=natural_key)
    parts.rdma_listings.append((f"{seen} shows {', '.join(names)} ({source})", len(names)))
    parts.notes.append(f"{source}: a GID table shows {', '.join(names)}: the device(s) exist, but a GID table does "
                       "not say whether a port is up (state unknown; ibv_devinfo or rdma link shows it)")
    for device, port in ports:
        own = [g for g in gids if (g.device, g.port) == (device, port)]
        if roce_v2_ipv4(own) is None:
            why = ("its GIDs carry no RoCE version" if all(g.type is None for g in own) else
                   "only link-local or IPv6 GIDs" if not any(g.ipv4 for g in own) else "no RoCE v2 one carries IPv4")
            parts.notes.append(f"{source}: {device} port {port}: no RoCE v2 GID with an IPv4 address in the table "
                               f"({why}): its NCCL_IB_GID_INDEX is unknown")


def _read_nccl_log(summary: Any, source: str, parts: Parts) -> None:
    """Version, hosts, and the RDMA devices NCCL used (read defensively: the summary evolves)."""
    parts.nccl_logs.append(summary)
    version = getattr(summary, "nccl_version", None)
    if version:
        parts.nccl_versions.append(version)
    hosts = [h for h in getattr(summary, "hosts", []) or [] if isinstance(h, str) and h]
    if len(hosts) == 1:
        parts.hosts.append((hosts[0], source))
    elif len(hosts) > 1:
        parts.notes.append(f"{source}: the NCCL log comes from {len(hosts)} hosts ({', '.join(hosts[:4])}"
                           f"{', ...' if len(hosts) > 4 else ''}): what NCCL used is read from all of them")
    nics = [nic for nic in _log_devices(summary) if nic is not None]
    if nics:
        parts.nic_lists.append(nics)
        names = sorted({n.name for n in nics}, key=str)
        parts.rdma_listings.append((f"NCCL log: NET/IB used {', '.join(names)} ({source})", len(names)))
    ib_used = [c for c in getattr(summary, "connections", []) or []
               if getattr(c, "kind", None) == "NET" and getattr(c, "net", None) not in (None, "Socket")]
    if ib_used and not nics:
        gdr = sum(1 for c in ib_used if getattr(c, "gdr", False))
        parts.rdma_listings.append((
            f"NCCL log: {len(ib_used)} channel connection(s) over NET/{getattr(ib_used[0], 'net', 'IB')}"
            f"{f', {gdr} with GPUDirect RDMA' if gdr else ''} ({source})", 1))
    no_device = getattr(summary, "ib_no_device", []) or []
    if no_device:
        parts.notes.append(
            f"{source}:{no_device[0]}: the NCCL log says `NET/IB : No device found`: NCCL found no usable RDMA "
            "device in that run; not taken as proof the node has none (a container without /dev/infiniband, or an "
            "NCCL_IB_HCA that matches nothing, prints the same)"
        )


def _log_devices(summary: Any) -> list[Nic | None]:
    """`NET/IB : Using [0]mlx5_bond_6:1/RoCE ...` entries as NICs NCCL used (so: active ports)."""
    raw = getattr(summary, "ib_devices", None) or []
    items = list(raw.values()) if isinstance(raw, dict) else list(raw)
    nics: list[Nic | None] = []
    for item in items:
        name = item if isinstance(item, str) else getattr(item, "name", None)
        if not isinstance(name, str) or not name:
            continue
        port = None if isinstance(item, str) else getattr(item, "port", None)
        layer = None if isinstance(item, str) else getattr(item, "link_layer", None)
        nics.append(Nic(name=name, port=port if isinstance(port, int) else None,
                        link_layer=_NCCL_LINK_LAYERS.get(str(layer)) if layer else None,
                        seen_by=["nccl-log"]))
    return nics


def _empty_listing(command: str | None, source: str, parts: Parts) -> None:
    """A transcript's `rdma link` / `ibdev2netdev` with no output before the next prompt."""
    if command is None:
        return
    words = command.split()
    kind: Kind | None = "ibdev2netdev" if words[0] == "ibdev2netdev" else (
        "rdma-link" if words[:2] == ["rdma", "link"] else None)
    if kind is not None and lists_every_device(kind, command):
        parts.rdma_listings.append((f"`{command}` ran and printed nothing ({source})", 0))


def _check_command(kind: Kind, command: str | None, where: str, parts: Parts) -> None:
    """A transcript whose output does not match the command before it was pasted out of order."""
    info = KINDS[kind]
    tool = "ip" if kind.startswith("ip-") else (info.command[0] if info.command else None)
    if command is None or tool is None:
        return
    used = command.split()[0]
    if used not in (tool, "cat"):
        parts.notes.append(f"{where}: the output after `{cut(command, 80)}` reads as {kind} output, not {used}'s "
                           "(a damaged or mixed paste?): read as what it is")


def read_text_capture(capture: Capture, parts: Parts) -> None:
    """A capture whose kind may be unknown: a transcript is cut per command and recognised."""
    for host, line in prompt_hosts(capture.text):
        parts.hosts.append((host, f"{capture.source}:{line}"))
    if capture.kind is not None:
        read_capture(capture.kind, capture.text, capture.source, parts, capture.command)
        return
    segments = split_transcript(capture.text)
    recognised = False
    for segment in segments:
        if not segment.text.strip():
            _empty_listing(segment.command, f"{capture.source}:{segment.first_line - 1}", parts)
            continue
        kind = recognise(segment.text)
        if kind is None:
            if len(segments) > 1:
                parts.notes.append(
                    f"{capture.source}:{segment.first_line}: output not recognised; skipped"
                )
            continue
        recognised = True
        _check_command(kind, segment.command, f"{capture.source}:{segment.first_line - 1}", parts)
        text = segment.padded() if len(segments) > 1 else segment.text
        read_capture(kind, text, capture.source, parts, segment.command)
        if also_nccl_log(kind, segment.text):
            read_capture("nccl-log", text, capture.source, parts)
        if kind == "nccl-log" and looks_like_show_gids(segment.text):  # a GID table pasted with the log
            read_capture("show_gids", text, capture.source, parts)
        elif kind == "nccl-log" and looks_like_gid_lines(segment.text):
            read_capture("gid-lines", text, capture.source, parts)
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
        if key == "seen_by":
            into[key] = list(dict.fromkeys([*(current or []), *value]))
        elif current is None or current == []:
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
        key = _nic_key(nic)
        if nic.port is None:  # a device without a port number (matrix, XML, a cut record)
            key = next((k for k in merged if k[0] == nic.name), key)
        fields = merged.setdefault(key, {"name": nic.name, "port": nic.port})
        if fields.get("port") is None:
            fields["port"] = nic.port
        _fill(fields, nic.model_dump(exclude={"seen_by"}) | {"seen_by": nic.seen_by}, nic.name, notes)
    for mapping, seen in parts.netdevs:
        for label, (netdev, state) in mapping.items():
            name, _, port = label.partition("/")
            fields = merged.setdefault((name, int(port or 1)), {"name": name})
            if netdev and fields.get("netdev") is None:
                fields["netdev"] = netdev
            if fields.get("state") is None:
                fields["state"] = state
            fields["seen_by"] = list(dict.fromkeys([*fields.get("seen_by", []), seen]))
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


def _hosts(parts: Parts, meta: dict[str, str]) -> list[tuple[str, list[str]]]:
    """Distinct hosts the captures name, each with where they were seen."""
    seen: list[tuple[str, list[str]]] = []
    named = ([(meta["hostname"], "hostname.txt")] if meta.get("hostname") else []) + parts.hosts
    for host, where in named:
        for known, places in seen:
            if same_host(known, host):
                places.append(where)
                break
        else:
            seen.append((host, [where]))
    # hostname.txt first (the node says who it is), then the host most captures name.
    return sorted(seen, key=lambda item: ("hostname.txt" not in item[1], -len(item[1])))


def host_conflict(hosts: list[tuple[str, list[str]]]) -> str | None:
    if len(hosts) < 2:
        return None
    listed = "; ".join(f"{host} ({', '.join(places[:3])}{', ...' if len(places) > 3 else ''})"
                       for host, places in hosts)
    return (f"the captures come from {len(hosts)} different hosts: {listed}. One node's topology must come "
            "from that node only: values from the other host (addresses, states, devices) would be merged into it")


def _rdma_presence(parts: Parts, nics: list[Nic], notes: list[str]) -> tuple[bool | None, list[str]]:
    """True: a capture lists an RDMA device; False: only listings of none; None: no listing."""
    evidence = [text for text, _ in parts.rdma_listings]
    in_xml = sorted({n.name for n in nics if any(k.startswith("nccl-topo-xml") for k in n.seen_by)})
    if in_xml:
        evidence.append(f"the NCCL topology XML lists {', '.join(in_xml)}")
    if in_xml or any(count > 0 for _, count in parts.rdma_listings):
        if any(count == 0 for _, count in parts.rdma_listings):
            notes.append("one capture lists no RDMA device while another shows some: " + "; ".join(evidence))
        return True, evidence
    if parts.rdma_listings:
        return False, evidence
    return None, evidence


def _where(place: str) -> str:
    """`file.txt:3` -> `file.txt`; `hostname.txt` stays."""
    head, sep, tail = place.rpartition(":")
    return head if sep and tail.isdigit() else place


def assemble(parts: Parts, manifest: Manifest | None = None, meta: dict[str, str] | None = None,
             *, strict: bool = False) -> Topology:
    """Merge everything read into one Topology. Pure: no files, no commands.

    `strict`: captures naming different hosts are refused (ParseError) instead of noted.
    """
    notes = list(parts.notes)
    meta = meta or {}
    hosts = _hosts(parts, meta)
    conflict = host_conflict(hosts)
    if conflict and strict:
        raise ParseError(conflict, source=_where(hosts[1][1][0]),
                         hint="give detect the captures of one host (without --strict this is a note)")
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
    topo.nccl_log = parts.nccl_logs[0] if parts.nccl_logs else None
    topo.rdma_devices_listed, topo.rdma_evidence = _rdma_presence(parts, topo.nics, notes)
    for t in parts.topologies:
        notes.extend(n for n in t.notes if not n.startswith("numa=off") and n not in notes)
    if conflict:
        notes.append(conflict)
    topo.hostname = meta.get("hostname") or (hosts[0][0] if len(hosts) == 1 else None)
    if topo.nccl_version is None and meta.get("nccl_version"):
        topo.nccl_version = meta["nccl_version"]
    notes.extend(_node_notes(topo, manifest, meta, bool(parts.topologies)))
    topo.notes = notes
    return topo


# Manifest entries that are not a command: what their absence means.
_MISSING_NOT_A_TOOL = {
    SYSFS_GIDS_DIR: "no /sys/class/infiniband on the node (no RDMA driver loaded, or a container that does not "
                    "show it): no GID table",
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
        notes.append("no GPU found (no nvidia-smi output with a GPU in it)")
    elif topo.gpu_nic_distance:
        serving = {rail.nic for rail in topo.rails}
        others = [n for n in dict.fromkeys(k for d in topo.gpu_nic_distance.values() for k in d)
                  if n not in serving]
        if others:
            notes.append(
                ("not rails (no GPU on their PCIe switch; front-end, storage or management): "
                 if rails_near(topo.rails) else
                 "not rails (no GPU has them among its nearest NICs): ") + ", ".join(others)
            )
    notes.extend(kinds_note(topo.nics))
    if topo.rdma_devices_listed is None:
        notes.append("RDMA devices not known: no capture lists them or says there are none (ibv_devinfo, ibstat, "
                     "ibdev2netdev, rdma link, an NCCL topology XML, an NCCL log using NET/IB)")
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


def _read(path: Path, reads: Reads, parts: Parts | None = None, *, follow: bool = False) -> str:
    """A capture's text (bounded: `reading`); `follow` only for a path the user named."""
    text, encoding = read_capture_file(path, reads, follow=follow)
    if encoding is not None and parts is not None:
        parts.notes.append(f"{path}: {encoding}")
    return text


def nccl_version_from(text: str) -> str | None:
    """`libnccl.so.2.21.5`, `libnccl2 2.21.5-1+cuda12.4` or NCCL_MAJOR/MINOR/PATCH defines."""
    # At most 64 characters between `nccl` and the version: an open `\S*?` rescans a long word from
    # every `nccl` in it (quadratic).
    match = re.search(r"nccl\S{0,64}?[\s.](\d+\.\d+\.\d+)", text, re.IGNORECASE)
    if match:
        return match.group(1)
    parts = [re.search(rf"#define NCCL_{k}\s+(\d+)", text) for k in ("MAJOR", "MINOR", "PATCH")]
    if all(parts):
        return ".".join(m.group(1) for m in parts if m)
    return None


def _bundle_listing_evidence(directory: Path, name: str, kind: Kind, manifest: Manifest, text: str,
                             parts: Parts, reads: Reads) -> bool:
    """An RDMA listing command that ran and listed nothing; True when this file said so."""
    status = manifest.status.get(name)
    command = manifest.commands.get(name, name)
    if status in (None, "missing") or not lists_every_device(kind, command):
        return False
    stderr_path = directory / f"{name}.stderr"
    stderr = _read(stderr_path, reads) if regular_or_absent(stderr_path) else ""
    if kind == "ibv_devinfo" and re.search(r"^No IB devices found", stderr, re.M):
        parts.rdma_listings.append((f"`{command}` ran and found no device ({stderr_path}: No IB devices found)", 0))
        return True
    if kind in ("rdma-link", "ibdev2netdev") and status == "0" and not text.strip() and not stderr.strip():
        parts.rdma_listings.append((f"`{command}` ran (exit 0) and listed nothing ({directory / name})", 0))
        return True
    return False


def read_bundle(directory: Path, parts: Parts, reads: Reads | None = None) -> tuple[Manifest | None, dict[str, str]]:
    """A gather bundle (MANIFEST first) or a folder of pasted captures; no link inside is followed."""
    reads = reads or Reads()
    manifest_path = directory / MANIFEST
    manifest = parse_manifest(_read(manifest_path, reads), str(manifest_path)) \
        if regular_or_absent(manifest_path) else None
    meta: dict[str, str] = {}
    for name, key in (("hostname.txt", "hostname"), ("proc-cmdline.txt", "cmdline"),
                      ("nccl-version.txt", "nccl_version")):
        path = directory / name
        if regular_or_absent(path):
            text = _read(path, reads).strip()
            meta[key] = (nccl_version_from(text) or "") if key == "nccl_version" else text
    if manifest is None:  # a folder of pasted captures: recognise each one
        for path in folder_files(directory):
            read_text_capture(Capture(str(path), _read(path, reads, parts)), parts)
        return None, meta
    for name, kind in BUNDLE_FILES.items():
        path = directory / name
        if not regular_or_absent(path):
            continue
        text = _read(path, reads, parts)
        status = manifest.status.get(name, "0")
        if _bundle_listing_evidence(directory, name, kind, manifest, text, parts, reads) or not text.strip():
            continue
        command = manifest.commands.get(name)
        if recognise(text) == kind:
            read_capture(kind, text, str(path), parts, command)
            continue
        # A lab stand-in replays a whole pasted transcript (`ip -br a` then `ibdev2netdev`): read
        # the part that is this command's output.
        segments = [s for s in split_transcript(text) if s.text.strip() and recognise(s.text) == kind]
        if segments:
            for segment in segments:
                read_capture(kind, segment.padded(), str(path), parts, segment.command or command)
            continue
        # A failed or empty-handed command prints a message, not its table ("No devices were
        # found", "NVIDIA-SMI has failed ..."): keep it as a note, do not parse it.
        first = text.strip().splitlines()[0]
        parts.notes.append(f"{path}: {manifest.commands.get(name, name)} (exit {status}): {cut(first, 120)}")
    sysfs = directory / SYSFS_GIDS_DIR
    if sysfs.is_dir() and any(sysfs.iterdir()):
        from toolkit.topology.rdma import parse_sysfs_gids

        parts.gids.extend(parse_sysfs_gids(sysfs))
        parts.sources.append(str(sysfs))
    elif manifest.status.get(SYSFS_GIDS_DIR) == "0" and re.search(
            r"\(0\)$", manifest.commands.get(SYSFS_GIDS_DIR, "")):
        parts.rdma_listings.append((f"/sys/class/infiniband has no port with a GID ({manifest_path})", 0))
    return manifest, meta


def detect_paths(paths: list[Path], *, strict: bool = False) -> Topology:
    """The node's Topology from bundle directories and single capture files.

    `strict`: refuse (ParseError, exit 5) captures that name different hosts instead of noting it.
    """
    parts = Parts()
    reads = Reads()
    manifest: Manifest | None = None
    meta: dict[str, str] = {}
    for path in paths:
        if path.is_dir():
            bundle_manifest, bundle_meta = read_bundle(path, parts, reads)
            manifest = manifest or bundle_manifest
            meta = {**bundle_meta, **meta}
        elif path.exists():  # read_bounded refuses what is not a regular file, before it can block
            read_text_capture(Capture(str(path), _read(path, reads, parts, follow=True)), parts)
        else:
            raise ParseError("no such file or directory", source=str(path))
    return assemble(parts, manifest, meta, strict=strict)
