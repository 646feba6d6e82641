"""NCCL INFO log parser on real logs: shared/fixtures/nccl_log, and the logs interleaved with
nccl-tests output in tests/captures/mixed (facts written out from each file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO
from toolkit.bench.nccl_tests import collective, looks_like_nccl_tests, parse_nccl_tests
from toolkit.errors import ParseError
from toolkit.topology.nccl_log import IbDevice, NetInterface, looks_like_nccl_log, parse_nccl_log

MIXED = REPO / "tests" / "captures" / "mixed"
TENCENT_H20 = MIXED / "h20-vm-2node-2gpu-alltoall-tencent-plugin-roce-bond-nccl2.26.5.txt"
SHARP_A100 = MIXED / "a100-4node-2gpu-sharp-collnet-fallback-allreduce-info-nccl2.23.4.txt"
PCIE_GATHER = MIXED / "a100-pcie-2node-gather-trace-roce25g-plus-ib200g-nccl2.16.5.txt"
SENDRECV_A100 = MIXED / "a100-1node-2gpu-sendrecv-info-p2p-direct-nccl2.22.3.txt"


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
    assert summary.ib_devices == []  # this excerpt has no `NET/IB : Using` line
    assert summary.local_devices == {"tpgds-aihub0008": ["0", "1", "2", "3", "4", "5", "6", "7"]}
    assert {(c.host, c.cuda_dev) for c in net} == {("tpgds-aihub0008", "0"), ("tpgds-aihub0008", "1")}
    assert summary.transports_by_channel[0] == ["NET/IB/0(8)/GDRDMA", "NET/IB/0/GDRDMA", "P2P/IPC"]
    assert summary.transport_counts["NET/IB/0(8)/GDRDMA"] == 4
    assert [c.transport for c in pxn][:1] == ["NET/IB"]
    assert pxn[0].pxn


def test_gcp_socket_fallback_with_nvls(shared_fixtures: Path) -> None:
    text = (shared_fixtures / "nccl_log" / "gcp-a3high-2node-socket-fallback-nvls.txt").read_text()
    summary = parse_nccl_log(text, "gcp.log")
    assert summary.nccl_version == "2.22.3+cuda12.6"
    assert summary.ib_no_device == [3, 4]
    assert summary.socket_devices == [NetInterface(
        index=0, name="eth0", address="10.128.0.52",
        host="gke-hypercomputer-a3-a3-h100-dws-pool-16664d9c-hv7m", line=5)]
    assert summary.socket_interfaces == ["eth0"]
    assert summary.socket_addresses == ["10.128.0.52"]
    assert summary.ib_devices == []
    assert summary.channel_count_lines == [27]
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


def test_tencent_plugin_log_interleaved_with_alltoall_table() -> None:
    # nccl-tests issue 321: alltoall_perf between two VMs, NCCL INFO lines inside the table.
    text = TENCENT_H20.read_text()
    assert looks_like_nccl_log(text)
    assert looks_like_nccl_tests(text)
    summary = parse_nccl_log(text, "h20.txt")
    assert summary.nccl_version == "2.26.5+cuda12.2"
    assert (summary.n_ranks, summary.n_nodes, summary.local_ranks) == (4, 2, 2)
    assert summary.hosts == ["vm-host40", "vm-host38"]
    plugin = summary.net_plugin
    assert plugin is not None
    assert (plugin.name, plugin.api, plugin.path, plugin.version, plugin.vendor) == (
        "NCCL RDMA Plugin v6", "v6", "/usr/local/lib/libnccl-net.so", "1.2@Tencent Cloud", "Tencent Cloud")
    assert plugin.lines[0] == 29  # "NET/Plugin: Loaded net plugin NCCL RDMA Plugin v6 (v6)"
    assert summary.networks == ["NCCL RDMA Plugin v6"]
    assert summary.ib_devices == [
        IbDevice(index=0, name="mlx5_bond_6", port=1, link_layer="RoCE", host="vm-host40", line=53),
        IbDevice(index=1, name="mlx5_bond_7", port=1, link_layer="RoCE", host="vm-host40", line=53),
        IbDevice(index=0, name="mlx5_bond_6", port=1, link_layer="RoCE", host="vm-host38", line=87),
        IbDevice(index=1, name="mlx5_bond_7", port=1, link_layer="RoCE", host="vm-host38", line=87),
    ]
    assert summary.ib_device_names == ["mlx5_bond_6", "mlx5_bond_7"]
    assert [(i.host, i.name, i.address) for i in summary.ib_oob] == [
        ("vm-host40", "bond0", "30.159.184.22"), ("vm-host38", "bond0", "30.159.184.2")]
    assert summary.channel_counts == {"coll": 4, "collnet": 4, "nvls": 0, "p2p": 4, "p2p_per_peer": 2}
    [pxn] = [c for c in summary.connections if c.line == 157]
    assert pxn.via == "NET/NCCL RDMA Plugin v6/0(2)/GDRDMA/Shared"
    assert (pxn.net, pxn.net_dev, pxn.proxy_rank, pxn.gdr, pxn.direction) == ("NCCL RDMA Plugin v6", 0, 2, True, "send")
    assert (pxn.host, pxn.cuda_dev, pxn.transport) == ("vm-host38", "1", "NET/NCCL RDMA Plugin v6")
    assert summary.transports_by_channel[0] == ["P2P/CUMEM"]
    assert summary.transports_by_channel[1] == [
        "NET/NCCL RDMA Plugin v6/0(0)/GDRDMA/Shared", "NET/NCCL RDMA Plugin v6/0(2)/GDRDMA/Shared",
        "NET/NCCL RDMA Plugin v6/0/GDRDMA/Shared", "NET/NCCL RDMA Plugin v6/1(1)/GDRDMA/Shared",
        "NET/NCCL RDMA Plugin v6/1(3)/GDRDMA/Shared", "NET/NCCL RDMA Plugin v6/1/GDRDMA/Shared"]
    assert summary.rails_used == [0, 1]
    assert summary.env["NCCL_IB_GID_INDEX"] == "3"
    # The other half of the same file: the table, which stops at 4 GiB without its summary line.
    with pytest.raises(ParseError, match="no `# Avg bus bandwidth` line"):
        parse_nccl_tests(text, "h20.txt")
    result = parse_nccl_tests(text, "h20.txt", allow_truncated=True)
    assert result.truncated
    assert not result.failed
    assert (len(result.rows), result.rows[0].line, result.rows[-1].line) == (13, 215, 227)
    assert (result.peak_busbw_gbps, result.peak_size_bytes, result.peak_placement) == (50.37, 4294967296, "in-place")
    assert (result.ranks, result.hosts, result.redops) == (4, ["vm-host40", "vm-host38"], ["none"])


def test_sharp_plugin_ib_list_and_allreduce_table_in_one_file() -> None:
    # nccl-tests issue 311: 4 nodes x 2 A100, SHARP plugin, CollNet falls back; table at the end.
    text = SHARP_A100.read_text()
    summary = parse_nccl_log(text, "a100.txt")
    assert summary.nccl_version == "2.23.4+cuda12.4"
    assert summary.hosts == ["gpu34", "gpu40", "gpu41", "gpu36"]
    assert [(d.index, d.name, d.port, d.link_layer, d.flags) for d in summary.ib_devices] == [
        (0, "mlx5_2", 1, "IB", ["SHARP"]), (1, "mlx5_0", 1, "IB", ["SHARP"]), (2, "mlx5_6", 1, "IB", ["SHARP"]),
        (3, "mlx5_8", 1, "IB", ["SHARP"]), (4, "mlx5_9", 1, "IB", ["SHARP"]), (5, "mlx5_4", 1, "IB", ["SHARP"])]
    assert [(i.name, i.address, i.line) for i in summary.ib_oob] == [("ib0", "10.159.0.40", 53)]
    plugin = summary.net_plugin
    assert plugin is not None
    assert plugin.path == "/scratch/optpar01/work/2025/10-sharp/build/nccl-rdma-sharp-plugins/src/.libs/libnccl-net.so"
    assert (plugin.name, plugin.transport) == (None, "IBext_v8")
    assert plugin.vendor == "nccl-rdma-sharp-plugins (NVIDIA's, or a cloud's build of it)"
    assert [w.line for w in summary.warnings] == [61, 65, 73, 77, 84, 89, 92, 101]
    assert summary.channel_counts == {"coll": 3, "collnet": 3, "nvls": 0, "p2p": 4, "p2p_per_peer": 1}
    [first_pxn] = [c for c in summary.connections if c.line == 169]
    assert (first_pxn.via, first_pxn.net, first_pxn.net_dev, first_pxn.proxy_rank) == (
        "NET/IBext_v8/5(2)/GDRDMA", "IBext_v8", 5, 2)
    assert summary.transport_counts["P2P/CUMEM/read"] == 24
    result = parse_nccl_tests(text, "a100.txt")
    assert (len(result.rows), result.peak_busbw_gbps, result.peak_size_bytes) == (15, 23.1, 16777216)
    assert result.avg_busbw_gbps == 8.69534
    assert result.op is None
    assert collective(result) == "all_reduce"


def test_bare_version_line_and_nccl_topology_print() -> None:
    # nccl-tests issue 350: TRACE log of gather_perf; rank 0 prints the version without a prefix.
    text = PCIE_GATHER.read_text()
    summary = parse_nccl_log(text, "gather.txt")
    assert summary.nccl_version == "2.16.5+cuda11.8"  # line 13: "NCCL version 2.16.5+cuda11.8"
    assert [(d.index, d.name, d.link_layer) for d in summary.ib_devices] == [(0, "mlx5_0", "RoCE"), (1, "mlx5_2", "IB")]
    assert [e.line for e in summary.gdr_enabled] == [17, 18]
    assert [e.line for e in summary.net_plugin_absent] == [11]
    assert summary.net_plugin is None
    system = summary.system
    assert system is not None
    assert (system.line, system.max_bw, system.total_bw) == (24, 24.0, 24.0)
    links = {(link.kind, link.bw_gbps, link.target): link for link in system.links}
    assert links[("NET", 25.0, "NET/1")].info == "7a852d0003f6ceb8/1/25.000000"
    assert links[("NET", 25.0, "NET/1")].line == 29
    assert links[("NET", 3.1, "NET/0")].line == 33
    assert links[("PCI", 6.0, "NIC/21000")].line == 32
    assert summary.transport_counts == {"NET/IB/1/GDRDMA": 4, "NET/IB/1/GDRDMA/Shared": 2}
    assert summary.channel_counts == {"coll": 2, "p2p": 2, "p2p_per_peer": 2}


def test_single_node_p2p_log_without_plugin() -> None:
    # nccl-tests issue 331: sendrecv between 2 GPUs of one node; the net plugin is absent.
    summary = parse_nccl_log(SENDRECV_A100.read_text(), "sendrecv.txt")
    assert (summary.n_ranks, summary.n_nodes, summary.local_ranks) == (2, 1, 2)
    assert [e.text for e in summary.net_plugin_absent][:1] == [
        "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin."]
    assert summary.transport_counts == {"P2P/direct pointer/read": 16}
    assert summary.net_connections == []


NVS_PRINT = (REPO / "tests" / "captures" / "nccl_log"
             / "nvs-8gpu-4nic-2gpu-per-switch-topology-print-no-prefix-nccl2.19.4.txt")
BOOTSTRAP_FAILURE = MIXED / "h100-2node-ib-sharp-plugin-bootstrap-family-33621-failure-nccl2.18.3.txt"


def test_topology_print_pasted_without_prefixes() -> None:
    # nccl issue 1197: the `=== System` print alone, no `host:pid:tid [dev] NCCL INFO` prefix.
    text = NVS_PRINT.read_text()
    assert looks_like_nccl_log(text)
    system = parse_nccl_log(text, "nvs.txt").system
    assert system is not None
    assert (system.line, system.max_bw, system.total_bw, len(system.links)) == (2, 24.0, 360.0, 21)
    assert [(k.line, k.bw_gbps, k.target, k.info) for k in system.links if k.kind == "NET"] == [
        (10, 25.0, "NET/0", "0/0/25.000000"), (17, 25.0, "NET/1", "1/0/25.000000"),
        (26, 25.0, "NET/2", "2/0/25.000000")]
    first = system.links[0]
    assert (first.kind, first.bw_gbps, first.target, first.info) == ("PCI", 24.0, "PCI/2000", "10b5879610b58796")


def test_warn_lines_with_source_location_and_error_traces() -> None:
    # nccl-tests issue 294: "h100-4:739790:739878 [4] misc/socket.cc:397 NCCL WARN ...", then
    # NCCL's error trace "bootstrap.cc:256 -> 3" up the call stack.
    summary = parse_nccl_log(BOOTSTRAP_FAILURE.read_text(), "h100.txt")
    assert summary.nccl_version == "2.18.3+cuda12.2"  # bare line 31
    assert [w.line for w in summary.warnings] == [85, 91, 97]
    assert summary.warnings[0].text == ("Net : connecting to address  with family 33621 is neither "
                                        "AF_INET(2) nor AF_INET6(10)")
    assert [(e.line, e.text) for e in summary.error_traces[:4]] == [
        (86, "bootstrap.cc:256 -> 3"), (87, "init.cc:516 -> 3"), (88, "init.cc:1089 -> 3"),
        (89, "group.cc:64 -> 3 [Async thread]")]
    assert len(summary.error_traces) == 13
    assert summary.networks == ["IBext_v6"]
    assert summary.net_plugin is not None
    assert summary.net_plugin.path == "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"
    assert summary.net_plugin.transport == "IBext_v6"
    assert summary.net_plugin.vendor == "NVIDIA HPC-X nccl-rdma-sharp-plugins"
    assert [(d.index, d.name, d.flags, d.host) for d in summary.ib_devices][:1] == [(0, "mlx5_1", ["SHARP"], "h100-4")]


NCCL_LOGS = REPO / "tests" / "captures" / "nccl_log"


def test_two_hosts_with_different_plugin_messages_and_nic_lists() -> None:
    # nccl-tests issue 185: dgxh100-4 and dgxh100-3, NCCL_IB_HCA=mlx5_10,mlx5_11, no net plugin.
    summary = parse_nccl_log((NCCL_LOGS / "dgxh100-2node-roce-2hca-plugin-dlerror-nccl2.19.3.txt").read_text(), "dgx")
    assert summary.nccl_version == "2.19.3+cuda12.3"  # the bare line 6
    assert summary.net_plugin is None
    assert [(e.line, e.text) for e in summary.net_plugin_absent] == [
        (4, "NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory "
            "No plugin found (libnccl-net.so), using internal implementation"),
        (12, "NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared object "
             "file: No such file or directory"),
        (13, "NET/Plugin : No plugin found, using internal implementation")]
    assert [(d.index, d.name, d.port, d.link_layer, d.host, d.line) for d in summary.ib_devices] == [
        (0, "mlx5_10", 1, "RoCE", "dgxh100-4", 7), (1, "mlx5_11", 1, "RoCE", "dgxh100-4", 7),
        (0, "mlx5_10", 1, "RoCE", "dgxh100-3", 14), (1, "mlx5_11", 1, "RoCE", "dgxh100-3", 14)]
    assert [(o.host, o.name, o.address) for o in summary.ib_oob] == [
        ("dgxh100-4", "enp220s0np0", "11.1.128.136"), ("dgxh100-3", "enp220s0np0", "11.1.128.128")]
    assert (summary.networks, summary.network_lines) == (["IB"], [9, 15])
    ib_device = summary.ib_device(1, "dgxh100-3")
    assert ib_device is not None
    assert ib_device.name == "mlx5_11"


def test_shortened_channel_summary() -> None:
    # nccl issue 2428, as the poster abbreviated it: "Channel 00 -> NET/IB/0/GDRDMA     Channel 01 -> NET/IB/1".
    summary = parse_nccl_log(
        (NCCL_LOGS / "h20-erdma-2node-channels-ib0-gdrdma-ib1-no-gdr-unable-to-open-erdma_1.txt").read_text(), "erdma")
    assert [(c.line, c.channel, c.via, c.net, c.net_dev, c.gdr) for c in summary.connections] == [
        (2, 0, "NET/IB/0/GDRDMA", "IB", 0, True), (2, 1, "NET/IB/1", "IB", 1, False),
        (3, 2, "NET/IB/0/GDRDMA", "IB", 0, True), (3, 3, "NET/IB/1", "IB", 1, False)]
    assert [(w.line, w.text) for w in summary.warnings] == [(5, "NET/IB : Unable to open device erdma_1")]


def test_one_rank_socket_log_and_unsupported_plugin() -> None:
    # nccl issue 1267: one rank of a torchrun job on a GCP instance; no IB device, sockets.
    summary = parse_nccl_log(
        (NCCL_LOGS / "instance-8g-96c-1rank-socket-fallback-no-ib-plugin-v7-nccl2.19.3.txt").read_text(), "gce")
    assert (summary.nccl_version, summary.n_ranks) == ("2.19.3+cuda12.3", 1)
    assert [e.line for e in summary.net_plugin_absent] == [5]  # "... v4 and lower are not supported."
    assert summary.ib_no_device == [8]
    assert [(d.index, d.name, d.address, d.line) for d in summary.socket_devices] == [(0, "ens7", "10.128.0.33", 9)]
    assert summary.networks == ["Socket"]
    assert summary.rings == {0: [0], 1: [0], 2: [0]}
