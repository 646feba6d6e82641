"""NCCL INFO log parser on the real logs in shared/fixtures/nccl_log."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.errors import ParseError
from toolkit.topology.nccl_log import looks_like_nccl_log, parse_nccl_log


def test_h100_two_nodes_roce_pxn_single_rail(shared_fixtures: Path) -> None:
    text = (shared_fixtures / "nccl_log" / "h100-2node-roce-pxn-ranks8-15.txt").read_text()
    assert looks_like_nccl_log(text)
    summary = parse_nccl_log(text, "h100.log")
    assert (summary.n_ranks, summary.n_nodes, summary.local_ranks) == (16, 2, 8)
    assert summary.ranks == [8, 9, 10, 11, 12, 13, 14, 15]
    # line 2 lost its first letter ("pgds-aihub0008"): not a second host
    assert summary.hosts == ["tpgds-aihub0008"]
    assert summary.env["NCCL_CUMEM_ENABLE"] == "0"
    assert summary.env["NCCL_NVLS_ENABLE"] == "0"
    assert summary.env["NCCL_ALGO"] == "Ring"
    assert summary.env["NCCL_PROTO"] == "Simple"
    assert summary.env["NCCL_NET_GDR_LEVEL"] == "PIX"
    assert summary.env["NCCL_IB_GID_INDEX"] == "3"
    assert summary.env["NCCL_IB_TC"] == "106"
    assert (summary.ring_pxn, summary.ring_gdr) == (True, True)
    assert summary.channel_counts == {"coll": 4, "collnet": 4, "nvls": 0, "p2p": 4,
                                      "p2p_per_peer": 1}
    intra = {c.via for c in summary.connections if c.kind == "P2P"}
    assert intra == {"P2P/IPC"}  # CUMEM disabled by environment
    net = summary.net_connections
    assert len(net) == 16
    assert sum(1 for c in net if c.via == "NET/IB/0/GDRDMA") == 12
    pxn = [c for c in net if c.via == "NET/IB/0(8)/GDRDMA"]
    assert len(pxn) == 4
    assert {c.proxy_rank for c in pxn} == {8}
    assert {(c.src_rank, c.dst_rank, c.direction) for c in pxn} == {(9, 0, "send")}
    assert all(c.gdr and c.net == "IB" for c in net)
    assert summary.rails_used == [0]
    assert not summary.uses_socket
    assert summary.nccl_version is None  # the capture starts after the version line


def test_gcp_socket_fallback_with_nvls(shared_fixtures: Path) -> None:
    text = (shared_fixtures / "nccl_log" / "gcp-a3high-2node-socket-fallback-nvls.txt").read_text()
    summary = parse_nccl_log(text, "gcp.log")
    assert summary.nccl_version == "2.22.3+cuda12.6"
    assert summary.ib_no_device == [3, 4]
    assert summary.socket_interfaces == ["eth0"]
    assert summary.socket_addresses == ["10.128.0.52"]
    assert summary.networks == ["Socket"]
    assert summary.uses_socket
    assert [e.line for e in summary.gdr_disabled] == [7]
    assert "HCA 0 'eth0'" in summary.gdr_disabled[0].text
    assert summary.nvls_multicast is True
    assert summary.channel_counts == {"coll": 16, "collnet": 16, "nvls": 16, "p2p": 16,
                                      "p2p_per_peer": 2}
    assert len(summary.rings) == 16
    assert all(ring == [0, 7, 6, 5, 4, 3, 2, 1, 8, 15, 14, 13, 12, 11, 10, 9]
               for ring in summary.rings.values())
    assert {c.via for c in summary.connections} == {"P2P/CUMEM"}
    assert summary.net_connections == []
    assert max(c.channel for c in summary.connections) == 13  # the author saved up to Channel 13
    assert summary.hosts == ["gke-hypercomputer-a3-a3-h100-dws-pool-16664d9c-hv7m"]


def test_h200_two_rails_gdr_per_channel(shared_fixtures: Path) -> None:
    text = (shared_fixtures / "nccl_log" / "h200-4gpu-2rail-mixed-gdr-channels.txt").read_text()
    summary = parse_nccl_log(text, "h200.log")
    assert [(c.channel, c.net_dev, c.gdr, c.direction) for c in summary.net_connections] == [
        (0, 0, True, "receive"),
        (1, 1, False, "receive"),
        (2, 0, True, "receive"),
        (3, 1, False, "receive"),
    ]
    assert {(c.src_rank, c.src_dev, c.dst_rank, c.dst_dev) for c in summary.connections} == {
        (7, "3", 0, "0")}
    assert summary.rails_used == [0, 1]


def test_other_transports_and_plugin_lines() -> None:
    # Constructed from NCCL's message formats (no fixture shows them): SHM, a net plugin,
    # the NET/IB device list, a WARN line and mpirun's output prefix.
    text = "\n".join([
        "[1,0]<stdout>:node1:10:10 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v8 (v8)",
        "node1:10:10 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE ; OOB eth0:10.0.0.1<0>",
        "node1:10:10 [0] NCCL INFO Using network IBext_v8",
        "node1:10:10 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct",
        "node1:10:10 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/direct pointer",
        "node1:10:10 [0] NCCL INFO Channel 00/0 : 2[0] -> 0[0] [receive] via NET/IBext_v8/1/GDRDMA",
        "node1:10:10 [0] NCCL WARN NET/IB : Got async event : port error",
    ])
    summary = parse_nccl_log(text, "x.log")
    assert summary.net_plugin == "NCCL RDMA Plugin v8 (v8)"
    assert summary.ib_devices == {0: "mlx5_0", 1: "mlx5_1"}
    assert summary.networks == ["IBext_v8"]
    assert [c.kind for c in summary.connections] == ["SHM", "P2P", "NET"]
    assert summary.connections[1].via == "P2P/direct pointer"
    assert (summary.connections[2].net, summary.connections[2].net_dev) == ("IBext_v8", 1)
    assert [w.line for w in summary.warnings] == [7]
    assert summary.hosts == ["node1"]


def test_not_an_nccl_log() -> None:
    with pytest.raises(ParseError, match="no `NCCL INFO` line") as caught:
        parse_nccl_log("hello\nworld\n", "empty.log")
    assert (caught.value.source, caught.value.line) == ("empty.log", 1)


def test_unreadable_channel_line_names_the_line(shared_fixtures: Path) -> None:
    lines = (shared_fixtures / "nccl_log" / "h200-4gpu-2rail-mixed-gdr-channels.txt").read_text()
    broken = lines.replace("7[3] -> 0[0] [receive] via NET/IB/1\n", "7[3] -> [receive] via NET/IB/1\n", 1)
    with pytest.raises(ParseError, match="cannot read channel connection") as caught:
        parse_nccl_log(broken, "h200.log")
    assert caught.value.line == 3
    bad_net = lines.replace("via NET/IB/1\n", "via NET/IB/x\n", 1)
    with pytest.raises(ParseError, match="cannot read network transport 'NET/IB/x'") as caught:
        parse_nccl_log(bad_net, "h200.log")
    assert caught.value.line == 3
