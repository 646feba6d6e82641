"""Parse an NCCL topology XML (`NCCL_TOPO_DUMP_FILE` / `NCCL_TOPO_FILE` format) into a `Topology`.

The XML is NCCL's own view of the node: `<cpu>` elements (one per NUMA node) hold a tree of
`<pci>` bridges and devices; a device holds a `<gpu>` (with `<nvlink>` children) or a `<nic>`
(with `<net>` children). From the tree we derive what `nvidia-smi topo -m` would print for each
GPU/NIC pair, so a node whose only capture is the XML still gets rails.

Also home of `parse_xml_safely`, shared with the `nvidia-smi -q -x` parser: captures come from
users' machines, so entity declarations (billion laughs, external entities) are refused.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any
from xml.parsers import expat

from toolkit.errors import ParseError
from toolkit.topology.model import Gpu, GpuLink, Nic, PcieDistance, Topology
from toolkit.topology.rails import compute_rails
from toolkit.topology.text import shown

# PCI class of an NVSwitch as NCCL records it in <nvlink tclass=...>: "bridge, other".
NVSWITCH_CLASS = "0x068000"
# PCI device id -> the name nvidia-smi prints, only for ids a real capture pairs with a name:
# 0x20b2 (shared/fixtures INDEX, SimAI XML), 0x2330 (nvidia-smi -q of an H100 80GB HBM3),
# 0x2335 (query-gpu of an H200). Unknown ids stay None: the XML alone does not name the model.
GPU_MODELS = {
    "0x20b2": "NVIDIA A100-SXM4-80GB",
    "0x2330": "NVIDIA H100 80GB HBM3",
    "0x2335": "NVIDIA H200",
}


LINE_KEY = " line"


def line_of(element: ET.Element) -> int | None:
    """The input line where `element` started (set by `parse_xml_safely`)."""
    value = element.get(LINE_KEY)
    return int(value) if value else None


class _RefusedError(Exception):
    """Raised from inside expat callbacks; turned into a ParseError with the line."""


def _drop_leading_comments(text: str) -> tuple[str, int]:
    """Drop the `# source:`/prompt lines before the document; return it and how many lines went.

    They are dropped, not blanked: `<?xml ...?>` is only legal at the very start of a document.
    """
    lines = text.split("\n")
    skipped = 0
    while skipped < len(lines) and not lines[skipped].lstrip().startswith("<"):
        skipped += 1
    return "\n".join(lines[skipped:]), skipped


# The deepest real capture nests about a dozen (an NCCL topology: system, cpu, a chain of PCI
# switches, gpu, nvlink); nvidia-smi -q -x four. Far past that, the recursive readers would hit
# Python's own limit.
MAX_DEPTH = 64


def parse_xml_safely(text: str, source: str, *, allow_external_doctype: bool = False,
                     cut: list[str] | None = None) -> ET.Element:
    """Parse XML with expat and an ElementTree builder, refusing what defusedxml refuses.

    An internal DTD subset, entity declarations and external entity references are refused.
    `allow_external_doctype` admits `<!DOCTYPE x SYSTEM "file.dtd">` without an internal subset:
    `nvidia-smi -q -x` prints exactly that line, and expat never fetches the file.
    `cut`: when given, a document that simply stops (the capture was cut: elements still open at
    the end of the text) is closed where it stops and returned, with a note appended to `cut`;
    anything else that is not well-formed is still refused.
    """
    text, offset = _drop_leading_comments(text)
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()
    open_tags: list[tuple[str, int]] = []

    def doctype(name: str, sysid: str | None, pubid: str | None, internal: int) -> None:
        if internal or not allow_external_doctype:
            raise _RefusedError(f"DOCTYPE {shown(name)} refused: captures must not declare a DTD")

    def entity(name: str, *args: Any) -> None:
        raise _RefusedError(f"entity declaration {shown(name)} refused")

    def external(*args: Any) -> int:
        raise _RefusedError("external entity reference refused")

    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    parser.UnparsedEntityDeclHandler = entity
    parser.ExternalEntityRefHandler = external

    def start(name: str, attrs: dict[str, str]) -> None:
        # Remember the line of each element under a key no real attribute can have (XML names
        # cannot contain a space), so later errors about an element can name its line.
        line = parser.CurrentLineNumber + offset
        if len(open_tags) >= MAX_DEPTH:  # the readers walk the tree recursively: bound it here, once
            raise _RefusedError(f"element {shown(name)} is nested more than {MAX_DEPTH} elements deep; no capture "
                                "gpuctl reads nests that far")
        builder.start(name, {**attrs, LINE_KEY: str(line)})
        open_tags.append((name, line))

    def end(name: str) -> None:
        builder.end(name)
        open_tags.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = builder.data
    parser.buffer_text = True
    try:
        parser.Parse(text, True)
        return builder.close()
    except _RefusedError as refused:
        raise ParseError(str(refused), source=source, line=parser.CurrentLineNumber + offset) from None
    except expat.ExpatError as error:
        last_line = offset + text.rstrip().count("\n") + 1
        stops = error.code in (expat.errors.codes[expat.errors.XML_ERROR_NO_ELEMENTS],
                               expat.errors.codes[expat.errors.XML_ERROR_UNCLOSED_TOKEN],
                               expat.errors.codes[expat.errors.XML_ERROR_PARTIAL_CHAR])
        if cut is not None and stops and open_tags and error.lineno + offset >= last_line:
            inner, line = open_tags[-1]
            for name, _ in reversed(open_tags):
                builder.end(name)
            cut.append(f"{source}:{last_line}: the XML stops inside <{inner}> (opened on line {line}): it was cut; "
                       "the complete elements before that point are read, the rest of the node is unknown")
            return builder.close()
        message = expat.ErrorString(error.code)
        raise ParseError(f"not well-formed XML: {message}", source=source,
                         line=error.lineno + offset) from None
    except AssertionError:  # TreeBuilder.close() on an empty or unbalanced document
        raise ParseError("empty or truncated XML", source=source,
                         line=parser.CurrentLineNumber + offset) from None


@dataclass
class _Device:
    """A GPU or NIC with its chain of PCI ancestors (bus ids, nearest first) and its CPU."""

    bus_id: str
    ancestors: list[str]
    numa: int | None
    cpu_index: int


@dataclass
class _Walk:
    gpus: list[tuple[Gpu, _Device, list[ET.Element]]] = field(default_factory=list)
    nics: list[tuple[Nic, _Device]] = field(default_factory=list)
    foreign: list[tuple[str, int, int | None]] = field(default_factory=list)  # (what, xGMI links, line)
    notes: list[str] = field(default_factory=list)


NVIDIA_PCI_VENDOR = "0x10de"
# PCI vendor ids of GPUs RCCL (or a fork of it) dumps in NCCL's format: AMD, and Hygon's DCUs.
_GPU_VENDORS = {"0x1002": "AMD", "0x1d94": "Hygon"}
# The fastest port NCCL lists today is 800 Gb/s (ConnectX-8); a figure far above it is not Mb/s
# (an HPE Slingshot cxi NIC dumped as speed="200000000").
MAX_PORT_MBPS = 3_200_000


def _not_nvidia(pci: ET.Element, gpu: ET.Element) -> str | None:
    """What a GPU that is not NVIDIA's is, from its PCI vendor or RCCL's `gcn` attribute; None for
    NVIDIA (or a dump without either, NCCL's own). RCCL writes `sm` too (sm="94" on an MI300X, "90"
    on an MI210), a number that is no NVIDIA compute capability."""
    vendor = (pci.get("vendor") or "").lower()
    gcn = gpu.get("gcn")
    if vendor == NVIDIA_PCI_VENDOR:
        return None
    if vendor in _GPU_VENDORS or gcn is not None:
        maker = _GPU_VENDORS.get(vendor, "AMD")
        arch = f" ({gcn})" if gcn and not gcn.isdigit() else (f" (gcn {gcn})" if gcn else "")
        return f"{maker} GPU{arch}"
    return None


def _attr_int(element: ET.Element, name: str, source: str) -> int | None:
    value = element.get(name)
    if value is None:
        return None
    try:
        return int(value, 0)
    except ValueError:
        raise ParseError(f"<{element.tag} {name}={shown(value)}> is not a number", source=source,
                         line=line_of(element)) from None


def _walk(element: ET.Element, ancestors: list[str], numa: int | None, cpu_index: int,
          out: _Walk, source: str) -> None:
    for child in element:
        if child.tag == "pci":
            bus_id = (child.get("busid") or "").lower()
            if not bus_id:
                raise ParseError("<pci> without busid", source=source, line=line_of(child))
            for device in child:
                if device.tag == "gpu":
                    foreign = _not_nvidia(child, device)
                    if foreign is not None:
                        out.foreign.append((foreign, len(device.findall("xgmi")), line_of(device)))
                    sm = None if foreign is not None else _attr_int(device, "sm", source)
                    dev = _attr_int(device, "dev", source)
                    if dev is None:
                        raise ParseError(f"<gpu> under {shown(bus_id)} has no dev attribute", source=source,
                                         line=line_of(device))
                    gpu = Gpu(
                        index=dev, bus_id=bus_id, numa=numa,
                        model=foreign or GPU_MODELS.get((child.get("device") or "").lower()),
                        compute_capability=None if sm is None else f"{sm // 10}.{sm % 10}",
                    )
                    place = _Device(bus_id, list(ancestors), numa, cpu_index)
                    out.gpus.append((gpu, place, device.findall("nvlink")))
                elif device.tag == "nic":
                    for net in device.findall("net"):
                        speed = _attr_int(net, "speed", source)  # Mb/s
                        if speed is not None and speed > MAX_PORT_MBPS:
                            out.notes.append(f"{source}:{line_of(net)}: <net name={shown(net.get('name') or '')}> "
                                             f"speed={speed} is not a port speed in Mb/s ({speed // 1000:,} Gb/s): "
                                             "its rate is unknown")
                            speed = None
                        gdr = net.get("gdr")
                        name = net.get("name")
                        if not name:
                            raise ParseError(f"<net> under {shown(bus_id)} has no name", source=source,
                                             line=line_of(net))
                        # NCCL lists only ports that were active when it ran (seen_by says so).
                        nic = Nic(
                            name=name, bus_id=bus_id, numa=numa,
                            rate_gbps=None if speed is None else speed / 1000,
                            gdr_capable=None if gdr is None else gdr == "1",
                            seen_by=["nccl-topo-xml"],
                        )
                        out.nics.append((nic, _Device(bus_id, list(ancestors), numa, cpu_index)))
            _walk(child, [bus_id, *ancestors], numa, cpu_index, out, source)


def pci_distance(a: _Device, b: _Device) -> PcieDistance:
    """What nvidia-smi would print between two devices, from their places in NCCL's PCI tree.

    Same switch: count the bridges on the path (one: PIX, more: PXB). Same CPU, different root
    port: NCCL itself calls that PHB (the XML does not show whether the root ports sit on one host
    bridge, which nvidia-smi would print as PHB, or on two, NODE). Different CPU: SYS.
    """
    if a.cpu_index != b.cpu_index:
        return "SYS"
    common = next((bus for bus in a.ancestors if bus in b.ancestors), None)
    if common is None:
        return "PHB"
    bridges = a.ancestors.index(common) + b.ancestors.index(common) + 1
    return "PIX" if bridges <= 1 else "PXB"


def parse_nccl_topo_xml(text: str, source: str = "<nccl topo xml>") -> Topology:
    """Parse an NCCL topology dump: GPUs (sm, bus id, NUMA), NVSwitch, NICs, distances, rails."""
    cut: list[str] = []
    root = parse_xml_safely(text, source, cut=cut)
    if root.tag != "system":
        raise ParseError(f"root element is <{root.tag[:200]}>, not NCCL's <system>", source=source, line=1)
    walk = _Walk()
    for cpu_index, cpu in enumerate(root.findall("cpu")):
        numaid = _attr_int(cpu, "numaid", source)
        # numaid="-1": NCCL could not tell (a VM without NUMA information): unknown, not a node.
        _walk(cpu, [], numaid if numaid is not None and numaid >= 0 else None, cpu_index, walk, source)
    if not walk.gpus and not walk.nics:
        raise ParseError("no <gpu> and no <net> in the topology XML: truncated?", source=source)

    topo = Topology(sources=[source])
    topo.notes.extend(walk.notes)
    if walk.foreign:
        what, xgmi, line = walk.foreign[0]
        topo.notes.append(
            f"{source}:{line}: the GPUs are not NVIDIA's ({what}; an RCCL topology dump): their `sm` is RCCL's number, "
            "not an NVIDIA compute capability, and their xGMI links"
            + (f" ({xgmi} per GPU)" if xgmi else "") + " are not NVLink; gpuctl's NCCL rules are for NVIDIA GPUs, so "
            "GPU links and architecture are left unknown")
    nvswitch = False
    walk.gpus.sort(key=lambda item: item[0].index)
    gpu_by_bus = {gpu.bus_id: gpu.index for gpu, _, _ in walk.gpus}
    direct: dict[int, dict[int, int]] = {}
    for gpu, _place, nvlinks in walk.gpus:
        topo.gpus.append(gpu)
        for link in nvlinks:
            target = (link.get("target") or "").lower()
            count = _attr_int(link, "count", source) or 0
            if link.get("tclass") == NVSWITCH_CLASS:
                nvswitch = True
            elif target in gpu_by_bus:  # a direct GPU-GPU NVLink (no switch)
                direct.setdefault(gpu.index, {})[gpu_by_bus[target]] = count
    topo.nvswitch = True if nvswitch else None
    topo.gpu_links = [] if walk.foreign else _gpu_links(walk, nvswitch, direct)
    topo.nics = [nic for nic, _ in walk.nics]
    if cut:
        # The device list of a cut dump is incomplete: its NICs prove nothing about the node's rails.
        topo.nics = [nic.model_copy(update={"seen_by": ["nccl-topo-xml (cut)"]}) for nic in topo.nics]
        topo.notes.extend(cut)
    for gpu, gplace, _ in walk.gpus:
        topo.gpu_nic_distance[str(gpu.index)] = {
            nic.name: pci_distance(gplace, nplace) for nic, nplace in walk.nics
        }
    topo.rails = compute_rails(topo.gpu_nic_distance)
    return topo


def _gpu_links(walk: _Walk, nvswitch: bool, direct: dict[int, dict[int, int]]) -> list[list[GpuLink]]:
    """The GPU x GPU matrix: through NVSwitch every pair gets the lesser of the two GPUs' links."""
    totals = {
        gpu.index: sum(int(link.get("count") or 0) for link in links
                       if link.get("tclass") == NVSWITCH_CLASS)
        for gpu, _, links in walk.gpus
    }
    rows: list[list[GpuLink]] = []
    for a, aplace, _ in walk.gpus:
        row: list[GpuLink] = []
        for b, bplace, _ in walk.gpus:
            if a.index == b.index:
                row.append(GpuLink(kind="X"))
            elif nvswitch and totals[a.index] and totals[b.index]:
                row.append(GpuLink(kind="NV", nvlinks=min(totals[a.index], totals[b.index])))
            elif b.index in direct.get(a.index, {}):
                row.append(GpuLink(kind="NV", nvlinks=direct[a.index][b.index]))
            else:
                row.append(GpuLink(kind=pci_distance(aplace, bplace)))
        rows.append(row)
    return rows
