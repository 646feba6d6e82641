"""Parse `nvidia-smi topo -m` (and the PCIe-only `topo -mp`) into a partial `Topology`.

The matrix is found in every shape seen in real captures: tab-separated as printed, or
space-aligned after a paste through a terminal or a web page (where neighbouring columns can lose
the space between them: `NIC7NIC8`, `SYSSYS`); NIC columns named directly (`mlx5_0`, older
drivers) or `NIC0` with a `NIC Legend:` below; ANSI underline escapes around the header when
captured through `kubectl exec`; shell prompts and `# source:` comments before it; NIC rows
without the affinity columns; an empty extra field before `GPU NUMA ID`.

The matrix is checked: `X` exactly on the diagonal (else columns were shifted: refused) and
symmetric (else a note). A capture cut in the NIC rows or the NIC Legend keeps the GPU rows
(the NIC rows only mirror them) with a note; a cut GPU row is refused.

What the matrix cannot say is left `None`: it shows no GPU model, and with `-mp` it hides NVLink.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, cast

from toolkit.errors import ParseError
from toolkit.listing import first
from toolkit.topology.model import Gpu, GpuLink, Nic, PcieDistance, Topology
from toolkit.topology.rails import compute_rails
from toolkit.topology.text import shown, strip_ansi

__all__ = ["numa_off_note", "parse_topo_matrix", "strip_ansi"]
_GPU = re.compile(r"GPU(\d+)$")
_NV = re.compile(r"NV(\d+)$")
_LEGEND_NIC = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
# Header titles that contain spaces; a space-aligned header is split on whitespace and rejoined.
_PHRASES = (("GPU", "NUMA", "ID"), ("CPU", "Affinity"), ("NUMA", "Affinity"))
_TRAILING = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_DISTANCES = frozenset({"X", "PIX", "PXB", "PHB", "NODE", "SYS"})
# Drivers before ~R384 printed SOC where newer ones print SYS: the same thing.
_ALIASES = {"SOC": "SYS"}
_MISSING = frozenset({"", "N/A"})
# Cells and column titles that a paste glued together: `SYSSYS`, `PXBSYS`, `NIC7NIC8`.
_GLUED_CELLS = re.compile(r"(?:X|PIX|PXB|PHB|NODE|SYS|SOC|NV\d+){2,}")
_CELL_TOKEN = re.compile(r"X|PIX|PXB|PHB|NODE|SYS|SOC|NV\d+")
_GLUED_TITLES = re.compile(r"(?:GPU\d+|NIC\d+|mlx5_(?:bond_)?\d+){2,}")
_TITLE_TOKEN = re.compile(r"GPU\d+|NIC\d+|mlx5_(?:bond_)?\d+")


@dataclass(frozen=True)
class _Header:
    line: int
    devices: list[str]  # GPU0.., then NIC columns as titled (NIC0 or mlx5_0)
    trailing: list[str]  # the affinity titles present, in order


def _unglue(words: list[str], glued: re.Pattern[str], token: re.Pattern[str]) -> list[str]:
    out: list[str] = []
    for word in words:
        out.extend(token.findall(word) if glued.fullmatch(word) else [word])
    return out


def _split(line: str) -> list[str]:
    """Cells of one line: tabs when the line has them (empty cells kept), else runs of spaces,
    with cells a paste glued together (`SYSSYS`) split again."""
    if "\t" in line:
        return [cell.strip() for cell in line.split("\t")]
    return _unglue(line.split(), _GLUED_CELLS, _CELL_TOKEN)


def _join_phrases(words: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(words):
        for phrase in _PHRASES:
            if tuple(words[i : i + len(phrase)]) == phrase:
                out.append(" ".join(phrase))
                i += len(phrase)
                break
        else:
            out.append(words[i])
            i += 1
    return out


def _header_cells(line: str) -> list[str]:
    if "\t" in line:
        return [cell.strip() for cell in line.split("\t") if cell.strip()]
    return _join_phrases(_unglue(line.split(), _GLUED_TITLES, _TITLE_TOKEN))


def _find_header(lines: list[str], source: str) -> _Header:
    for number, raw in enumerate(lines, start=1):
        cells = _header_cells(raw)
        # The header starts with GPU0; a row also starts with GPU0 but its next cell is "X".
        if len(cells) < 2 or cells[0] != "GPU0" or cells[1] == "X":
            continue
        devices: list[str] = []
        trailing: list[str] = []
        for cell in cells:
            if cell in _TRAILING:
                trailing.append(cell)
            elif trailing:
                raise ParseError(
                    f"unexpected column {shown(cell)} after {trailing[-1]!r} in the topo -m header",
                    source=source, line=number,
                )
            else:
                devices.append(cell)
        return _Header(line=number, devices=devices, trailing=trailing)
    raise ParseError(
        "no `nvidia-smi topo -m` header (a line of column titles starting with GPU0) found",
        source=source,
        hint="capture it with: nvidia-smi topo -m > topo.txt",
    )


def _cell(value: str, source: str, line: int) -> GpuLink:
    value = _ALIASES.get(value, value)
    if value in _DISTANCES:
        return GpuLink(kind=cast(PcieDistance, value))
    nv = _NV.match(value)
    if nv:
        return GpuLink(kind="NV", nvlinks=int(nv.group(1)))
    raise ParseError(f"unknown topo -m cell {shown(value)}", source=source, line=line)


def _numa(value: str | None, source: str, line: int) -> int | None:
    if value is None or value in _MISSING:
        return None
    if value.isdigit():
        return int(value)
    # A range ("0-1") or a list means the GPU is not local to one node: no single answer.
    if re.fullmatch(r"\d+([-,]\d+)+", value):
        return None
    raise ParseError(f"NUMA Affinity {shown(value)} is neither a number, a range nor N/A", source=source,
                     line=line)


def _legend(text: str, lines: list[str], notes: list[str], source: str) -> dict[str, str]:
    """`NIC0: mlx5_0` lines under `NIC Legend:`. A last line the capture stops in (no newline
    after it) may hold a cut name (`mlx5_1` of `mlx5_11`), and so may a name given twice: both
    are left unnamed, with a note."""
    legend: dict[str, str] = {}
    in_legend = False
    cut_at = len(lines) if text and not text.endswith("\n") else None
    for number, raw in enumerate(lines, start=1):
        if raw.strip() == "NIC Legend:":
            in_legend = True
            continue
        match = _LEGEND_NIC.match(raw)
        if not (in_legend and match):
            continue
        column, name = match.group(1), match.group(2)
        if number == cut_at:
            notes.append(f"{source}:{number}: the capture stops in the NIC Legend line for {column} ({shown(name)}): "
                         "the name may be cut, so it is not used")
        elif name in legend.values():
            notes.append(f"{source}:{number}: the NIC Legend names {name} twice: {column} is left unnamed")
        else:
            legend[column] = name
    return legend


def _matrix_rows(lines: list[str], header: _Header, source: str,
                 notes: list[str]) -> dict[str, tuple[int, list[str]]]:
    """Row label -> (line, cells after the label). A NIC row the capture is cut in (the last row,
    short of cells) is left out with a note: NIC rows only mirror the GPU rows' NIC columns."""
    n_dev = len(header.devices)
    rows: dict[str, tuple[int, list[str]]] = {}
    for number in range(header.line + 1, len(lines) + 1):
        raw = lines[number - 1]
        if not raw.strip() or raw.strip().startswith(("Legend", "```")):  # "```": a markdown fence closes the paste
            break
        cells = _split(raw)
        label = cells[0]
        if label not in header.devices:
            raise ParseError(f"row {shown(label)} is not one of the header's columns", source=source,
                             line=number)
        if label in rows:
            raise ParseError(f"row {label} appears twice", source=source, line=number)
        distances = cells[1 : 1 + n_dev]
        if len(distances) < n_dev or "" in distances:
            is_last = number == len(lines) or not lines[number].strip()
            if is_last and not _GPU.match(label):
                notes.append(f"{source}:{number}: the capture is cut in row {label}: NIC rows mirror the GPU "
                             "rows, which are complete")
                break
            raise ParseError(
                f"row {label} has {len([d for d in distances if d])} of {n_dev} cells: truncated?",
                source=source, line=number,
            )
        for value in distances:  # every cell, NIC rows too: a garbled one is a broken capture
            _cell(value, source, number)
        rows[label] = (number, cells[1:])
    missing = [d for d in header.devices if d not in rows]
    if any(_GPU.match(d) for d in missing):
        raise ParseError(
            f"the header names {', '.join(missing)} but the matrix has no row for them: truncated?",
            source=source, line=header.line + len(rows) + 1,
        )
    if missing:
        notes.append(f"{source}: no row for {', '.join(missing)} (capture cut?): the GPU rows are complete")
    return rows


def _check_matrix(rows: dict[str, tuple[int, list[str]]], header: _Header, source: str,
                  notes: list[str]) -> None:
    """`X` exactly on the diagonal (refused otherwise: the columns are shifted) and symmetry (a
    note otherwise: nvidia-smi prints both halves of the same distance)."""
    columns = header.devices
    for label, (number, cells) in rows.items():
        for column, value in zip(columns, cells, strict=False):
            if (value == "X") != (column == label):
                where = f"X in column {column}" if value == "X" else f"{shown(value)} where X belongs"
                raise ParseError(f"row {label}: {where}: columns shifted or misread", source=source, line=number)
    asymmetric = []
    for i, a in enumerate(columns):
        for b in columns[i + 1:]:
            if a not in rows or b not in rows:
                continue
            ab = rows[a][1][columns.index(b)]
            ba = rows[b][1][columns.index(a)]
            if _ALIASES.get(ab, ab) != _ALIASES.get(ba, ba):
                asymmetric.append(f"{a}->{b} {ab} but {b}->{a} {ba}")
    if asymmetric:
        notes.append(f"{source}: the matrix is not symmetric ({first(asymmetric, 5, '; ')}): the GPU rows "
                     "are used")


def parse_topo_matrix(text: str, source: str = "<topo -m>") -> Topology:
    """Parse `nvidia-smi topo -m` or `-mp` output into GPUs, links, GPU/NIC distances and rails."""
    lines = strip_ansi(text).splitlines()
    header = _find_header(lines, source)
    n_dev = len(header.devices)
    topo = Topology(sources=[source])
    rows = _matrix_rows(lines, header, source, topo.notes)
    _check_matrix(rows, header, source, topo.notes)
    if any(_GLUED_TITLES.fullmatch(w) or _GLUED_CELLS.fullmatch(w) for line in lines for w in line.split()):
        topo.notes.append(f"{source}: some columns were glued together in the paste (like `SYSSYS`): split again")

    gpu_cols = [d for d in header.devices if _GPU.match(d)]
    nic_cols = [d for d in header.devices if not _GPU.match(d)]
    legend = _legend(text, lines, topo.notes, source)
    nic_names = {col: legend.get(col, col) for col in nic_cols}
    unnamed = [col for col in nic_cols if re.fullmatch(r"NIC\d+", nic_names[col])]
    if unnamed:
        has_legend = any(line.strip() == "NIC Legend:" for line in lines)
        topo.notes.append(
            f"{source}: {'the NIC Legend does not name' if has_legend else 'no NIC Legend for'} "
            f"{', '.join(unnamed)}: device names unknown"
        )

    for col in gpu_cols:
        number, cells = rows[col]
        index = int(col[3:])
        # Trailing fields: empties are padding (nvidia-smi prints an extra tab before GPU NUMA ID,
        # and a space-aligned paste loses them), so the non-empty values map to titles in order.
        values = [v for v in cells[n_dev:] if v]
        if len(values) > len(header.trailing):
            raise ParseError(
                f"row {col} has {len(values)} values after the matrix for "
                f"{len(header.trailing)} columns", source=source, line=number,
            )
        fields = dict(zip(header.trailing, values, strict=False))
        affinity = fields.get("CPU Affinity")
        topo.gpus.append(Gpu(
            index=index,
            numa=_numa(fields.get("NUMA Affinity"), source, number),
            cpu_affinity=None if affinity in (None, "N/A") else affinity,
        ))
        row = [_cell(v, source, number) for v in cells[:n_dev]]
        topo.gpu_links.append([row[header.devices.index(g)] for g in gpu_cols])
        topo.gpu_nic_distance[str(index)] = {
            nic_names[nic]: row[header.devices.index(nic)].kind for nic in nic_cols
        }

    # A topo -m column is a PCI function nvidia-smi found, not proof of an RDMA device or its state.
    topo.nics = [Nic(name=nic_names[col], seen_by=["topo-matrix"]) for col in nic_cols]
    topo.rails = compute_rails(topo.gpu_nic_distance)
    view = _legend_view(lines, topo.gpu_links)
    topo.pcie_only_view = view == "mp"
    if view == "mp":
        topo.notes.append(f"{source}: PCIe-only view (topo -mp): NVLink not shown, not absent")
    elif view == "cut":
        topo.notes.append(f"{source}: the legend ends before its `NV#` line (cut?): whether this is a PCIe-only view "
                          "(topo -mp) is not known, so neither is NVLink")
    topo.nvswitch = _nvswitch_from_counts(topo.gpu_links)
    note = numa_off_note(topo.gpus)
    if note:
        topo.notes.append(note)
    return topo


def _legend_view(lines: list[str], links: list[list[GpuLink]]) -> Literal["mp", "cut"] | None:
    """"mp" for a PCIe-only view: `topo -mp` prints PCIe distances only and its legend has no `NV#`
    line; "cut" for a legend without `NV#` that may be a `-m` legend cut before it; None otherwise.

    Without NV# cells, only the command line or a whole legend can tell `-mp` from a box without
    NVLink. `topo -m`'s legend ends with the NV# line, so a legend without it is a whole `-mp`
    legend only when something follows it (the NIC Legend); one the capture ends in may be a `-m`
    legend cut before its last line, so whether it is `-mp` is not known.
    """
    if any(link.kind == "NV" for row in links for link in row):
        return None
    if any(re.search(r"topo\s+-mp\b", line) for line in lines):
        return "mp"
    end = _legend_end(lines)
    if end is None or any("NV#" in line for line in lines):
        return None
    return "mp" if any(line.strip() == "NIC Legend:" for line in lines[end:]) else "cut"


def _legend_end(lines: list[str]) -> int | None:
    """The index of the line after the distance legend's last `X = ...` entry; None without a legend."""
    start = next((i for i, line in enumerate(lines) if line.strip() == "Legend:"), None)
    if start is None:
        return None
    end = start + 1
    for i in range(start + 1, len(lines)):
        if re.match(r"^\s*(X|SYS|NODE|PHB|PXB|PIX|NV#|SOC)\s+=", lines[i]):
            end = i + 1
        elif lines[i].strip() and end > start + 1:
            break
    return end


# The most NVLinks one GPU has, across V100 (6), A100 (12), H100/H200/B200/B300 (18).
MAX_NVLINKS_PER_GPU = 18


def _nvswitch_from_counts(links: list[list[GpuLink]]) -> bool | None:
    """NVSwitch when a GPU shows more NVLinks to its peers than any GPU has: they must be shared.

    8 GPUs at NV18 to each of 7 peers would need 126 links; only a switch makes that true. A
    4-GPU board at NV6 to 3 peers (18) is direct and proves nothing either way: None.
    """
    for row in links:
        total = sum(link.nvlinks or 0 for link in row)
        if total > MAX_NVLINKS_PER_GPU:
            return True
    return None


def numa_off_note(gpus: list[Gpu]) -> str | None:
    """The note for a host whose GPUs all claim NUMA 0 and the same CPUs (numa=off or 1 node)."""
    if len(gpus) < 2 or any(g.numa != 0 for g in gpus):
        return None
    affinities = {g.cpu_affinity for g in gpus}
    if len(affinities) != 1 or None in affinities:
        return None
    cpus = next(iter(affinities))
    return (
        f"numa=off: every GPU reports NUMA 0 and CPUs {cpus} (kernel booted with numa=off, or one "
        "NUMA node): NUMA gives no placement hint"
    )
