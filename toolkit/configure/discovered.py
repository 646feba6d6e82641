"""The fabric interfaces the site play found on a node its provider reported none for.

Tencent HCC's RDMA NICs are bonds the cloud's API does not show, so `fabric_interfaces` is empty in
the provider's outputs and the rdma role's discover.yml reads them from the node's sysfs (one JSON
line per bond, from files/discover_fabric.sh). gpuctl keeps what that task printed (ansible_run)
so that its record of the run can verify the same interfaces and ping the same addresses later.

The text comes from a node: only lines of the exact shape, with names and addresses that pass the
same checks the role applies, are kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from toolkit.providers.base import INTERFACE_NAME

__all__ = ["DISCOVERY_TASK", "addresses", "discovered_interfaces", "peer_addresses"]

# The rdma role's task whose output lists the interfaces found (playbooks/roles/rdma/tasks/discover.yml).
DISCOVERY_TASK = "Find the netdev and IPv4 address of every HCC RDMA device (the mlx5_bond_* bonds) in sysfs"
_NAME = re.compile(INTERFACE_NAME)
_DEVICE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,63}$")
_CIDR = re.compile(r"^[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}$")


def discovered_interfaces(stdout: str) -> list[dict[str, str]]:
    """The interfaces in the discovery task's output, in its order: {name, ipv4, rdma_device}."""
    found: list[dict[str, str]] = []
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        try:
            item = json.loads(line)
        except (ValueError, RecursionError):  # a node prints what it likes: `[[[[...` too
            continue
        if not isinstance(item, dict):
            continue
        name, ipv4, device = (str(item.get(k, "")) for k in ("name", "ipv4", "rdma_device"))
        if _NAME.match(name) and _CIDR.match(ipv4) and _DEVICE.match(device):
            found.append({"name": name, "ipv4": ipv4, "rdma_device": device})
    return found


def addresses(interfaces: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every interface's address without its prefix, in order."""
    return [str(i["ipv4"]).split("/")[0] for i in interfaces if i.get("ipv4")]


def peer_addresses(peer_nodes: Iterable[str], found: Mapping[str, list[str]]) -> list[str]:
    """The addresses the mtu role pinged for these peer nodes (every bond of each), where known."""
    return [address for node in peer_nodes for address in found.get(node, [])]
