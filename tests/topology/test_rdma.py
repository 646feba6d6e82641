"""RDMA parsers on real captures (shared/fixtures/rdma and tests/topology/captures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.errors import ParseError
from toolkit.topology import rdma
from toolkit.topology.model import Nic

CAPTURES = Path(__file__).parent / "captures"


def _read(path: Path) -> str:
    return path.read_text()


def test_cx7_roce_show_gids_and_ibv_devinfo(shared_fixtures: Path) -> None:
    text = _read(shared_fixtures / "rdma" / "cx7-roce-show_gids-ibv_devinfo.txt")
    assert rdma.looks_like_show_gids(text)
    assert rdma.looks_like_ibv_devinfo(text)

    gids = rdma.parse_show_gids(text, "cx7.txt")
    assert [(g.index, g.type, g.ipv4) for g in gids] == [
        (0, "RoCE v1", None),
        (1, "RoCE v2", None),
        (2, "RoCE v1", "10.99.91.39"),
        (3, "RoCE v2", "10.99.91.39"),
    ]
    assert {g.device for g in gids} == {"mlx5_0"}
    assert {g.netdev for g in gids} == {"ens108np0"}

    [nic] = rdma.parse_ibv_devinfo(text, "cx7.txt")
    assert nic.name == "mlx5_0"
    assert nic.port == 1
    assert nic.vendor_part_id == 4129
    assert nic.model == "ConnectX-7"
    assert nic.fw_ver == "28.43.2026"
    assert nic.state == "PORT_ACTIVE"
    assert nic.active_mtu == 4096
    assert nic.link_layer == "Ethernet"
    assert nic.transport == "InfiniBand"
    assert nic.gid_index is None  # plain ibv_devinfo has no GIDs

    [merged] = rdma.merge_gids([nic], gids)
    assert merged.gid_index == 3
    assert merged.gid_ipv4 == "10.99.91.39"
    assert merged.netdev == "ens108np0"


def test_h200_ten_cx7_plus_cx6lx_bond(shared_fixtures: Path) -> None:
    text = _read(shared_fixtures / "rdma" / "h200-node-10cx7-plus-cx6lx-bond-ibv_devinfo.txt")
    nics = rdma.parse_ibv_devinfo(text, "h200.txt")
    assert [n.name for n in nics] == [
        "mlx5_0", "mlx5_1", "mlx5_2", "mlx5_10", "mlx5_11",
        "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_bond_0",
    ]
    by_name = {n.name: n for n in nics}
    for name in ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"):
        assert by_name[name].vendor_part_id == 4129
        assert by_name[name].fw_ver == "28.42.1000"
        assert by_name[name].board_id == "MT_0000000838"
    for name in ("mlx5_10", "mlx5_11"):
        assert by_name[name].vendor_part_id == 4129
        assert by_name[name].fw_ver == "28.39.2048"
        assert by_name[name].board_id == "MT_0000001045"
        assert by_name[name].sys_image_guid == "58a2:e103:00b3:2274"
    bond = by_name["mlx5_bond_0"]
    assert bond.vendor_part_id == 4127
    assert bond.model == "ConnectX-6 Lx"
    assert bond.fw_ver == "26.43.2026"
    assert bond.active_mtu == 1024
    assert bond.max_mtu == 4096
    assert all(n.state == "PORT_ACTIVE" and n.link_layer == "Ethernet" for n in nics)


def test_h100_ibdev2netdev_after_ip_brief(shared_fixtures: Path) -> None:
    text = _read(shared_fixtures / "rdma" / "h100-node-ip-br-ibdev2netdev.txt")
    assert rdma.looks_like_ibdev2netdev(text)
    mapping = rdma.parse_ibdev2netdev(text, "h100.txt")
    assert list(mapping)[:5] == ["mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11", "mlx5_2"]
    assert len(mapping) == 12
    assert mapping["mlx5_3"] == ("bond0", "Up")
    assert mapping["mlx5_9"] == ("bond0", "Up")
    assert mapping["mlx5_4"] == ("enp83s0f1np1", "Down")
    assert mapping["mlx5_10"] == ("enp210s0f1np1", "Down")
    rails = sorted((n for n, (dev, state) in mapping.items() if dev != "bond0" and state == "Up"),
                   key=lambda n: int(n.split("_")[1]))
    assert rails == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_11"]


def test_erdma_device_from_stepmesh_capture() -> None:
    text = _read(CAPTURES / "erdma-h20-ibv_devinfo-stepmesh-pr32.txt")
    [nic] = rdma.parse_ibv_devinfo(text, "erdma.txt")
    assert nic.name == "erdma_0"
    assert nic.transport == "eRDMA"
    assert nic.vendor_id == "0x1ded"
    assert nic.vendor_part_id == 4223
    assert nic.model == "Alibaba eRDMA"
    assert nic.fw_ver == "0.2.0"
    assert nic.board_id is None
    assert nic.state == "PORT_ACTIVE"
    assert nic.link_layer == "Ethernet"
    assert nic.active_mtu == 4096


def test_infiniband_port_down() -> None:
    text = _read(CAPTURES / "ib-cx7-ibv_devinfo-port-down-deepep-issue60.txt")
    [nic] = rdma.parse_ibv_devinfo(text, "ib.txt")
    assert (nic.name, nic.link_layer, nic.state, nic.model) == (
        "mlx5_0", "InfiniBand", "PORT_DOWN", "ConnectX-7")


def test_ibstat_two_cx6dx_ports() -> None:
    text = _read(CAPTURES / "ibstat-2x-cx6dx-100g-l2fwd-nv-issue6.txt")
    assert rdma.looks_like_ibstat(text)
    nics = rdma.parse_ibstat(text, "ibstat.txt")
    assert [(n.name, n.port, n.state, n.rate_gbps, n.link_layer) for n in nics] == [
        ("mlx5_0", 1, "Active", 100.0, "Ethernet"),
        ("mlx5_1", 1, "Active", 100.0, "Ethernet"),
    ]
    assert {n.model for n in nics} == {"ConnectX-6 Dx"}
    assert {n.vendor_part_id for n in nics} == {4125}
    assert {n.fw_ver for n in nics} == {"22.32.2004"}
    # ibstat's 0x0c42a103001dd12a in ibv_devinfo's spelling, so both tools join
    assert {n.sys_image_guid for n in nics} == {"0c42:a103:001d:d12a"}


def test_rdma_link_show() -> None:
    text = _read(CAPTURES / "rdma-link-cx6dx-3fs-pr283.txt")
    assert rdma.looks_like_rdma_link(text)
    assert rdma.parse_rdma_link(text, "link.txt") == {
        "mlx5_0": ("p1p1", "ACTIVE"),
        "mlx5_1": ("p1p2", "ACTIVE"),
    }


def test_ibv_devinfo_verbose_gid_lines_set_gid_index() -> None:
    # Constructed from rdma-core's devinfo.c print formats (no real -v capture with RoCE v2 IPv4
    # GIDs is in the fixtures): `GID[%3d]:\t\t%s, %s` and active_width/active_speed.
    text = (
        "hca_id:\tmlx5_2\n\ttransport:\t\t\tInfiniBand (0)\n\tvendor_id:\t\t\t0x02c9\n"
        "\tvendor_part_id:\t\t\t4125\n\tdevice_cap_flags:\t\t0x21361c36\n"
        "\t\t\t\t\tBAD_PKEY_CNTR\n\tlog atomic arg sizes (mask)\t\t0x8\n"
        "\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tactive_mtu:\t\t4096 (5)\n"
        "\t\t\tactive_width:\t\t4X (2)\n\t\t\tactive_speed:\t\t25.0 Gbps (32)\n"
        "\t\t\tlink_layer:\t\tEthernet\n"
        "\t\t\tGID[  0]:\t\tfe80::3a7c:76ff:fe7c:ab4f, RoCE v1\n"
        "\t\t\tGID[  1]:\t\tfe80::3a7c:76ff:fe7c:ab4f, RoCE v2\n"
        "\t\t\tGID[  2]:\t\t::ffff:10.0.0.7, RoCE v1\n"
        "\t\t\tGID[  3]:\t\t::ffff:10.0.0.7, RoCE v2\n"
    )
    [nic] = rdma.parse_ibv_devinfo(text, "v.txt")
    assert (nic.gid_index, nic.gid_ipv4, nic.rate_gbps) == (3, "10.0.0.7", 100.0)


def test_sysfs_gid_tree(tmp_path: Path) -> None:
    port = tmp_path / "mlx5_0" / "ports" / "1"
    (port / "gids").mkdir(parents=True)
    (port / "gid_attrs" / "types").mkdir(parents=True)
    (port / "gid_attrs" / "ndevs").mkdir(parents=True)
    (port / "link_layer").write_text("Ethernet\n")
    rows = {
        0: ("fe80:0000:0000:0000:a288:c2ff:fe63:5a20", "IB/RoCE v1"),
        1: ("fe80:0000:0000:0000:a288:c2ff:fe63:5a20", "RoCE v2"),
        2: ("0000:0000:0000:0000:0000:ffff:0a63:5b27", "IB/RoCE v1"),
        3: ("0000:0000:0000:0000:0000:ffff:0a63:5b27", "RoCE v2"),
    }
    for index, (gid, kind) in rows.items():
        (port / "gids" / str(index)).write_text(gid + "\n")
        (port / "gid_attrs" / "types" / str(index)).write_text(kind + "\n")
        (port / "gid_attrs" / "ndevs" / str(index)).write_text("ens108np0\n")
    (port / "gids" / "4").write_text("0000:0000:0000:0000:0000:0000:0000:0000\n")  # unused slot
    gids = rdma.parse_sysfs_gids(tmp_path)
    assert [(g.index, g.type, g.ipv4, g.netdev) for g in gids] == [
        (0, "RoCE v1", None, "ens108np0"),
        (1, "RoCE v2", None, "ens108np0"),
        (2, "RoCE v1", "10.99.91.39", "ens108np0"),
        (3, "RoCE v2", "10.99.91.39", "ens108np0"),
    ]
    [nic] = rdma.merge_gids([Nic(name="mlx5_0", port=1)], gids)
    assert (nic.gid_index, nic.gid_ipv4) == (3, "10.99.91.39")


def test_sysfs_bad_gid_names_the_file(tmp_path: Path) -> None:
    gids = tmp_path / "mlx5_0" / "ports" / "1" / "gids"
    gids.mkdir(parents=True)
    (gids / "0").write_text("not-a-gid\n")
    with pytest.raises(ParseError, match=r"gids/0:1: GID 'not-a-gid'"):
        rdma.parse_sysfs_gids(tmp_path)


def test_merge_gids_ignores_v2_without_ipv4_and_v1() -> None:
    gids = [
        rdma.GidEntry(device="mlx5_1", port=1, index=1, gid="fe80::1", type="RoCE v2"),
        rdma.GidEntry(device="mlx5_1", port=1, index=2, gid="::ffff:10.0.0.1", ipv4="10.0.0.1",
                      type="RoCE v1"),
    ]
    [nic] = rdma.merge_gids([Nic(name="mlx5_1", port=1)], gids)
    assert nic.gid_index is None


def test_model_names_from_the_cited_table() -> None:
    assert rdma.model_name("0x02c9", 4119) == "ConnectX-5"
    assert rdma.model_name("0x02c9", 4123) == "ConnectX-6"
    assert rdma.model_name("0x02c9", 4125) == "ConnectX-6 Dx"
    assert rdma.model_name("0x02c9", 4131) == "ConnectX-8"
    assert rdma.model_name("0x02c9", 9999) is None
    assert rdma.model_name("0x1077", 4129) is None  # another vendor's 4129 is not a ConnectX-7


def test_ibv_devinfo_cut_in_its_last_device_keeps_the_others(shared_fixtures: Path) -> None:
    text = _read(shared_fixtures / "rdma" / "h200-node-10cx7-plus-cx6lx-bond-ibv_devinfo.txt")
    cut = "\n".join(text.splitlines()[:200])  # ends inside the mlx5_bond_0 device block
    notes: list[str] = []
    nics = rdma.parse_ibv_devinfo(cut, "h200.txt", notes)
    assert [n.name for n in nics][-2:] == ["mlx5_7", "mlx5_bond_0"]
    assert [n.state for n in nics[:-1]] == ["PORT_ACTIVE"] * 10
    assert nics[-1].state is None
    assert nics[-1].vendor_part_id == 4127  # what the cut block does show is kept
    assert notes == ["h200.txt:193: device mlx5_bond_0 has no `port:` section: output truncated?; "
                     "its state is unknown"]


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("hca_id: mlx5_0\n\ttransport: InfiniBand (0)\n\tvendor_part_id: x41\n\t\tport: 1\n"
         "\t\t\tstate: PORT_ACTIVE (4)\n", "vendor_part_id 'x41' is not a number", 3),
        ("hca_id: mlx5_0\n\ttransport: InfiniBand (0)\n\t\tport: 1\n\t\t\tmax_mtu: 4096\n",
         "port 1 of mlx5_0 has no `state:` line", 3),
        ("hca_id: mlx5_0\n\ttransport: InfiniBand (0)\ngarbage here\n", "unexpected line", 3),
        ("nothing to see\n", "no `hca_id:` line", 1),
    ],
)
def test_malformed_ibv_devinfo(text: str, message: str, line: int) -> None:
    with pytest.raises(ParseError, match=message) as caught:
        rdma.parse_ibv_devinfo(text, "dev.txt")
    assert caught.value.line == line
    assert caught.value.source == "dev.txt"


def test_show_gids_count_mismatch_is_truncation(shared_fixtures: Path) -> None:
    text = _read(shared_fixtures / "rdma" / "cx7-roce-show_gids-ibv_devinfo.txt")
    lines = text.splitlines()
    del lines[6]  # drop the index-2 row; n_gids_found=4 remains
    with pytest.raises(ParseError, match="n_gids_found=4 but 3 rows") as caught:
        rdma.parse_show_gids("\n".join(lines), "g.txt")
    assert caught.value.line == 8


def test_malformed_ibdev2netdev_and_ibstat_and_rdma_link() -> None:
    with pytest.raises(ParseError, match="cannot read ibdev2netdev line") as caught:
        rdma.parse_ibdev2netdev("mlx5_0 port 1 ==> enp25s0np0 (Up)\nmlx5_1 port x ==> eth1\n"
                                "mlx5_2 port 1 ==> eth2 (Up)\n", "i")
    assert caught.value.line == 2
    with pytest.raises(ParseError, match="CA mlx5_0 has no port section") as caught:
        rdma.parse_ibstat("CA 'mlx5_0'\n\tCA type: MT4129\n", "s")
    assert caught.value.line == 1
    with pytest.raises(ParseError, match="without a state") as caught:
        rdma.parse_rdma_link("link mlx5_0/1 netdev eth0\n", "r")
    assert caught.value.line == 1
