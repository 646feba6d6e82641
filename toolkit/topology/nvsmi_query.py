"""Parse what `nvidia-smi` says about each GPU: `--query-gpu=... --format=csv`, `-q` and `-q -x`.

All three give the same facts in different clothes: driver/CUDA version, and per GPU the model,
memory, PCI bus id, compute capability (CSV only) and the NVSwitch fabric state. Each parser
returns a partial `Topology`; `detect` merges it with the matrix and the RDMA side.

Missing values come in three spellings (`[N/A]`, `N/A`, empty) and stay `None`.
"""

from __future__ import annotations

import csv
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from toolkit.errors import ParseError
from toolkit.topology.model import Gpu, Topology
from toolkit.topology.nccl_xml import line_of, parse_xml_safely
from toolkit.topology.text import shown

# "memory.total [MiB]" -> "memory.total". No `\s*` in front and no `[` inside: a searched pattern that
# starts with a repeat retries it from every character, quadratic on a long pasted line.
_UNIT = re.compile(r"\[[^\[\]]*\]$")
_MIB = re.compile(r"^(\d+)\s*MiB$")
# nvidia-smi puts every non-value in brackets: [N/A], [Not Supported], [Requested functionality
# has been deprecated], [Insufficient Permissions].
_NOT_A_VALUE = re.compile(r"^\[.*\]$")
_MISSING = frozenset({"", "N/A", "Not Supported", "None"})

# The fields gather.sh asks for, in this order; any subset or superset parses the same.
QUERY_FIELDS: tuple[str, ...] = (
    "index", "name", "uuid", "pci.bus_id", "memory.total", "compute_cap", "driver_version",
    "pcie.link.gen.max", "pcie.link.width.max", "fabric.state", "fabric.status",
)


def normalise_bus_id(value: str) -> str:
    """`00000000:83:00.0` (nvidia-smi's 8-digit domain) -> `0000:83:00.0`, lower case."""
    value = value.strip().lower()
    match = re.fullmatch(r"([0-9a-f]+):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])", value)
    if not match:
        return value
    domain, bus, device, function = match.groups()
    return f"{int(domain, 16):04x}:{bus}:{device}.{function}"


def _value(raw: str | None) -> str | None:
    if raw is None:
        return None
    raw = raw.strip()
    if raw in _MISSING or _NOT_A_VALUE.match(raw):
        return None
    return raw


def _mib(raw: str | None, what: str, source: str, line: int | None) -> int | None:
    value = _value(raw)
    if value is None:
        return None
    match = _MIB.match(value)
    if not match and value.isdigit():  # --format=csv,nounits
        return int(value)
    if not match:
        raise ParseError(f"{what} {shown(value)} is not a size in MiB", source=source, line=line)
    return int(match.group(1))


@dataclass
class _Fabric:
    states: list[str] = field(default_factory=list)  # "Completed/Success" per GPU with a fabric


def _fabric(topo: Topology, fabric: _Fabric, source: str) -> None:
    """NVSwitch fabric registration: Completed/Success means the GPUs sit on NVSwitches.

    N/A everywhere (PCIe cards, direct NVLink boards) proves nothing, so nvswitch stays None.
    Any other state means the fabric exists but is not ready: NVLink P2P will fail, say so.
    """
    if not fabric.states:
        return
    ok = ("Completed/Success", "Completed/None")  # older drivers print no status
    topo.nvswitch = True
    bad = sorted({s for s in fabric.states if s not in ok})
    if not bad:
        return
    topo.notes.append(
        f"{source}: NVSwitch fabric not ready ({', '.join(bad)}): check nvidia-fabricmanager"
    )


# --- --query-gpu CSV -------------------------------------------------------------------------


def parse_query_gpu_csv(text: str, source: str = "<query-gpu csv>") -> Topology:
    """Parse `nvidia-smi --query-gpu=... --format=csv` (header line, one row per GPU)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() and not line.startswith("#")),
                 None)
    if start is None:
        raise ParseError("empty query-gpu output", source=source)
    rows = list(csv.reader(lines[start:], skipinitialspace=True))
    names = [_UNIT.sub("", name.strip()).rstrip() for name in rows[0]]
    if "name" not in names and "pci.bus_id" not in names and "index" not in names:
        raise ParseError("the CSV header names none of index, name, pci.bus_id", source=source,
                         line=start + 1)
    topo = Topology(sources=[source])
    fabric = _Fabric()
    for offset, row in enumerate(rows[1:], start=start + 2):
        if not row or not "".join(row).strip():
            continue
        if len(row) != len(names):
            raise ParseError(f"{len(row)} values for {len(names)} columns: truncated row?",
                             source=source, line=offset)
        fields = {name: _value(raw) for name, raw in zip(names, row, strict=True)}
        index = fields.get("index")
        if index is not None and not index.isdigit():
            raise ParseError(f"index {shown(index)} is not a number", source=source, line=offset)
        bus_id = fields.get("pci.bus_id")
        topo.gpus.append(Gpu(
            index=int(index) if index is not None else len(topo.gpus),
            model=fields.get("name"),
            memory_mib=_mib(row[names.index("memory.total")] if "memory.total" in names else None,
                            "memory.total", source, offset),
            bus_id=normalise_bus_id(bus_id) if bus_id else None,
            compute_capability=fields.get("compute_cap"),
            uuid=fields.get("uuid"),
        ))
        topo.driver_version = topo.driver_version or fields.get("driver_version")
        state, status = fields.get("fabric.state"), fields.get("fabric.status")
        if state is not None:
            fabric.states.append(f"{state}/{status}")
    if not topo.gpus:
        raise ParseError("a header but no GPU rows", source=source, line=start + 1)
    _fabric(topo, fabric, source)
    return topo


# --- nvidia-smi -q (text) --------------------------------------------------------------------


@dataclass
class _QGpu:
    line: int
    bus_id: str
    fields: dict[tuple[str, ...], tuple[str, int]] = field(default_factory=dict)


def _q_blocks(text: str, source: str) -> tuple[dict[str, str], list[_QGpu], int | None]:
    """Split `-q` text into top-level keys and one block per `GPU <bus id>` section.

    Indentation is 4 spaces per level; a line without ` : ` opens a section; keys are paths of
    section names, e.g. ("FB Memory Usage", "Total").
    """
    top: dict[str, str] = {}
    gpus: list[_QGpu] = []
    stack: list[tuple[int, str]] = []
    attached: int | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.startswith("#") or raw.startswith("="):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        body = raw.strip()
        gpu_header = re.fullmatch(r"GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])", body)
        if indent == 0 and gpu_header:
            gpus.append(_QGpu(line=number, bus_id=normalise_bus_id(gpu_header.group(1))))
            stack = []
            continue
        key, sep, value = raw.strip().partition(" : ")
        if not sep and body.endswith(" :"):  # "Key :" with an empty value
            key, sep, value = body[:-2], " : ", ""
        key = key.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not sep:
            stack.append((indent, key))
            continue
        if indent == 0:
            if gpus:
                raise ParseError(f"top-level {shown(key)} after the GPU sections", source=source,
                                 line=number)
            top[key] = value.strip()
            if key == "Attached GPUs":
                if not value.strip().isdigit():
                    raise ParseError(f"Attached GPUs {shown(value)} is not a number", source=source,
                                     line=number)
                attached = int(value)
            continue
        if not gpus:
            raise ParseError(f"indented {shown(key)} before any `GPU <bus id>` line", source=source,
                             line=number)
        path = (*(name for _, name in stack), key)
        gpus[-1].fields[path] = (value.strip(), number)
    return top, gpus, attached


def parse_nvsmi_q(text: str, source: str = "<nvidia-smi -q>") -> Topology:
    """Parse `nvidia-smi -q` text: versions, and per GPU model, memory, bus id, fabric state."""
    top, gpus, attached = _q_blocks(text, source)
    if "Driver Version" not in top:
        raise ParseError("no `Driver Version` line: not `nvidia-smi -q` output", source=source)
    if attached is not None and attached != len(gpus):
        last = text.count("\n") + 1
        raise ParseError(
            f"`Attached GPUs : {attached}` but {len(gpus)} GPU sections: truncated?",
            source=source, line=last,
        )
    topo = Topology(sources=[source])
    topo.driver_version = _value(top.get("Driver Version"))
    topo.cuda_version = _value(top.get("CUDA Version"))
    fabric = _Fabric()
    # -q lists GPUs in nvidia-smi index order (PCI order unless CUDA_DEVICE_ORDER says otherwise).
    for index, block in enumerate(gpus):
        def get(*path: str, block: _QGpu = block) -> str | None:
            found = block.fields.get(path)
            return _value(found[0]) if found else None

        total = block.fields.get(("FB Memory Usage", "Total"))
        bus = get("PCI", "Bus Id")
        topo.gpus.append(Gpu(
            index=index,
            model=get("Product Name"),
            memory_mib=_mib(total[0], "FB Memory Usage Total", source, total[1]) if total else None,
            bus_id=normalise_bus_id(bus) if bus else block.bus_id,
            uuid=get("GPU UUID"),
        ))
        state, status = get("Fabric", "State"), get("Fabric", "Status")
        if state is not None:
            fabric.states.append(f"{state}/{status}")
        if get("GPU Virtualization Mode", "Virtualization Mode") == "Pass-Through":
            note = f"{source}: GPUs are passed through to a VM: PCIe distances are the VM's view"
            if note not in topo.notes:
                topo.notes.append(note)
    _fabric(topo, fabric, source)
    return topo


# --- nvidia-smi -q -x (XML) ------------------------------------------------------------------


def _text(element: ET.Element | None, path: str) -> str | None:
    if element is None:
        return None
    found = element.find(path)
    return None if found is None or found.text is None else _value(found.text)


def parse_nvsmi_q_xml(text: str, source: str = "<nvidia-smi -q -x>") -> Topology:
    """Parse `nvidia-smi -q -x`, by the element names of NVIDIA's nvsmi_device DTD.

    The output starts with `<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device.dtd">`, which is
    allowed; an internal subset or entities are refused.
    """
    root = parse_xml_safely(text, source, allow_external_doctype=True)
    if root.tag != "nvidia_smi_log":
        raise ParseError(f"root element is <{root.tag[:200]}>, not <nvidia_smi_log>", source=source,
                         line=line_of(root))
    topo = Topology(sources=[source])
    topo.driver_version = _text(root, "driver_version")
    topo.cuda_version = _text(root, "cuda_version")
    gpus = root.findall("gpu")
    attached = _text(root, "attached_gpus")
    if attached is not None and attached.isdigit() and int(attached) != len(gpus):
        raise ParseError(f"attached_gpus is {attached} but there are {len(gpus)} <gpu> elements",
                         source=source, line=line_of(root))
    fabric = _Fabric()
    for index, gpu in enumerate(gpus):
        total = gpu.find("fb_memory_usage/total")
        bus = _text(gpu, "pci/pci_bus_id") or gpu.get("id")
        numa = _text(gpu, "numa_id")
        topo.gpus.append(Gpu(
            index=index,
            model=_text(gpu, "product_name"),
            memory_mib=_mib(total.text if total is not None else None, "fb_memory_usage/total",
                            source, line_of(total) if total is not None else None),
            bus_id=normalise_bus_id(bus) if bus else None,
            numa=int(numa) if numa is not None and numa.isdigit() else None,
            uuid=_text(gpu, "uuid"),
        ))
        state = _text(gpu, "fabric/state")
        if state is not None:
            fabric.states.append(f"{state}/{_text(gpu, 'fabric/status')}")
    _fabric(topo, fabric, source)
    return topo
