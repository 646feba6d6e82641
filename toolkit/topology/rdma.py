"""RDMA device parsers: `ibv_devinfo [-v]`, `ibstat`, GID tables, `ibdev2netdev`, `rdma link`.

Pure functions, text in and models out, except `parse_sysfs_gids`, which reads a copy of
`/sys/class/infiniband` (the gather step saves one into a bundle: directories and small regular
files, no links; anything else there is refused, and so is a copy far larger than a node's). Every parser accepts what a
user pastes: a `# source:` or shell prompt line around the output, trailing spaces, tabs or runs
of spaces, and devices in lexical order (`mlx5_10` before `mlx5_2`).

Truncated output: complete records are kept; a record that is cut (a device without its port
section, a port whose `state:` line is missing or cut, a last line that stops mid-value) keeps
what it shows with its state unknown, and a note (in the `notes` list a caller passes) says so.
Only when nothing usable is left does a parser raise `ParseError`, naming the file and line.
`ibv_devinfo` printing `No IB devices found` is a listing of zero devices, not an error.
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from toolkit.errors import ParseError
from toolkit.files import FileError, read_bounded
from toolkit.topology.model import Nic, natural_key
from toolkit.topology.reading import regular_or_absent
from toolkit.topology.text import clean_lines, is_shell_prompt, shown

__all__ = ["clean_lines", "is_shell_prompt"]  # re-exported: older callers import them from here

GidType = Literal["RoCE v1", "RoCE v2", "IB"]


class GidEntry(BaseModel):
    """One non-empty GID table slot of one RDMA port."""

    model_config = ConfigDict(extra="forbid")

    device: str
    port: int
    index: int
    gid: str  # as printed: 0000:0000:0000:0000:0000:ffff:0a63:5b27 or ::ffff:10.99.91.39
    ipv4: str | None = None  # the IPv4 address of an IPv4-mapped GID
    type: GidType | None = None
    netdev: str | None = None


# Mellanox/NVIDIA ConnectX part ids (ibv_devinfo `vendor_part_id` = PCI device id, decimal).
# Source: rdma-core providers/mlx5/mlx5.c `hca_table` (PCI ids 0x1013..0x1021 with their names,
# linux-rdma/rdma-core @001d39df9c2e0afc08333efb8e970de90b3d41a6), and for ConnectX-8
# (0x1023 = 4131, "MT4131") the DPDK mlx5 guide's supported-NIC list ("ConnectX-8 SuperNIC 400G
# MT4131 ... Device ID: 15b3:1023"). `ibstat` prints the same number as `CA type: MT<id>`.
MELLANOX_PARTS: dict[int, str] = {
    4113: "Connect-IB",
    4115: "ConnectX-4",
    4116: "ConnectX-4 VF",
    4117: "ConnectX-4 Lx",
    4118: "ConnectX-4 Lx VF",
    4119: "ConnectX-5",
    4120: "ConnectX-5 VF",
    4121: "ConnectX-5 Ex",
    4122: "ConnectX-5 Ex VF",
    4123: "ConnectX-6",
    4124: "ConnectX-6 VF",
    4125: "ConnectX-6 Dx",
    4126: "ConnectX VF",  # "ConnectX family mlx5Gen Virtual Function" (e.g. CX-7 VFs in cloud VMs)
    4127: "ConnectX-6 Lx",
    4129: "ConnectX-7",
    4131: "ConnectX-8",
    41682: "BlueField ConnectX-5",  # 0xa2d2
    41686: "BlueField-2 ConnectX-6 Dx",  # 0xa2d6
    41692: "BlueField-3 ConnectX-7",  # 0xa2dc
}
VENDOR_MELLANOX = "0x02c9"  # the IEEE OUI ibverbs reports, not the PCI vendor id 0x15b3
VENDOR_ALIBABA_ERDMA = "0x1ded"  # Alibaba's PCI vendor id; erdma devices report it as vendor_id

def _is_comment(line: str) -> bool:
    # `# source: ...` headers of captures and notes; never part of these tools' output.
    return line.startswith("# ")


def model_name(vendor_id: str | None, vendor_part_id: int | None) -> str | None:
    """A human name for the device, or None when the part is unknown (never a guess)."""
    if vendor_id == VENDOR_ALIBABA_ERDMA:
        return "Alibaba eRDMA"
    if vendor_part_id is None or vendor_id not in (None, VENDOR_MELLANOX):
        return None
    return MELLANOX_PARTS.get(vendor_part_id)


def gid_ipv4(gid: str) -> str | None:
    """The IPv4 address carried by an IPv4-mapped GID (::ffff:a.b.c.d), else None."""
    try:
        mapped = ipaddress.IPv6Address(gid).ipv4_mapped
    except ValueError:
        return None
    return str(mapped) if mapped is not None else None


def _int(value: str, what: str, source: str, line: int) -> int:
    try:
        return int(value, 0) if value.lower().startswith("0x") else int(value)
    except ValueError:
        raise ParseError(f"{what} {shown(value)} is not a number", source=source, line=line) from None


# --------------------------------------------------------------------------------------------
# ibv_devinfo
# --------------------------------------------------------------------------------------------

_HCA = re.compile(r"^hca_id:\s*(\S+)$")
_PORT = re.compile(r"^\s+port:\s*(\S+)$")
_KEY_VALUE = re.compile(r"^\s+([A-Za-z_][\w ]*?):\s*(.*)$")
_GID_V = re.compile(r"^\s+GID\[\s*(\d+)\]:\s*([0-9A-Fa-f:.]+)(?:,\s*(.+))?$")
_TRANSPORTS: dict[str, Literal["InfiniBand", "eRDMA", "iWARP", "unknown"]] = {
    "InfiniBand": "InfiniBand",
    "eRDMA": "eRDMA",
    "iWARP": "iWARP",
}
# Lines ibv_devinfo itself prints between blocks when a device cannot be opened (seen in
# containers that see a VF they may not use).
_DEVINFO_NOISE = ("Failed to open device", "Failed to query device props", "Failed to query port")


_NO_DEVICES = re.compile(r"^No IB devices found\s*$", re.M)
# ibv_devinfo prints every port state as "%s (%d)": PORT_ACTIVE (4). Anything else was cut.
_DEVINFO_STATE = re.compile(r"^(PORT_[A-Z_]+) \((\d+)\)$")
_DEVINFO_VALUE = re.compile(r"^\S.*\(\d+\)$")  # "4096 (5)", "InfiniBand (0)": the "(n)" ends it


def looks_like_ibv_devinfo(text: str) -> bool:
    return (bool(re.search(r"^hca_id:\s*\S+", text, re.M)) and bool(
        re.search(r"^\s+transport:\s", text, re.M)
    )) or bool(_NO_DEVICES.search(text))


def _value_head(value: str) -> str:
    # "PORT_ACTIVE (4)" -> "PORT_ACTIVE"; "4096 (5)" -> "4096"
    return re.sub(r"\s*\(\d+\)$", "", value).strip()


def _rate_gbps(width: str | None, speed: str | None) -> float | None:
    # -v prints `active_width: 4X (2)` and `active_speed: 25.0 Gbps (32)`: rate = lanes x lane speed
    if width is None or speed is None:
        return None
    lanes = re.match(r"(\d+)X", width)
    lane = re.match(r"([\d.]+)\s*Gbps", speed)
    if not lanes or not lane:
        return None
    return round(int(lanes.group(1)) * float(lane.group(1)), 3)


class _Port:
    def __init__(self, number: int, line: int) -> None:
        self.number = number
        self.line = line
        self.fields: dict[str, str] = {}
        self.lines: dict[str, int] = {}


class _Device:
    def __init__(self, name: str, line: int) -> None:
        self.name = name
        self.line = line
        self.fields: dict[str, tuple[str, int]] = {}
        self.ports: list[_Port] = []


def _read_devinfo_blocks(
    text: str, source: str
) -> tuple[list[_Device], list[GidEntry], int]:
    """The device blocks, the GIDs of -v output, and the number of the last non-blank line."""
    devices: list[_Device] = []
    gids: list[GidEntry] = []
    device: _Device | None = None
    port: _Port | None = None
    last = 0
    for number, line in clean_lines(text):
        if not line.strip():
            continue
        if device is not None or _HCA.match(line):
            last = number
        hca = _HCA.match(line)
        if hca:
            device = _Device(hca.group(1), number)
            devices.append(device)
            port = None
            continue
        if device is None:
            continue  # preamble: prompt, comments, another tool's output pasted before
        if not line[0].isspace():
            if is_shell_prompt(line):
                device = port = None  # the ibv_devinfo output ended; another command follows
                continue
            if line.startswith(_DEVINFO_NOISE) or _is_comment(line):
                continue
            raise ParseError(f"unexpected line in ibv_devinfo output: {shown(line)}",
                             source=source, line=number)
        port_match = _PORT.match(line)
        if port_match:
            port = _Port(_int(port_match.group(1), "port number", source, number), number)
            device.ports.append(port)
            continue
        gid = _GID_V.match(line)
        if gid and port is not None:
            gids.append(_gid_from_devinfo(device.name, port.number, gid, source, number))
            continue
        key_value = _KEY_VALUE.match(line)
        if not key_value:
            continue  # -v prints capability flag names and sub-tables on lines of their own
        key, value = key_value.group(1), key_value.group(2).strip()
        if port is not None:
            if key not in port.fields:
                port.fields[key] = value
                port.lines[key] = number
        else:
            device.fields.setdefault(key, (value, number))
    return devices, gids, last


def _gid_from_devinfo(
    device: str, port: int, match: re.Match[str], source: str, line: int
) -> GidEntry:
    index, gid, kind = int(match.group(1)), match.group(2), (match.group(3) or "").strip()
    try:
        ipaddress.IPv6Address(gid)
    except ValueError:
        raise ParseError(f"GID {shown(gid)} is not a 128-bit GID", source=source, line=line) from None
    gid_type: GidType | None = None
    if kind in ("RoCE v1", "RoCE v2", "IB"):
        gid_type = kind  # type: ignore[assignment]
    return GidEntry(device=device, port=port, index=index, gid=gid, ipv4=gid_ipv4(gid),
                    type=gid_type)


def parse_ibv_devinfo(text: str, source: str = "<input>", notes: list[str] | None = None) -> list[Nic]:
    """`ibv_devinfo` or `ibv_devinfo -v`: one `Nic` per (device, port), in the order printed.

    With `-v` the GID lines (`GID[  3]: ::ffff:10.0.0.1, RoCE v2`) also fill `gid_index`.
    `No IB devices found` (what ibv_devinfo prints on a node without RDMA devices) gives [].
    A cut record keeps its state unknown and appends a note to `notes`; `ParseError` only when
    no port's state is left.
    """
    devices, gids, last = _read_devinfo_blocks(text, source)
    if not devices:
        if _NO_DEVICES.search(text):
            return []
        raise ParseError("no `hca_id:` line: not ibv_devinfo output", source=source, line=1)
    problems: list[tuple[str, int]] = []
    nics: list[Nic] = []
    for device in devices:
        nics.extend(_nics_of(device, source, last, problems))
    if not any(nic.state is not None for nic in nics):
        message, line = problems[0] if problems else ("no port state in the output", devices[0].line)
        raise ParseError(message, source=source, line=line)
    if notes is not None:
        notes.extend(f"{source}:{line}: {message}; its state is unknown" for message, line in problems)
    return merge_gids(nics, gids) if gids else nics


def _nics_of(device: _Device, source: str, last: int, problems: list[tuple[str, int]]) -> list[Nic]:
    fields = {key: value for key, (value, _) in device.fields.items()}
    if not device.fields and not device.ports and device.line == last:
        problems.append((f"the output stops right after `hca_id: {device.name}`: device name may be cut",
                         device.line))
        return []
    part_id: int | None = None
    if "vendor_part_id" in fields:
        part_id = _int(fields["vendor_part_id"], "vendor_part_id", source,
                       device.fields["vendor_part_id"][1])
    vendor_id = fields.get("vendor_id")
    transport_name = _value_head(fields.get("transport", ""))
    common: dict[str, object] = {
        "name": device.name,
        "transport": _TRANSPORTS.get(transport_name, "unknown") if "transport" in fields else None,
        "vendor_id": vendor_id,
        "vendor_part_id": part_id,
        "model": model_name(vendor_id, part_id),
        "fw_ver": fields.get("fw_ver"),
        "board_id": fields.get("board_id"),
        "sys_image_guid": fields.get("sys_image_guid"),
    }
    if "transport" not in fields:
        problems.append((f"device {device.name} has no `transport:` line: output truncated?", device.line))
    if not device.ports:
        problems.append((f"device {device.name} has no `port:` section: output truncated?", device.line))
        return [Nic.model_validate(common)]
    nics = []
    for port in device.ports:
        state = _port_state(device.name, port, last, problems)
        link_layer = port.fields.get("link_layer")
        nics.append(Nic.model_validate({
            **common,
            "port": port.number,
            "link_layer": link_layer if link_layer in ("Ethernet", "InfiniBand") else None,
            "state": state,
            "rate_gbps": _rate_gbps(port.fields.get("active_width"), port.fields.get("active_speed")),
            "active_mtu": _port_mtu(port, "active_mtu", source, last, problems),
            "max_mtu": _port_mtu(port, "max_mtu", source, last, problems),
        }))
    return nics


def _port_state(device: str, port: _Port, last: int, problems: list[tuple[str, int]]) -> str | None:
    if "state" not in port.fields:
        problems.append((f"port {port.number} of {device} has no `state:` line: output truncated?", port.line))
        return None
    match = _DEVINFO_STATE.match(port.fields["state"])
    if match is None:
        cut = "cut" if port.lines["state"] == last else "not one ibv_devinfo prints"
        problems.append((f"port {port.number} of {device}: state {shown(port.fields['state'])} is {cut} "
                         "(expected e.g. `PORT_ACTIVE (4)`)", port.lines["state"]))
        return None
    return match.group(1)


def _port_mtu(port: _Port, key: str, source: str, last: int, problems: list[tuple[str, int]]) -> int | None:
    value = port.fields.get(key)
    if value is None:
        return None
    line = port.lines[key]
    if line == last and not _DEVINFO_VALUE.match(value):
        problems.append((f"port {port.number}: {key} {shown(value)} is cut", line))
        return None
    return _int(_value_head(value), "MTU", source, line)


# --------------------------------------------------------------------------------------------
# ibstat
# --------------------------------------------------------------------------------------------

_CA = re.compile(r"^CA '([^']+)'$")
_IBSTAT_PORT = re.compile(r"^\s+Port (\d+):$")
_IBSTAT_KV = re.compile(r"^\s+([A-Za-z][\w ]*?):\s*(.*)$")


def looks_like_ibstat(text: str) -> bool:
    return bool(re.search(r"^CA '[^']+'", text, re.M)) and "CA type:" in text


def _guid_colons(value: str) -> str:
    # ibstat prints 0x0c42a103001dd12a; ibv_devinfo prints 0c42:a103:001d:d12a. Use the latter
    # so NICs from both tools join on sys_image_guid.
    digits = value.lower().removeprefix("0x").rjust(16, "0")
    return ":".join(digits[i:i + 4] for i in range(0, 16, 4))


# infiniband-diags ibstat.c port_state_str: what a complete `State:` line says.
_IBSTAT_STATES = frozenset({"Down", "Initializing", "Armed", "Active"})


class _Ca:
    def __init__(self, name: str, line: int) -> None:
        self.name = name
        self.line = line
        self.fields: dict[str, str] = {}
        self.ports: list[_Port] = []


def parse_ibstat(text: str, source: str = "<input>", notes: list[str] | None = None) -> list[Nic]:
    """`ibstat`: one `Nic` per (CA, port). `ibstat` shows no vendor id or transport: left None.

    A cut CA or port keeps its state unknown with a note in `notes`; `ParseError` only when no
    port's state is left.
    """
    cas: list[_Ca] = []
    port: _Port | None = None
    last = 0
    for number, line in clean_lines(text):
        if not line.strip():
            continue
        ca_match = _CA.match(line)
        if ca_match:
            cas.append(_Ca(ca_match.group(1), number))
            port, last = None, number
            continue
        if not cas:
            continue
        if not line[0].isspace():
            # ibstat's own warnings ("ibwarn: ...", "ibpanic: ...") and a prompt after the output
            if line.startswith(("ibwarn:", "ibpanic:")) or _is_comment(line):
                continue
            if is_shell_prompt(line):
                break
            raise ParseError(f"unexpected line in ibstat output: {shown(line)}",
                             source=source, line=number)
        last = number
        port_match = _IBSTAT_PORT.match(line)
        if port_match:
            port = _Port(int(port_match.group(1)), number)
            cas[-1].ports.append(port)
            continue
        key_value = _IBSTAT_KV.match(line)
        if key_value is None:
            raise ParseError(f"unexpected line in ibstat output: {shown(line)}",
                             source=source, line=number)
        key, value = key_value.group(1), key_value.group(2)
        if port is not None:
            port.fields[key] = value
            port.lines[key] = number
        else:
            cas[-1].fields[key] = value
    if not cas:
        raise ParseError("no `CA '...'` line: not ibstat output", source=source, line=1)
    problems: list[tuple[str, int]] = []
    nics: list[Nic] = []
    for ca in cas:
        if not ca.ports:
            problems.append((f"CA {ca.name} has no port section: output truncated?", ca.line))
            nics.append(_ibstat_nic(ca, None, source, last, problems))
        nics.extend(_ibstat_nic(ca, p, source, last, problems) for p in ca.ports)
    if not any(nic.state is not None for nic in nics):
        message, at = problems[0]
        raise ParseError(message, source=source, line=at)
    if notes is not None:
        notes.extend(f"{source}:{at}: {message}; its state is unknown" for message, at in problems)
    return nics


def _ibstat_nic(ca: _Ca, port: _Port | None, source: str, last: int, problems: list[tuple[str, int]]) -> Nic:
    part_id: int | None = None
    ca_type = ca.fields.get("CA type", "")
    if re.fullmatch(r"MT\d+", ca_type):
        part_id = int(ca_type[2:])
    fields = port.fields if port is not None else {}
    rate: float | None = None
    if "Rate" in fields and port is not None:
        try:
            rate = float(fields["Rate"].split()[0])
        except (ValueError, IndexError):
            if port.lines["Rate"] != last:
                raise ParseError(f"Rate {shown(fields['Rate'])} is not a number", source=source,
                                 line=port.lines["Rate"]) from None
            problems.append((f"port {port.number} of {ca.name}: Rate {shown(fields['Rate'])} is cut", last))
    state = fields.get("State")
    if port is not None and state is None:
        problems.append((f"port {port.number} of {ca.name} has no `State:` line: output truncated?", port.line))
    elif port is not None and state not in _IBSTAT_STATES:
        cut = "cut" if port.lines["State"] == last else "not one ibstat prints"
        problems.append((f"port {port.number} of {ca.name}: State {shown(state or '')} is {cut}",
                         port.lines["State"]))
        state = None
    link_layer = fields.get("Link layer")
    guid = ca.fields.get("System image GUID")
    return Nic(
        name=ca.name,
        port=port.number if port is not None else None,
        link_layer=link_layer if link_layer in ("Ethernet", "InfiniBand") else None,
        vendor_part_id=part_id,
        # `CA type: MT4129` is a Mellanox part id; other providers print their own words
        # ("Broadcom NetXtreme-C/E RoCE Driver HCA"), kept as the model where there are any.
        model=model_name(None, part_id) if ca_type.startswith("MT") else (ca_type or None),
        fw_ver=ca.fields.get("Firmware version"),
        sys_image_guid=_guid_colons(guid) if guid else None,
        state=state,
        rate_gbps=rate,
    )


# --------------------------------------------------------------------------------------------
# GID tables: show_gids and sysfs
# --------------------------------------------------------------------------------------------

_SHOW_GIDS_HEADER = re.compile(r"^DEV\s+PORT\s+INDEX\s+GID\s+IPv4\s+VER\s+DEV$")
_GID_COUNT = re.compile(r"^n_gids_found=(\d+)$")


def looks_like_show_gids(text: str) -> bool:
    # Indented pastes (a comment's list item) keep the table readable: the header may be indented.
    return bool(re.search(r"^[ \t]*DEV\s+PORT\s+INDEX\s+GID\s", text, re.M))


def parse_show_gids(text: str, source: str = "<input>", notes: list[str] | None = None) -> list[GidEntry]:
    """The `show_gids` script (MLNX_OFED / DOCA): one `GidEntry` per row.

    A paste may hold several tables with prose between them (two pods, two hosts): a line that is not
    a row ends a table, and the next header starts another. A device that two tables both list is
    kept from the first only (the tables come from different hosts), with a note naming the RoCE v2
    IPv4 index each table gives. A last row that cannot be read (cut) is left out with a note.
    """
    tables: list[list[GidEntry]] = []
    rows: list[tuple[int, str]] = []
    in_table = False
    found_header = 0

    def close(last_cut: bool) -> None:
        if not rows:
            return
        read = [_show_gids_row(row, source, number) for number, row in rows[:-1]]
        try:
            read.append(_show_gids_row(rows[-1][1], source, rows[-1][0]))
        except ParseError as error:
            if not read or not last_cut:
                raise
            if notes is not None:
                notes.append(f"{source}:{rows[-1][0]}: the last show_gids row cannot be read (cut?): left out "
                             f"({error.message})")
        tables.append(read)
        rows.clear()

    for number, line in clean_lines(text):
        stripped = line.strip()
        if _SHOW_GIDS_HEADER.match(stripped):
            close(last_cut=False)
            in_table, found_header = True, found_header or number
            continue
        if not in_table:
            continue
        if not stripped or set(stripped.replace("\t", "").replace(" ", "")) == {"-"}:
            continue
        count = _GID_COUNT.match(stripped)
        if count:
            expected = int(count.group(1))
            close(last_cut=False)
            if tables and expected != len(tables[-1]):
                raise ParseError(f"n_gids_found={expected} but {len(tables[-1])} rows were "
                                 "read: table truncated?", source=source, line=number)
            in_table = False
            continue
        if is_shell_prompt(stripped) or _is_comment(stripped) or not _looks_like_gid_row(stripped):
            close(last_cut=False)  # prose or another command's output: the table ended here
            in_table = False
            continue
        rows.append((number, line))
    close(last_cut=True)
    if not found_header:
        raise ParseError("no `DEV PORT INDEX GID IPv4 VER DEV` header: not show_gids output",
                         source=source, line=1)
    if not tables:
        raise ParseError("show_gids table has no rows", source=source, line=found_header)
    return _first_table_per_device(tables, source, notes)


def _looks_like_gid_row(line: str) -> bool:
    cells = line.split()
    return len(cells) >= 5 and cells[1].isdigit() and cells[2].isdigit() and ":" in cells[3]


def _first_table_per_device(tables: list[list[GidEntry]], source: str, notes: list[str] | None) -> list[GidEntry]:
    kept: list[GidEntry] = []
    owner: dict[tuple[str, int], int] = {}
    for number, table in enumerate(tables, 1):
        for entry in table:
            first = owner.setdefault((entry.device, entry.port), number)
            if first == number:
                kept.append(entry)
    if notes is not None:
        for (device, port), first in owner.items():
            indexes = [_v2_ipv4_index([e for e in table if (e.device, e.port) == (device, port)])
                       for table in tables]
            shown_in = [f"table {n}: {i if i is not None else 'none'}" for n, i in enumerate(indexes, 1)
                        if any((e.device, e.port) == (device, port) for e in tables[n - 1])]
            if len(shown_in) > 1:
                notes.append(f"{source}: {len(shown_in)} show_gids tables list {device} port {port} (from different "
                             f"hosts or pods?); its RoCE v2 IPv4 GID index by table: {', '.join(shown_in)}; "
                             f"table {first} is kept: give each host's capture on its own")
    return kept


def roce_v2_ipv4(entries: list[GidEntry]) -> GidEntry | None:
    """The GID NCCL_IB_GID_INDEX must name on RoCE: the lowest-index RoCE v2 GID carrying an IPv4
    address, or None."""
    return min((e for e in entries if e.type == "RoCE v2" and e.ipv4), key=lambda e: e.index, default=None)


def _v2_ipv4_index(entries: list[GidEntry]) -> int | None:
    found = roce_v2_ipv4(entries)
    return found.index if found is not None else None


def _show_gids_row(line: str, source: str, number: int) -> GidEntry:
    # Columns are tab-separated but the IPv4 cell is empty for link-local GIDs, so split on
    # whitespace and find the version cell (v1/v2) instead of counting tabs.
    cells = line.split()
    versions = [i for i, cell in enumerate(cells) if cell in ("v1", "v2")]
    if len(cells) < 5 or not versions or versions[0] not in (4, 5):
        raise ParseError(f"cannot read show_gids row {shown(line)}", source=source, line=number)
    ver = versions[0]
    device, port, index, gid = cells[0], cells[1], cells[2], cells[3]
    ipv4 = cells[4] if ver == 5 else None
    netdev = cells[ver + 1].rstrip(".,;") if len(cells) > ver + 1 else None  # "net1." at the end of a sentence
    try:
        ipaddress.IPv6Address(gid)
        if ipv4 is not None:
            ipaddress.IPv4Address(ipv4)
    except ValueError:
        raise ParseError(f"cannot read show_gids row {shown(line)}", source=source,
                         line=number) from None
    return GidEntry(
        device=device,
        port=_int(port, "port", source, number),
        index=_int(index, "GID index", source, number),
        gid=gid,
        ipv4=ipv4 or gid_ipv4(gid),
        type="RoCE v2" if cells[ver] == "v2" else "RoCE v1",
        netdev=netdev,
    )


# `GID[  3]:  ::ffff:10.0.0.1, RoCE v2` wherever it is: `ibv_devinfo -v | grep GID`, the tail of an
# `ibv_devinfo -v` without its hca_id line, or a page that flattened the lines into one.
_GID_ANYWHERE = re.compile(r"GID\[\s*(\d+)\]:\s*([0-9A-Fa-f:.]+)(,\s*(?:RoCE v[12]|IB))?")
_DEVICE_ARG = re.compile(r"(?:^|\s)(?:-d|--ib-dev)[= ]\s*([\w.-]+)|^hca_id:\s*(\S+)", re.M)
# `cat /sys/class/infiniband/<dev>/ports/<p>/gids/<i or *>` followed by bare GID values.
# Each part is bounded by its terminator (no lazy \S+?): a path repeated over a 1 MB line stays linear.
_SYSFS_CAT = re.compile(r"/sys/class/infiniband/([^/\s]+)/ports/(\d+|\*)/gids/(\d+|\*)(?=[`'\s|]|$)")
_BARE_GID = re.compile(r"^[\s`]*([0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7})[\s`]*$")
UNNAMED = "(device not named)"
_GID_NOTES = 5  # notes about unreadable GIDs before the rest are counted in one


def looks_like_gid_lines(text: str) -> bool:
    return bool(re.search(r"GID\[\s*\d+\]:\s*[0-9A-Fa-f:]", text)) or (
        bool(_SYSFS_CAT.search(text)) and bool(re.search(_BARE_GID.pattern, text, re.M)))


def parse_gid_lines(text: str, source: str = "<input>", notes: list[str] | None = None) -> list[GidEntry]:
    """GID lines out of their table: `ibv_devinfo -v` GID lines (grep'd, a port section without its
    hca_id, a flattened paste) and a `cat` of sysfs GID files. The device is the `-d X` / `hca_id:` the
    text names, else unnamed; a GID printed without `, RoCE v2` keeps its RoCE version unknown.

    A `cat` of `gids/*` prints the files in the shell's name order (0, 1, 10, 100, ...) without
    their names, and no `gid_attrs/types`: its GIDs are reported, their index and version are not."""
    body = "\n".join(line for line in text.splitlines() if not line.startswith("# source:"))
    named = [m.group(1) or m.group(2) for m in _DEVICE_ARG.finditer(body)]
    device = named[0] if len(set(named)) == 1 else UNNAMED
    entries: list[GidEntry] = []
    bad = 0
    for number, line in clean_lines(text):
        for match in _GID_ANYWHERE.finditer(line):
            gid, kind = match.group(2), (match.group(3) or "").lstrip(", ").strip()
            try:
                ipaddress.IPv6Address(gid)
            except ValueError:
                bad += 1
                if notes is not None and bad <= _GID_NOTES:
                    notes.append(f"{source}:{number}: GID[{match.group(1)}] {shown(gid)} is not a whole GID (cut?): "
                                 "left out")
                continue
            entries.append(GidEntry(device=device, port=1, index=int(match.group(1)), gid=gid.lower(),
                                    ipv4=gid_ipv4(gid), type=kind or None))
    if notes is not None and bad > _GID_NOTES:
        notes.append(f"{source}: {bad - _GID_NOTES} more GID(s) that are not whole GIDs left out")
    if entries and notes is not None:
        if device == UNNAMED:
            index = _v2_ipv4_index(entries)
            notes.append(f"{source}: GID lines without the device they belong to (no `-d` or hca_id line): the "
                         "device is not known; its RoCE v2 GID with an IPv4 address: "
                         + (f"index {index}" if index is not None else "none in these lines"))
        if any(e.type is None for e in entries):
            notes.append(f"{source}: some GIDs are printed without `, RoCE v1/v2` (older rdma-core): their RoCE "
                         "version, so the RoCE v2 index, is unknown")
    if not entries:
        cat = _SYSFS_CAT.search(text)
        values = [m.group(1) for _, line in clean_lines(text) if (m := _BARE_GID.match(line))]
        real = [v for v in values if int(ipaddress.IPv6Address(v)) != 0]
        if cat is None or not values:
            raise ParseError("no `GID[n]:` line and no sysfs GID dump: not a GID listing", source=source, line=1)
        if notes is not None:
            where = cat.group(1) if cat.group(1) != "*" else "a device the glob picked"
            ipv4 = [a for v in real if (a := gid_ipv4(v))]
            notes.append(f"{source}: a `cat` of sysfs GID files of {where}: {len(real)} GID(s) set"
                         f"{' (IPv4 ' + ', '.join(ipv4) + ')' if ipv4 else ''}; their indexes and RoCE versions cannot "
                         "be read from it (the shell lists the files 0, 1, 10, 100, ... without names, and "
                         "gid_attrs/types is not in it): run show_gids, or grep . on the gids/ and types/ files")
    return entries


# A sysfs attribute is at most a page; a copied one is one line.
SYSFS_VALUE_LIMIT = 4096
# Entries one copy may hold in all: 16 devices x 2 ports x 256 GID slots is 8,192 real ones.
SYSFS_ENTRY_LIMIT = 65536


def _read_text(path: Path) -> str | None:
    """A copied attribute's value; None where the copy has none (gather.sh skips what it cannot read)."""
    if not regular_or_absent(path):  # a link, a FIFO or a device: refused in the bundle's own words
        return None
    data = read_bounded(path, limit=SYSFS_VALUE_LIMIT, what="sysfs value", follow=False)
    return data.decode("utf-8", errors="replace").strip()


def _no_link(path: Path) -> None:
    if path.is_symlink():
        raise FileError(path, "is a symbolic link; gpuctl does not follow links inside a bundle "
                              "(gather.sh copies the GID tables as files)")


def _entries(directory: Path, walked: list[int]) -> list[Path]:
    """`directory`'s entries, naturally sorted (none when it is not a directory); a link at or in it
    is refused, and every entry counts in `walked` against SYSFS_ENTRY_LIMIT."""
    _no_link(directory)
    if not directory.is_dir():
        return []
    found = []
    try:
        with os.scandir(directory) as listing:
            for entry in listing:
                walked[0] += 1
                if walked[0] > SYSFS_ENTRY_LIMIT:
                    raise FileError(directory, f"the copy of /sys/class/infiniband holds more than "
                                               f"{SYSFS_ENTRY_LIMIT:,} entries, far more than a node's GID tables")
                if entry.is_symlink():
                    _no_link(Path(entry.path))
                found.append(Path(entry.path))
    except OSError as error:
        raise FileError(directory, f"cannot be listed ({error.strerror or type(error).__name__})") from None
    return sorted(found, key=lambda d: natural_key(d.name))


def parse_sysfs_gids(root: Path) -> list[GidEntry]:
    """GIDs from a copy of `/sys/class/infiniband` as gather.sh writes it: `<dev>/ports/<p>/gids/<i>`,
    `gid_attrs/types/<i>` and `gid_attrs/ndevs/<i>`. Empty (all-zero) slots are skipped."""
    entries: list[GidEntry] = []
    _no_link(root)
    if not root.is_dir():
        raise ParseError("not a directory (expected a copy of /sys/class/infiniband)",
                         source=str(root))
    walked = [0]
    for device_dir in _entries(root, walked):
        for port_dir in _entries(device_dir / "ports", walked):
            if not port_dir.name.isdigit():
                raise ParseError("port directory name is not a number", source=str(port_dir))
            entries.extend(_sysfs_port_gids(device_dir.name, port_dir, walked))
    return entries


def _sysfs_port_gids(device: str, port_dir: Path, walked: list[int]) -> list[GidEntry]:
    attrs = port_dir / "gid_attrs"
    for directory in (attrs, attrs / "types", attrs / "ndevs"):
        _no_link(directory)  # the files below are read by name
    link_layer = _read_text(port_dir / "link_layer")
    entries = []
    for gid_file in _entries(port_dir / "gids", walked):
        if not gid_file.name.isdigit():
            continue
        gid = _read_text(gid_file)
        if gid is None:
            continue
        try:
            if int(ipaddress.IPv6Address(gid)) == 0:
                continue
        except ValueError:
            raise ParseError(f"GID {shown(gid)} is not a 128-bit GID", source=str(gid_file),
                             line=1) from None
        raw_type = _read_text(port_dir / "gid_attrs" / "types" / gid_file.name)
        entries.append(GidEntry(
            device=device,
            port=int(port_dir.name),
            index=int(gid_file.name),
            gid=gid,
            ipv4=gid_ipv4(gid),
            type=_sysfs_gid_type(raw_type, link_layer),
            netdev=_read_text(port_dir / "gid_attrs" / "ndevs" / gid_file.name) or None,
        ))
    return entries


def _sysfs_gid_type(raw: str | None, link_layer: str | None) -> GidType | None:
    # The kernel names v1 "IB/RoCE v1" because IB and RoCE v1 share the type; the port's
    # link layer tells them apart.
    if raw == "RoCE v2":
        return "RoCE v2"
    if raw == "IB/RoCE v1":
        return "IB" if link_layer == "InfiniBand" else "RoCE v1"
    return None


def merge_gids(nics: list[Nic], gids: list[GidEntry]) -> list[Nic]:
    """Set each NIC's `gid_index`/`gid_ipv4` to its lowest RoCE v2 GID carrying an IPv4 address
    (what NCCL_IB_GID_INDEX must name on RoCE), and its netdev where still unknown."""
    merged = []
    for nic in nics:
        own = [g for g in gids if g.device == nic.name and (nic.port is None or g.port == nic.port)]
        update: dict[str, object] = {}
        roce_v2 = roce_v2_ipv4(own)
        if roce_v2 is not None:
            update["gid_index"] = roce_v2.index
            update["gid_ipv4"] = roce_v2.ipv4
        netdevs = [g.netdev for g in own if g.netdev]
        if nic.netdev is None and netdevs:
            update["netdev"] = netdevs[0]
        merged.append(nic.model_copy(update=update) if update else nic)
    return merged


# --------------------------------------------------------------------------------------------
# ibdev2netdev and `rdma link`: which netdev carries each RDMA device
# --------------------------------------------------------------------------------------------

_IBDEV2NETDEV = re.compile(r"^(\S+)\s+port\s+(\d+)\s+<?==>\s+(\S+)\s+\((\w+)\*?\)(?:\s+#.*)?$")
_RDMA_LINK = re.compile(r"^link\s+(\S+)/(\d+)\s+(.*)$")


def looks_like_ibdev2netdev(text: str) -> bool:
    return bool(re.search(r"^\S+\s+port\s+\d+\s+<?==>\s+\S+\s+\(", text, re.M))


def looks_like_rdma_link(text: str) -> bool:
    return bool(re.search(r"^link\s+\S+/\d+\s+.*\bstate\s+\S+", text, re.M))


def _key(mapping: dict[str, tuple[str, str]], device: str, port: int) -> str:
    # One entry per device; a second port of a multi-port HCA is keyed "device/port".
    return device if device not in mapping and port == 1 else f"{device}/{port}"


_RDMA_LINK_STATES = frozenset({"ACTIVE", "DOWN", "INIT", "ARMED", "NOP", "ACTIVE_DEFER"})


def _last_content_line(text: str) -> int:
    return max((number for number, line in clean_lines(text) if line.strip()), default=0)


def parse_ibdev2netdev(text: str, source: str = "<input>",
                       notes: list[str] | None = None) -> dict[str, tuple[str, str]]:
    """`ibdev2netdev`: hca -> (netdev, state as printed: "Up"/"Down").

    A last line cut before its `(Up)`/`(Down)` is left out with a note in `notes`.
    """
    mapping: dict[str, tuple[str, str]] = {}
    last = _last_content_line(text)
    others: list[int] = []
    for number, line in clean_lines(text):
        if "==>" not in line or is_shell_prompt(line):
            if not line.strip() or is_shell_prompt(line) or _is_comment(line):
                continue
            if number == last and mapping and notes is not None:
                notes.append(f"{source}:{number}: the last ibdev2netdev line is cut ({shown(line)}): left out")
            elif number != last:
                others.append(number)
            continue
        match = _IBDEV2NETDEV.match(line.strip())
        if not match:
            if number == last and mapping:
                if notes is not None:
                    notes.append(f"{source}:{number}: the last ibdev2netdev line is cut ({shown(line)}): left out")
                continue
            raise ParseError(f"cannot read ibdev2netdev line {shown(line)}", source=source,
                             line=number)
        device, port, netdev, state = match.groups()
        mapping[_key(mapping, device, int(port))] = (netdev, state)
    if not mapping:
        raise ParseError("no `<hca> port <n> ==> <netdev> (<state>)` line: not ibdev2netdev "
                         "output", source=source, line=1)
    after = [n for n in others if n > min(_ibdev_lines(text))]  # what precedes is another command's output
    if after and notes is not None:
        notes.append(f"{source}:{after[0]}: {len(after)} line(s) after the first ibdev2netdev line are not "
                     "ibdev2netdev output: skipped (a damaged or mixed paste?)")
    return mapping


def _ibdev_lines(text: str) -> list[int]:
    return [number for number, line in clean_lines(text) if "==>" in line and not is_shell_prompt(line)]


def parse_rdma_link(text: str, source: str = "<input>",
                    notes: list[str] | None = None) -> dict[str, tuple[str, str]]:
    """`rdma link [show]`: hca -> (netdev, state). A port without a netdev (InfiniBand) maps to
    an empty netdev, never to a guessed one. A last line cut in its state is left out with a note."""
    mapping: dict[str, tuple[str, str]] = {}
    last = _last_content_line(text)
    for number, line in clean_lines(text):
        match = _RDMA_LINK.match(line)
        if not match:
            continue
        device, port, rest = match.group(1), int(match.group(2)), match.group(3)
        state = re.search(r"\bstate\s+(\S+)", rest)
        if state is None or state.group(1) not in _RDMA_LINK_STATES:
            if number == last and mapping:
                if notes is not None:
                    notes.append(f"{source}:{number}: the last `rdma link` line is cut ({shown(line)}): left out")
                continue
            what = "without a state" if state is None else f"with state {shown(state.group(1))}"
            raise ParseError(f"`rdma link` line {what}: {shown(line)}", source=source, line=number)
        netdev = re.search(r"\bnetdev\s+(\S+)", rest)
        mapping[_key(mapping, device, port)] = (netdev.group(1) if netdev else "", state.group(1))
    if not mapping:
        raise ParseError("no `link <hca>/<port> state ...` line: not `rdma link` output",
                         source=source, line=1)
    return mapping
