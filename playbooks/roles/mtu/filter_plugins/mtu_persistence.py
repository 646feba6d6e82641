"""The mtu role's decision, on the controller: how to keep each fabric interface's MTU across reboots.

Input: the lines the role's one probe command printed on the node (see tasks/main.yml):

    missing IFACE                 no /sys/class/net/IFACE: a rail the provider reported is absent
    changed IFACE OLD             the runtime MTU was OLD (and was set, outside check mode)
    nm IFACE UUID PROFILE_MTU     NetworkManager has an active connection on IFACE (PROFILE_MTU: its
                                  802-3-ethernet.mtu, "auto" when unset)
    style IFACE STYLE             otherwise the node's network configuration: ifcfg, netplan,
                                  ifupdown, networkd or none
    netplan FILE BASE64           each netplan file of the node (gpuctl's own left out)
    ifupdown IFACE FILE           FILE (not gpuctl's) has an `iface IFACE` stanza

Output: one plan per interface, `how` being what the role does:

- nm: set 802-3-ethernet.mtu on the connection NetworkManager runs the interface with, and
  reapply it: NetworkManager owns the interface, a file beside it would be ignored or fight it.
- netplan: a file with only `mtu`, under the same section and ID as the netplan definition that
  already names the interface. netplan merges files by ID (later files add keys), so this is a
  valid merge into that definition. Without such a definition the file would be a new definition
  with no addressing, and netplan would take the interface over without its address at the next
  boot: then nothing is written and the reason says so.
- ifcfg: `MTU=` in the interface's existing ifcfg file.
- ifupdown: a stanza `iface IFACE inet manual` with the MTU, only when no other file has a stanza
  for the interface (a second stanza for one interface is a conflict for ifupdown).
- networkd: a .link file.
- none: the MTU holds for this boot only (a reboot makes `gpuctl configure` run the role again).

Nothing here is evaluated: file text from the node is parsed with yaml.safe_load, and a file that
does not parse only means its definitions are not found.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import yaml

# netplan device sections whose definitions take an `mtu` key.
NETPLAN_SECTIONS = ("ethernets", "bonds", "vlans", "bridges")
# gpuctl's own persistence files: never read back as someone else's definition.
OWN_PREFIX = "60-gpuctl-mtu-"


def netplan_definition(files: dict[str, str], interface: str) -> dict[str, str] | None:
    """The netplan definition that names `interface`, as {section, id, file}, or None.

    A definition names it by its ID (with no `match`), by `set-name`, or by an exact `match.name`
    (a glob would also cover interfaces that are not the fabric's). Files are read in netplan's
    lexicographic order; the first definition found wins.
    """
    for name in sorted(files):
        if name.startswith(OWN_PREFIX):
            continue
        try:
            document = yaml.safe_load(files[name])
        except yaml.YAMLError:
            continue
        network = document.get("network") if isinstance(document, dict) else None
        if not isinstance(network, dict):
            continue
        for section in NETPLAN_SECTIONS:
            definitions = network.get(section)
            if not isinstance(definitions, dict):
                continue
            for key, body in definitions.items():
                body = body if isinstance(body, dict) else {}
                match = body.get("match") if isinstance(body.get("match"), dict) else None
                if (str(key) == interface and match is None) or body.get("set-name") == interface \
                        or (match is not None and match.get("name") == interface):
                    return {"section": section, "id": str(key), "file": name}
    return None


def _decode(text: str) -> str | None:
    try:
        return base64.b64decode(text, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def mtu_persistence(lines: list[str], interfaces: list[str], mtu: int | str) -> dict[str, Any]:
    """{missing: [...], changed: {iface: old}, plans: [{interface, how, reason, ...}]}"""
    missing: list[str] = []
    changed: dict[str, str] = {}
    found: dict[str, dict[str, Any]] = {}
    netplan: dict[str, str] = {}
    ifupdown_owner: dict[str, str] = {}
    for line in lines:
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "missing":
            missing.append(parts[1])
        elif len(parts) == 3 and parts[0] == "changed":
            changed[parts[1]] = parts[2]
        elif len(parts) >= 3 and parts[0] == "nm":
            found[parts[1]] = {"how": "nm", "uuid": parts[2], "profile_mtu": parts[3] if len(parts) > 3 else ""}
        elif len(parts) == 3 and parts[0] == "style":
            found[parts[1]] = {"how": parts[2]}
        elif len(parts) == 3 and parts[0] == "netplan":
            text = _decode(parts[2])
            if text is not None:
                netplan[parts[1]] = text
        elif len(parts) == 2 and parts[0] == "netplan":
            netplan[parts[1]] = ""  # an empty file
        elif len(parts) == 3 and parts[0] == "ifupdown":
            ifupdown_owner.setdefault(parts[1], parts[2])
    plans = []
    for interface in interfaces:
        if interface in missing:
            continue
        plans.append(_plan(interface, found.get(interface, {"how": "none"}), netplan, ifupdown_owner, str(mtu)))
    return {"missing": missing, "changed": changed, "plans": plans}


def _plan(interface: str, seen: dict[str, Any], netplan: dict[str, str], ifupdown_owner: dict[str, str],
          mtu: str) -> dict[str, Any]:
    how = seen["how"]
    plan: dict[str, Any] = {"interface": interface, "how": how}
    if how == "nm":
        plan["uuid"] = seen["uuid"]
        plan["update"] = seen["profile_mtu"] != mtu
        plan["reason"] = f"NetworkManager runs {interface} (connection {seen['uuid']}): 802-3-ethernet.mtu {mtu}"
    elif how == "netplan":
        definition = netplan_definition(netplan, interface)
        if definition is None:
            plan.update(how="none", reason=(
                f"no netplan file defines {interface} by name: a file with only its MTU would be a definition "
                "without addressing, so nothing is written and the MTU holds for this boot only"))
        else:
            plan.update(netplan=definition, reason=(
                f"netplan: mtu merged into {definition['section']}.{definition['id']} of {definition['file']}"))
    elif how == "ifupdown" and interface in ifupdown_owner:
        plan.update(how="none", reason=(
            f"{ifupdown_owner[interface]} already has a stanza for {interface}: a second one would conflict, so "
            "nothing is written and the MTU holds for this boot only"))
    elif how == "none":
        plan["reason"] = "no NetworkManager, netplan, ifcfg, ifupdown or systemd-networkd here: this boot only"
    else:
        plan["reason"] = f"{how} file"
    return plan


class FilterModule:
    """Ansible's entry point for the role's filters."""

    def filters(self) -> dict[str, Any]:
        return {"mtu_persistence": mtu_persistence}
