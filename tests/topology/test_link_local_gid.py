"""A link-local GID in use on RoCE (issue class 3), from real third-party captures.

NCCL's RoCE connect line prints the GID's two 64-bit halves as read on a little-endian host
(net_ib.cc: "GID %ld (%lX/%lX)"): `80FE/1A8A41FEFF21A75E` is fe80::5ea7:21ff:fe41:8a1a.
"""

from __future__ import annotations

from pathlib import Path

from toolkit.topology.detect import detect_paths
from toolkit.topology.log_check import judge_log
from toolkit.topology.nccl_log import parse_nccl_log

CAPTURES = Path(__file__).resolve().parents[1] / "captures"
FORCED = "nccl-2.21-gid-index-env-0-connect-line-gid-0-80fe-link-local-roce-k8s-nccl-issue1657.txt"


def test_the_connect_line_gid_is_decoded_from_its_little_endian_halves() -> None:
    summary = parse_nccl_log((CAPTURES / "nccl_log" / FORCED).read_text(), FORCED)
    assert [(u.line, u.index, u.gid, u.net_dev, u.ib_dev, u.link_local) for u in summary.gids_in_use] == [
        (11, 0, "fe80::5ea7:21ff:fe41:8a1a", 0, 0, True)]
    assert summary.env["NCCL_IB_GID_INDEX"] == "0"


def test_a_link_local_gid_forced_by_nccl_ib_gid_index_is_flagged() -> None:
    # The excerpt shows no failing connection: a link-local GID works on one flat network, so this is a
    # warning (an error only where the log also shows the connections failing).
    verdict = judge_log(parse_nccl_log((CAPTURES / "nccl_log" / FORCED).read_text(), FORCED))
    [finding] = [f for f in verdict.findings if f.code == "link-local-gid"]
    assert (finding.severity, finding.lines) == ("warning", [11])
    assert finding.message == (
        "NCCL_IB_GID_INDEX=0 (set by the environment) makes RoCE use a link-local GID "
        "(GID 0 = fe80::5ea7:21ff:fe41:8a1a): a link-local GID is not routed, so RoCE v2 across subnets fails (it "
        "works on one flat network only); set NCCL_IB_GID_INDEX to the RoCE v2 GID that carries the node's IPv4 "
        "address (show_gids), or unset it and let NCCL pick one (NCCL_IB_ADDR_FAMILY, NCCL >= 2.21)")


def test_a_forced_link_local_gid_with_failing_connections_is_a_problem() -> None:
    # The check on a summary model: the real log above is cut before any failure line.
    from toolkit.topology.nccl_log import Evidence, GidInUse, NcclLogSummary

    summary = NcclLogSummary(source="model", nccl_version="2.19.3", env={"NCCL_IB_GID_INDEX": "1"},
                             gids_in_use=[GidInUse(line=4, index=1, gid="fe80::ac0:ebff:feda:1cfb")],
                             warnings=[Evidence(line=9, text="Call to ibv_modify_qp failed with error Connection "
                                                             "timed out")])
    verdict = judge_log(summary)
    [finding] = [f for f in verdict.findings if f.code == "link-local-gid"]
    assert (verdict.verdict, finding.severity, finding.lines) == ("problem", "error", [4, 9])
    assert finding.message.endswith("; the log shows connections failing; set NCCL_IB_GID_INDEX to the RoCE v2 "
                                    "GID that carries the node's IPv4 address (show_gids); unsetting it does not "
                                    "help before NCCL 2.21, whose default index is 0")


def test_the_same_run_without_its_connect_line_says_nothing_of_gids() -> None:
    name = "nccl-2.21.5-torch-init-passage-socket-ifname-net1-bootstrap-192.168.6.1-same-run-nccl-issue1657.txt"
    summary = parse_nccl_log((CAPTURES / "nccl_log" / name).read_text(), name)
    assert summary.gids_in_use == []
    assert [f.code for f in judge_log(summary).findings] == ["no-transport"]


def test_the_failing_index_is_link_local_and_the_working_one_is_the_roce_v2_ipv4_gid() -> None:
    # NCCL #769: GID index 1 (fe80::ac0:ebff:feda:1cfb, RoCE v2) timed out, index 3 worked.
    name = "gid-index-1-fe80-roce-v2-link-local-timeout-vs-3-ipv4-mlx5-bond0-ibv-devinfo-tabs-nccl-issue769.txt"
    topology = detect_paths([CAPTURES / "rdma" / name])
    assert [(n.name, n.gid_index, n.gid_ipv4) for n in topology.nics] == [("mlx5_bond_0", 3, "200.0.209.6")]
