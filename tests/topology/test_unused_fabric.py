"""A fabric silently unused: TCP where the log itself shows RDMA hardware (issue class 2).

Real third-party logs in tests/captures/nccl_log (line 1 names each source; tests/captures/INDEX.md).
Each test writes out what `check-log` must conclude from the log alone (no --topology).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.topology.log_check import judge_log
from toolkit.topology.nccl_log import parse_nccl_log

LOGS = Path(__file__).resolve().parents[1] / "captures" / "nccl_log"


def _judge(name: str) -> tuple[str, list[tuple[str, str]]]:
    verdict = judge_log(parse_nccl_log((LOGS / name).read_text(), name))
    return verdict.verdict, [(f.severity, f.code) for f in verdict.findings]


def _message(name: str, code: str) -> str:
    verdict = judge_log(parse_nccl_log((LOGS / name).read_text(), name))
    return next(f.message for f in verdict.findings if f.code == code)


def test_an_rdma_device_nccl_could_not_open_then_sockets_is_a_problem() -> None:
    name = "docker-mlx5-bond0-roce-ibv-open-device-failed-socket-bond0-nccl-issue451.txt"
    verdict, findings = _judge(name)
    assert verdict == "problem"
    assert findings[0] == ("error", "socket-fallback")
    assert _message(name, "socket-fallback") == (
        "inter-node traffic went over TCP sockets (bond0) although the log shows RDMA hardware: NCCL could not open "
        "mlx5_bond_0 (ibv_open_device failed). Make the RDMA devices usable to the job (/dev/infiniband and "
        "rdma-core in the container, NCCL_IB_DISABLE unset)")


def test_sockets_over_ipoib_with_ib_disabled_by_the_environment_is_a_problem() -> None:
    name = "ipoib-ibs85f0-ib0-ib-disabled-socket-a100-nccl-tests-issue188.txt"
    verdict, findings = _judge(name)
    assert verdict == "problem"
    assert ("error", "socket-fallback") in findings
    message = _message(name, "socket-fallback")
    assert "the sockets ran over IPoIB interface(s) ibs85f0, ib0, so InfiniBand hardware is there" in message
    assert "NCCL_IB_DISABLE=1 was set by the environment, which turns NET/IB off." in message


@pytest.mark.parametrize(("name", "plugin"), [
    ("fastsocket-plugin-h100-5-gvnic-netdevs-cut-mid-line-nccl2.20.5-nccl-issue1519.txt", "FastSocket"),
    ("fastsocket-gcp-a100-accept-connect-lines-no-plugin-line-nccl-issue651.txt", "FastSocket"),
    ("gpudirecttcpx-plugin-gcp-a3-rx-ctrl-timeout-warn-enp12s0-enp134s0-tcpx-plugin-issue1.txt", "GPUDirectTCPX"),
])
def test_a_tcp_net_plugin_is_named_as_tcp_never_as_the_fabric(name: str, plugin: str) -> None:
    summary = parse_nccl_log((LOGS / name).read_text(), name)
    assert summary.tcp_plugin == plugin
    verdict, findings = _judge(name)
    # No RDMA device anywhere in these logs (GCP gVNIC): TCP may be all there is, so unknown, not ok.
    assert verdict == "unknown"
    assert ("unknown", "socket-unknown") in findings
    assert _message(name, "socket-unknown").startswith(f"traffic went over TCP (the {plugin} net plugin")


def test_a_bridge_in_the_socket_list_nccl_used_is_a_warning() -> None:
    name = "container-no-ib-device-socket-np0-netdevs-bond0-virbr0-nccl2.17.1-nccl-issue941.txt"
    verdict, findings = _judge(name)
    assert verdict == "unknown"  # NET/IB found no device: the log alone does not show RDMA hardware
    assert findings == [("unknown", "socket-unknown"), ("warning", "socket-bridge")]
    assert _message(name, "socket-bridge") == (
        "NCCL's socket list includes virbr0: a local bridge or overlay that does not reach the other nodes' NICs "
        "directly; set NCCL_SOCKET_IFNAME to the interface that does")


@pytest.mark.parametrize("name", [
    # every rank lists NET/Socket over ib0 (bootstrap), but NET/IB mlx5_0 is the transport
    "trap-socket-lists-ib0-but-net-ib-mlx5_0-used-nccl2.4.7-nv-peer-memory-issue56.txt",
    # virbr0 and flannel.1 only in the socket list; NET/IB over mlx5 on both hosts
    "trap-virbr0-in-socket-list-but-net-ib-mlx5-used-two-hosts-nccl-tests-issue29.txt",
    "flannel1-in-socket-list-34-roce-mlx5-ports-mpirun-prefix-nccl2.4.2-nccl-issue224.txt",
])
def test_a_socket_list_beside_net_ib_is_no_fallback_and_no_bridge_warning(name: str) -> None:
    verdict, findings = _judge(name)
    codes = [code for _, code in findings]
    assert "socket-fallback" not in codes
    assert "socket-bridge" not in codes
    assert verdict == "unknown"  # no channel line in these excerpts: which transport carried data is not shown


def test_sockets_forced_without_any_rdma_line_stay_unknown() -> None:
    # NCCL_NET=Socket is not echoed by NCCL: the log shows sockets over enp225s0f1 and nothing of RDMA.
    name = "nccl-net-socket-forced-dgx-a100-enp225s0f1-nccl2.11.4-nccl-issue676.txt"
    assert _judge(name) == ("unknown", [("unknown", "socket-unknown")])


def test_a_plugin_that_failed_to_load_is_not_a_tcp_transport() -> None:
    from toolkit.topology.nccl_log import _TCP_PLUGIN

    assert _TCP_PLUGIN.search("NET/Plugin : Plugin load (libnccl-net-tcpx.so) returned 2 : libnccl-net-tcpx.so: "
                              "cannot open shared object file") is None
    assert _TCP_PLUGIN.search("NET/Plugin: Loaded net plugin FastSocket (v6)") is not None
