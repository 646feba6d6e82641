"""Linux interfaces from iproute2: `ip -j addr`, `ip -j [-d] link` and `ip -br addr`.

The JSON forms are preferred (stable keys); `ip -br` is what people paste. Interface kind
(bond, bridge, veth, vlan ...) is only in `linkinfo`, which `ip` prints with `-d`; without it the
kind stays None rather than guessed from flags. Membership (`master`) is printed either way.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from toolkit.errors import ParseError
from toolkit.topology.model import Interface
from toolkit.topology.text import clean_lines, is_shell_prompt, shown

_OPERSTATES = {"UP", "DOWN", "UNKNOWN", "LOWERLAYERDOWN", "DORMANT", "NOTPRESENT", "TESTING"}
_MAC = re.compile(r"^[0-9a-f]{2}(?::[0-9a-f]{2}){5,19}$", re.I)


def _json_body(text: str) -> tuple[str, int]:
    """The JSON document and the number of lines before it (a `# source:` header or a prompt)."""
    lines = text.splitlines(keepends=True)
    skipped = 0
    while skipped < len(lines) and not lines[skipped].lstrip().startswith(("[", "{")):
        skipped += 1
    return "".join(lines[skipped:]), skipped


def looks_like_ip_addr_json(text: str) -> bool:
    body, _ = _json_body(text)
    return body.lstrip().startswith("[") and '"ifname"' in body and '"addr_info"' in body


def looks_like_ip_link_json(text: str) -> bool:
    body, _ = _json_body(text)
    return (body.lstrip().startswith("[") and '"ifname"' in body and '"addr_info"' not in body
            and '"operstate"' in body)


def looks_like_ip_brief(text: str) -> bool:
    """`ip -br addr`: the first table line is `NAME STATE [ADDRESS...]` with a kernel operstate,
    and the loopback is listed first (the kernel always numbers `lo` 1)."""
    for _, line in clean_lines(text):
        cells = line.split()
        if not cells or line.startswith("#") or is_shell_prompt(line):
            continue
        return len(cells) >= 2 and cells[0] == "lo" and cells[1] in _OPERSTATES
    return False


def _load(text: str, source: str) -> list[dict[str, Any]]:
    body, skipped = _json_body(text)
    if not body.strip():
        raise ParseError("no JSON array: expected the output of `ip -j ...`", source=source, line=1)
    try:
        data = json.loads(body)
    except json.JSONDecodeError as error:
        raise ParseError(f"invalid JSON: {error.msg}", source=source,
                         line=error.lineno + skipped) from None
    except RecursionError:  # `[[[[...` past Python's depth: no `ip -j` output nests more than three
        raise ParseError("invalid JSON: nested far deeper than `ip -j` output", source=source,
                         line=skipped + 1) from None
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise ParseError("expected a JSON array of interfaces (output of `ip -j addr`/`link`)",
                         source=source, line=skipped + 1)
    return data


def _line_of(text: str, key: str, value: object) -> int | None:
    """The line where `"key": value` first appears (`ip -j` is compact, `ip -j -p` spaced)."""
    shown = f'"{value}"' if isinstance(value, str) else str(value)
    pattern = re.compile(rf'"{key}"\s*:\s*{re.escape(shown)}(?![\w.])')
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.search(line):
            return number
    return None


def _interface(item: dict[str, Any], text: str, source: str) -> Interface:
    name = item.get("ifname")
    if not isinstance(name, str) or not name:
        index = item.get("ifindex")
        raise ParseError(f"interface without an `ifname` (ifindex {shown(str(index))})", source=source,
                         line=_line_of(text, "ifindex", index) if index is not None else None)
    mtu = item.get("mtu")
    if mtu is not None and not isinstance(mtu, int):
        raise ParseError(f"{shown(name)}: mtu {shown(str(mtu))} is not a number", source=source,
                         line=_line_of(text, "ifname", name))
    linkinfo = item.get("linkinfo") or {}
    ipv4: list[str] = []
    ipv6: list[str] = []
    for address in item.get("addr_info") or []:
        if not isinstance(address, dict) or "local" not in address:
            continue  # `ip -j addr` on an interface without addresses prints `{}` entries
        cidr = f"{address['local']}/{address.get('prefixlen', 32 if address.get('family') == 'inet' else 128)}"
        if address.get("family") == "inet":
            ipv4.append(cidr)
        elif address.get("family") == "inet6":
            ipv6.append(cidr)
    mac = item.get("address")
    return Interface(
        name=name,
        mtu=mtu,
        state=item.get("operstate"),
        kind=linkinfo.get("info_kind") if isinstance(linkinfo, dict) else None,
        master=item.get("master"),
        ipv4=ipv4,
        ipv6=ipv6,
        mac=mac if item.get("link_type") == "ether" and isinstance(mac, str) else None,
    )


def parse_ip_addr_json(text: str, source: str = "<input>") -> list[Interface]:
    """`ip -j addr` (or `ip -j -d addr`): interfaces with MTU, state, master and addresses."""
    return [_interface(item, text, source) for item in _load(text, source)]


def parse_ip_link_json(text: str, source: str = "<input>") -> list[Interface]:
    """`ip -j link` or `ip -j -d link` (the latter adds the kind: bond, bridge, veth ...)."""
    return [_interface(item, text, source) for item in _load(text, source)]


def parse_ip_brief(text: str, source: str = "<input>") -> list[Interface]:
    """`ip -br addr` (`ip -br a`): name, operstate, addresses. Stops at the next shell prompt,
    so a pasted transcript (`ip -br a` then `ibdev2netdev`) yields only the interfaces."""
    interfaces: list[Interface] = []
    started = False
    for number, line in clean_lines(text):
        if not line.strip() or line.startswith("# "):
            continue
        if is_shell_prompt(line):
            if started:
                break
            continue
        cells = line.split()
        if len(cells) < 2 or cells[1] not in _OPERSTATES:
            if not started:
                continue  # not yet in the table: some other text before it
            raise ParseError(f"cannot read `ip -br` line {shown(line)}", source=source,
                             line=number)
        started = True
        interfaces.append(_brief_interface(cells, source, number))
    if not interfaces:
        raise ParseError("no `NAME STATE ADDRESS...` line: not `ip -br addr` output",
                         source=source, line=1)
    return interfaces


def _brief_interface(cells: list[str], source: str, number: int) -> Interface:
    # "va0@vb0": the part after @ is the peer/parent, not part of the name.
    name = cells[0].split("@", 1)[0]
    ipv4: list[str] = []
    ipv6: list[str] = []
    mac: str | None = None
    for cell in cells[2:]:
        if _MAC.match(cell):
            mac = cell  # `ip -br link` puts the MAC here
            continue
        if cell.startswith("<"):
            continue  # `ip -br link` flags: <BROADCAST,MULTICAST,UP,LOWER_UP>
        try:
            address = ipaddress.ip_interface(cell)
        except ValueError:
            raise ParseError(f"{shown(name)}: {shown(cell)} is not an address", source=source,
                             line=number) from None
        (ipv4 if address.version == 4 else ipv6).append(cell)
    return Interface(name=name, state=cells[1], ipv4=ipv4, ipv6=ipv6, mac=mac)
