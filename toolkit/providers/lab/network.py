"""The lab's networks: one namespace per node, a management bridge and a fabric bridge.

Management: bridge `<tag>-m` holding the host's address (.1), so the host (Ansible, `gpuctl ssh`)
reaches every node directly; nothing is routed or NATed out.

Fabric: bridge `<tag>-f` with no host address, standing in for the RDMA network. Its switch
ports (the host ends of the veths) accept jumbo frames, as a cloud's RDMA VPC does, while each
node's own fabric interface starts at 1500 (as a freshly booted image does), so the mtu role has
real work to do and its `ping -M do` check fails until it has done it. The bridge device itself
stays at 1500: forwarding checks the egress port's MTU, not the bridge's.
"""

from __future__ import annotations

import json

from toolkit.providers.lab.host import sh
from toolkit.providers.lab.state import FABRIC_IFACE, MGMT_IFACE, LabNode, LabState, lab_tag, own_link, own_netns

SWITCH_PORT_MTU = 9000
NODE_START_MTU = 1500


def existing_links() -> set[str]:
    return {link["ifname"] for link in json.loads(sh(["ip", "-j", "link", "show"]) or "[]")}


def existing_netns() -> set[str]:
    names: set[str] = set()
    for line in sh(["ip", "netns", "list"]).splitlines():
        if line.strip():
            names.add(line.split()[0])
    return names


def taken_octets() -> set[int]:
    """Third octets of 10.213.x.0/24 already used on this host (by another lab)."""
    taken: set[int] = set()
    for link in json.loads(sh(["ip", "-j", "-4", "addr", "show"]) or "[]"):
        for addr in link.get("addr_info", []):
            parts = str(addr.get("local", "")).split(".")
            if parts[:2] == ["10", "213"]:
                taken.add(int(parts[2]))
    return taken


def create_bridges(state: LabState) -> None:
    links = existing_links()
    for bridge in (state.mgmt_bridge, state.fabric_bridge):
        if bridge not in links:
            sh(["ip", "link", "add", bridge, "type", "bridge"])
        sh(["ip", "link", "set", bridge, "up"])
    sh(["ip", "link", "set", state.fabric_bridge, "mtu", str(NODE_START_MTU)])
    addrs = sh(["ip", "-4", "-o", "addr", "show", "dev", state.mgmt_bridge])
    if state.host_mgmt_ip not in addrs:
        sh(["ip", "addr", "add", state.host_mgmt_ip, "dev", state.mgmt_bridge])


def create_node_network(state: LabState, node: LabNode) -> None:
    """Namespace, two veths (peer created directly inside the namespace), addresses; idempotent."""
    if node.netns not in existing_netns():
        sh(["ip", "netns", "add", node.netns])
    links = existing_links()
    prefix = state.mgmt_cidr.split("/")[1]
    for host_end, inner, bridge in (
        (node.mgmt_veth, MGMT_IFACE, state.mgmt_bridge),
        (node.fabric_veth, FABRIC_IFACE, state.fabric_bridge),
    ):
        if host_end not in links:
            sh(["ip", "link", "add", host_end, "type", "veth", "peer", "name", inner, "netns", node.netns])
        port_mtu = SWITCH_PORT_MTU if bridge == state.fabric_bridge else NODE_START_MTU
        sh(["ip", "link", "set", host_end, "mtu", str(port_mtu), "master", bridge, "up"])
    ns = ["ip", "-n", node.netns]
    sh([*ns, "link", "set", "lo", "up"])
    for inner, cidr in ((MGMT_IFACE, f"{node.mgmt_ip}/{prefix}"), (FABRIC_IFACE, node.fabric_ip)):
        if cidr not in sh([*ns, "-4", "-o", "addr", "show", "dev", inner]):
            sh([*ns, "addr", "add", cidr, "dev", inner])
        sh([*ns, "link", "set", inner, "up"])


def own_netns_present(cluster: str) -> list[str]:
    """The namespaces on the host that the plan of `cluster` names (`<tag>-n<i>`), recorded or not."""
    tag = lab_tag(cluster)
    return sorted(ns for ns in existing_netns() if own_netns(tag, ns))


def own_links_present(cluster: str) -> list[str]:
    """The host links that the plan of `cluster` names (`<tag>-m`, `<tag>-f`, `<tag>-m<i>`, `<tag>-f<i>`)."""
    tag = lab_tag(cluster)
    return sorted(link for link in existing_links() if own_link(tag, link))


def remove_network(cluster: str) -> None:
    """Delete the lab's namespaces (which takes their veth ends along) and then its links left on the host.

    The names come from the cluster's tag and the plan's rules, never from the state file: after a
    lost or damaged state the plan comes from the spec, which may list fewer nodes than were created,
    and a state file naming `eth0` must not get it deleted.
    """
    for netns in own_netns_present(cluster):
        sh(["ip", "netns", "delete", netns], check=False)
    for link in own_links_present(cluster):
        sh(["ip", "link", "delete", link], check=False)


def leftovers(cluster: str) -> list[str]:
    """Every namespace and link on the host that the plan of `cluster` names."""
    return ([f"network namespace {ns}" for ns in own_netns_present(cluster)]
            + [f"link {link}" for link in own_links_present(cluster)])
