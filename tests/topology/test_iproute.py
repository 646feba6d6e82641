"""iproute2 parsers on captures from this project's dev machine and the h100 fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.errors import ParseError
from toolkit.topology import iproute

CAPTURES = Path(__file__).parent / "captures"


def _read(name: str) -> str:
    return (CAPTURES / name).read_text()


def test_host_ip_j_addr() -> None:
    text = _read("host-ip-j-addr.json.txt")
    assert iproute.looks_like_ip_addr_json(text)
    assert not iproute.looks_like_ip_link_json(text)
    interfaces = {i.name: i for i in iproute.parse_ip_addr_json(text, "addr.json")}
    assert list(interfaces) == ["lo", "ifb0", "ifb1", "eth0"]
    eth0 = interfaces["eth0"]
    assert (eth0.mtu, eth0.state, eth0.mac) == (1400, "UP", "02:fc:00:00:00:01")
    assert eth0.ipv4 == ["192.0.2.2/24"]
    assert eth0.ipv6 == ["fd00::2/64", "fe80::fc:ff:fe00:1/64"]
    assert interfaces["lo"].ipv4 == ["127.0.0.1/8"]
    assert interfaces["lo"].mac is None  # loopback's 00:00:.. is not a MAC worth reporting
    assert interfaces["ifb0"].state == "DOWN"


def test_host_ip_j_link_kind_only_with_details() -> None:
    plain = {i.name: i for i in iproute.parse_ip_link_json(_read("host-ip-j-link.json.txt"))}
    detailed = {i.name: i for i in iproute.parse_ip_link_json(_read("host-ip-j-d-link.json.txt"))}
    assert iproute.looks_like_ip_link_json(_read("host-ip-j-link.json.txt"))
    assert plain["ifb0"].kind is None  # `ip -j link` has no linkinfo: not guessed
    assert detailed["ifb0"].kind == "ifb"
    assert detailed["eth0"].kind is None
    assert plain["eth0"].mtu == detailed["eth0"].mtu == 1400


def test_netns_veth_macvlan_vxlan() -> None:
    links = {i.name: i for i in iproute.parse_ip_link_json(
        _read("netns-veth-macvlan-vxlan-ip-j-d-link.json.txt"))}
    assert [(n, i.kind, i.mtu, i.state) for n, i in links.items()] == [
        ("lo", None, 65536, "UNKNOWN"),
        ("vb0", "veth", 1500, "UP"),
        ("va0", "veth", 8500, "UP"),
        ("mv0", "macvlan", 1500, "UP"),
        ("vx0", "vxlan", 1450, "UNKNOWN"),
    ]
    addrs = {i.name: i for i in iproute.parse_ip_addr_json(
        _read("netns-veth-macvlan-vxlan-ip-j-addr.json.txt"))}
    assert addrs["va0"].ipv4 == ["10.99.91.59/31"]
    assert addrs["va0"].mtu == 8500
    assert addrs["mv0"].ipv4 == ["192.168.50.1/24"]
    assert addrs["vb0"].ipv4 == []
    assert addrs["vb0"].ipv6[0] == "fd00:99::1/64"


def test_netns_ip_brief() -> None:
    interfaces = iproute.parse_ip_brief(_read("netns-veth-macvlan-vxlan-ip-br-addr.txt"))
    assert [(i.name, i.state, i.ipv4) for i in interfaces] == [
        ("lo", "UNKNOWN", ["127.0.0.1/8"]),
        ("vb0", "UP", []),
        ("va0", "UP", ["10.99.91.59/31"]),
        ("mv0", "UP", ["192.168.50.1/24"]),
        ("vx0", "UNKNOWN", []),
    ]


def test_h100_ip_brief_stops_at_the_next_prompt(shared_fixtures: Path) -> None:
    text = (shared_fixtures / "rdma" / "h100-node-ip-br-ibdev2netdev.txt").read_text()
    interfaces = {i.name: i for i in iproute.parse_ip_brief(text, "h100.txt")}
    assert len(interfaces) == 17
    assert "mlx5_0" not in interfaces
    assert interfaces["bond0"].ipv4 == ["10.73.175.137/29"]
    rails = {n: i.ipv4 for n, i in interfaces.items() if any(a.startswith("10.99.9") for a in i.ipv4)}
    assert rails == {
        "enp25s0np0": ["10.99.91.59/31"], "enp41s0np0": ["10.99.92.59/31"],
        "enp59s0np0": ["10.99.93.59/31"], "enp92s0np0": ["10.99.94.59/31"],
        "enp155s0np0": ["10.99.95.59/31"], "enp170s0np0": ["10.99.96.59/31"],
        "enp187s0np0": ["10.99.97.59/31"], "enp218s0np0": ["10.99.98.59/31"],
    }
    assert interfaces["enp83s0f1np1"].state == "DOWN"
    assert interfaces["enp210s0f0np0"].ipv4 == []


def test_bond_members_from_linkinfo() -> None:
    # Constructed (labelled as such): this dev machine's kernel has no bonding driver, so no
    # real bond could be captured. Keys as iproute2 prints them for `ip -j -d addr`.
    text = (
        '[{"ifindex":3,"ifname":"eth1","flags":["UP","SLAVE"],"mtu":8500,"master":"bond0",'
        '"operstate":"UP","link_type":"ether","address":"02:00:00:00:00:01",'
        '"linkinfo":{"info_slave_kind":"bond"},"addr_info":[]},'
        '{"ifindex":5,"ifname":"bond0","flags":["MASTER","UP"],"mtu":8500,"operstate":"UP",'
        '"link_type":"ether","address":"02:00:00:00:00:01","linkinfo":{"info_kind":"bond",'
        '"info_data":{"mode":"802.3ad"}},"addr_info":[{"family":"inet","local":"10.0.0.5",'
        '"prefixlen":24}]}]'
    )
    eth1, bond0 = iproute.parse_ip_addr_json(text, "bond.json")
    assert (eth1.master, eth1.kind) == ("bond0", None)
    assert (bond0.kind, bond0.mtu, bond0.ipv4) == ("bond", 8500, ["10.0.0.5/24"])


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ('# source: x\n[{"ifname": "eth0",\n "mtu": 1500,,}]\n', "invalid JSON", 3),
        ('[{"ifindex": 7,\n "mtu": 1500}]', "interface without an `ifname`", 1),
        ('[{"ifname": "eth0",\n "mtu": "big"}]', "mtu 'big' is not a number", 1),
        ("", "no JSON array", 1),
    ],
)
def test_malformed_ip_json(text: str, message: str, line: int) -> None:
    with pytest.raises(ParseError, match=message) as caught:
        iproute.parse_ip_addr_json(text, "ip.json")
    assert caught.value.line == line


def test_malformed_ip_brief() -> None:
    with pytest.raises(ParseError, match=r"'10\.0\.0\.300/24' is not an address") as caught:
        iproute.parse_ip_brief("lo UNKNOWN 127.0.0.1/8\neth0 UP 10.0.0.300/24\n", "br.txt")
    assert caught.value.line == 2
    with pytest.raises(ParseError, match="cannot read `ip -br` line") as caught:
        iproute.parse_ip_brief("lo UNKNOWN 127.0.0.1/8\neth0 SIDEWAYS\n", "br.txt")
    assert caught.value.line == 2


def test_json_nested_past_pythons_depth_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="nested far deeper than `ip -j` output") as error:
        iproute.parse_ip_addr_json("$ ip -j addr\n" + "[" * 100_000 + "]" * 100_000 + "\n", "ip.json")
    assert error.value.line == 2
