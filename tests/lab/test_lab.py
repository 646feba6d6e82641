"""The whole flow on a real 3-node lab: up, configure, idempotent re-run, MTU by real ping, tuned
nccl.conf on every node, a node whose sshd dies mid-configure, and down with nothing left.

Tests in this module share one lab and run in file order (pytest keeps it).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lab.conftest import write_spec
from toolkit.configure import configure
from toolkit.configure.ansible_run import RunResult
from toolkit.providers.base import ClusterOutputs
from toolkit.providers.lab import nodes as lab_nodes
from toolkit.providers.lab import state as lab_state
from toolkit.providers.lab.driver import LocalLabDriver
from toolkit.spec.loader import load_spec
from toolkit.spec.models import ClusterSpec
from toolkit.state import cluster_dir

pytestmark = pytest.mark.lab
NAME = "citest"
MTU = 8500


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, replay_bundle: Path) -> Iterator[tuple[ClusterSpec, ClusterOutputs]]:
    spec = load_spec(write_spec(tmp_path_factory.mktemp("spec"), NAME, 3, replay_bundle))
    driver = LocalLabDriver()
    outputs = driver.up(spec, lambda _line: None)
    yield spec, outputs
    driver.down(spec, lambda _line: None)  # also the test below; a second down is a no-op


def on_node(outputs: ClusterOutputs, index: int, command: str) -> subprocess.CompletedProcess[str]:
    node = outputs.nodes[index]
    return subprocess.run(
        ["ssh", "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={outputs.known_hosts}",
         "-o", "BatchMode=yes", "-i", str(outputs.ssh_private_key), f"root@{node.ssh_host}", command],
        capture_output=True, text=True, timeout=60, check=False,
    )


def fabric_ip(outputs: ClusterOutputs, index: int) -> str:
    ipv4 = outputs.nodes[index].fabric_interfaces[0].ipv4
    assert ipv4 is not None
    return ipv4.split("/")[0]


def run_configure(spec: ClusterSpec, outputs: ClusterOutputs, lines: list[str] | None = None,
                  *, full: bool = False) -> RunResult:
    return configure(spec, outputs, (lines.append if lines is not None else lambda _line: None), full=full)


def role_lines(lines: list[str]) -> list[str]:
    """Progress lines the site playbook prints ("node role: state"); verification prints none."""
    return [line for line in lines if " " in line.split(": ", 1)[0]]


def test_nodes_answer_ssh_with_pinned_host_keys_and_replay_hardware(lab: tuple[ClusterSpec, ClusterOutputs]) -> None:
    _spec, outputs = lab
    assert [n.name for n in outputs.nodes] == [f"{NAME}-n-0", f"{NAME}-n-1", f"{NAME}-n-2"]
    done = on_node(outputs, 1, "hostname; nvidia-smi topo -m >/dev/null; cat /etc/gpuctl-lab")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"{NAME}-n-1"
    assert "REPLAYED output of `nvidia-smi topo -m`" in done.stderr
    assert "no GPU" in done.stdout
    known = Path(str(outputs.known_hosts)).read_text().splitlines()
    assert len(known) == 3
    assert all(line.split()[1] == "ssh-ed25519" for line in known)


def test_jumbo_frames_fail_before_the_mtu_role_has_run(lab: tuple[ClusterSpec, ClusterOutputs]) -> None:
    _, outputs = lab
    done = on_node(outputs, 0, f"ping -M do -s {MTU - 28} -c 1 -W 1 {fabric_ip(outputs, 1)}")
    assert done.returncode != 0  # the node's fab0 starts at 1500: the role has real work to do


def test_configure_succeeds_on_every_node(lab: tuple[ClusterSpec, ClusterOutputs]) -> None:
    spec, outputs = lab
    lines: list[str] = []
    result = run_configure(spec, outputs, lines)
    assert result.ok, [n.line() for n in result.nodes.values()]
    assert result.changed > 0
    assert f"{NAME}-n-0 mtu: changed" in lines
    assert any(line.startswith(f"{NAME}-n-0 nvidia_driver: skipped (lab node without GPU") for line in lines)


def test_second_full_configure_changes_nothing(lab: tuple[ClusterSpec, ClusterOutputs]) -> None:
    spec, outputs = lab
    lines: list[str] = []
    result = run_configure(spec, outputs, lines, full=True)
    assert result.ok
    assert result.changed == 0, {n.name: n.changed for n in result.nodes.values()}
    assert f"{NAME}-n-2 nccl_conf: ok" in lines  # --full ran every role
    assert not any(n.verified for n in result.nodes.values())


def test_rerun_of_an_unchanged_cluster_verifies_without_the_playbook(
    lab: tuple[ClusterSpec, ClusterOutputs], monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec, outputs = lab
    import toolkit.configure as configure_module
    from toolkit.configure.ansible_run import run_playbook

    playbook_runs: list[str] = []

    def counting(playbook: Path, *args: Any, **kwargs: Any) -> RunResult:
        playbook_runs.append(playbook.name)
        return run_playbook(playbook, *args, **kwargs)

    monkeypatch.setattr(configure_module, "run_playbook", counting)
    lines: list[str] = []
    result = run_configure(spec, outputs, lines)
    assert result.ok
    assert result.changed == 0
    assert [n.line() for n in result.nodes.values()] == [
        f"{NAME}-n-{i}: ok (verified, 0 changed)" for i in range(3)]
    assert role_lines(lines) == []
    assert playbook_runs == []  # no ansible run
    record = json.loads((cluster_dir(NAME) / "converge" / f"{NAME}-n-0.json").read_text())
    assert record["identity"]["boot_id"]  # read by the site playbook during the full run
    assert record["expect"]["packages"] == {"dpkg": ["ibverbs-providers", "perftest"]}
    assert record["expect"]["mtu"] == MTU
    assert sorted(record["expect"]["files"]) == ["/etc/nccl.conf"]
    assert record["expect"]["absent"] == ["/etc/profile.d/nccl.sh"]
    assert record["expect"]["peers"] == [fabric_ip(outputs, 1), fabric_ip(outputs, 2)]


def heal_only(spec: ClusterSpec, outputs: ClusterOutputs, drifted: int, reason: str) -> RunResult:
    """Re-run configure; assert that only node `drifted` got the playbook, for `reason`, and healed."""
    lines: list[str] = []
    result = run_configure(spec, outputs, lines)
    assert result.ok, [n.line() for n in result.nodes.values()]
    for index, node in enumerate(result.nodes.values()):
        if index == drifted:
            assert not node.verified
            assert node.reason is not None
            assert reason in node.reason, node.reason
            assert f"full run: {node.reason}" in node.line()
        else:
            assert node.line() == f"{node.name}: ok (verified, 0 changed)"
    assert {line.split(" ", 1)[0] for line in role_lines(lines)} == {outputs.nodes[drifted].name}
    return result


def test_edited_nccl_conf_is_detected_and_restored_on_that_node_only(lab: tuple[ClusterSpec, ClusterOutputs]) -> None:
    spec, outputs = lab
    assert on_node(outputs, 1, "echo NCCL_DEBUG=TRACE >> /etc/nccl.conf").returncode == 0
    result = heal_only(spec, outputs, 1, "nccl.conf differs")
    assert result.changed == 1  # the copy task put the tuned file back
    want = (cluster_dir(NAME) / "nccl" / outputs.nodes[1].name / "nccl.conf").read_text()
    assert on_node(outputs, 1, "cat /etc/nccl.conf").stdout == want


def test_fabric_mtu_back_at_1500_is_detected_and_healed_on_that_node_only(
    lab: tuple[ClusterSpec, ClusterOutputs],
) -> None:
    spec, outputs = lab
    assert on_node(outputs, 2, "ip link set dev fab0 mtu 1500").returncode == 0
    # Its peers' pings to it fail too; verification must blame node 2 alone.
    result = heal_only(spec, outputs, 2, f"MTU 1500 != {MTU}")
    assert result.nodes[outputs.nodes[2].name].roles["mtu"] == "changed"
    assert on_node(outputs, 2, "cat /sys/class/net/fab0/mtu").stdout.strip() == str(MTU)
    done = on_node(outputs, 0, f"ping -M do -s {MTU - 28} -c 1 -W 2 {fabric_ip(outputs, 2)}")
    assert done.returncode == 0


def test_deleted_record_sends_that_node_through_the_playbook(lab: tuple[ClusterSpec, ClusterOutputs]) -> None:
    spec, outputs = lab
    (cluster_dir(NAME) / "converge" / f"{outputs.nodes[0].name}.json").unlink()
    result = heal_only(spec, outputs, 0, "no record")
    assert result.changed == 0  # nothing had drifted; the run only re-proved it
    assert (cluster_dir(NAME) / "converge" / f"{outputs.nodes[0].name}.json").exists()
    assert run_configure(spec, outputs).changed == 0


def test_mtu_8500_carries_unfragmented_pings_across_the_fabric_bridge(lab: tuple[ClusterSpec, ClusterOutputs]) -> None:
    _, outputs = lab
    for src in range(3):
        for dst in range(3):
            if src != dst:
                done = on_node(outputs, src, f"ping -M do -s {MTU - 28} -c 1 -W 2 {fabric_ip(outputs, dst)}")
                assert done.returncode == 0, (src, dst, done.stdout, done.stderr)
    too_big = on_node(outputs, 0, f"ping -M do -s {MTU - 27} -c 1 -W 1 {fabric_ip(outputs, 1)}")
    assert too_big.returncode != 0  # one byte more than the MTU must not pass unfragmented
    persisted = on_node(outputs, 2, "cat /sys/class/net/fab0/mtu /etc/network/interfaces.d/60-gpuctl-mtu-fab0")
    assert persisted.stdout.splitlines()[0] == str(MTU)
    assert f"mtu {MTU}" in persisted.stdout


def test_every_node_has_a_tuned_nccl_conf_with_reasons(lab: tuple[ClusterSpec, ClusterOutputs]) -> None:
    _, outputs = lab
    for index in range(3):
        done = on_node(outputs, index, "cat /etc/nccl.conf; echo ===; ls /etc/profile.d; echo ===; "
                                       "sh -l -c env | grep ^NCCL_")
        conf, profile_d, env = done.stdout.split("===\n")
        assignments = [line for line in conf.splitlines() if line.startswith("NCCL_")]
        assert assignments, conf
        assert "# source: " in conf
        assert f"# node: {outputs.nodes[index].name}" in conf
        # nccl.conf is the one source: no exported copy overrides it in login shells.
        assert "nccl.sh" not in profile_d.split()
        assert env.split() == []
        # The lab's fabric is tcp: NCCL's sockets must run on the fabric network, not management.
        assert "NCCL_SOCKET_IFNAME==fab0" in assignments
        assert "NCCL_IB_DISABLE=1" in assignments
    bundle = on_node(outputs, 0, "cat /var/lib/gpuctl/topology/MANIFEST")
    assert "replayed: " in bundle.stdout  # the gathered bundle says its hardware was replayed


@pytest.mark.slow  # 28 s; make test-slow
def test_node_whose_sshd_dies_mid_configure_is_named_and_healed_by_a_rerun(
    lab: tuple[ClusterSpec, ClusterOutputs],
) -> None:
    spec, outputs = lab
    state = lab_state.load(NAME)
    assert state is not None
    victim = state.nodes[1]
    killed: list[bool] = []

    def progress(line: str) -> None:
        if not killed and line.endswith("nvidia_driver: skipped (lab node without GPU, replaying the capture "
                                        f"{outputs.nodes[0].replay_capture})"):
            lab_nodes.stop(victim)  # sshd and every session of node 1 die here
            killed.append(True)

    result = configure(spec, outputs, progress, full=True)
    assert killed
    assert result.failed == [victim.name], [n.line() for n in result.nodes.values()]
    failed = result.nodes[victim.name]
    assert failed.failed_task is not None
    assert failed.message
    for name in (outputs.nodes[0].name, outputs.nodes[2].name):
        assert result.nodes[name].ok
        assert result.nodes[name].roles.get("nccl_conf") in ("ok", "changed")

    driver = LocalLabDriver()
    assert driver.revive(spec, lambda _line: None) == [victim.name]
    assert not (cluster_dir(NAME) / "converge" / f"{victim.name}.json").exists()  # failed: no record
    healed = run_configure(spec, outputs)
    assert healed.ok, [n.line() for n in healed.nodes.values()]
    # Only the failed node is re-run; the others finished and verify.
    assert healed.nodes[victim.name].reason == "no record of a successful run"
    assert all(healed.nodes[n.name].verified for n in outputs.nodes if n.name != victim.name)


@pytest.mark.slow  # 45 s; make test-slow
def test_a_switch_port_below_the_mtu_fails_the_check_with_a_clear_message(
    lab: tuple[ClusterSpec, ClusterOutputs],
) -> None:
    spec, outputs = lab
    state = lab_state.load(NAME)
    assert state is not None
    # The host end of node 2's fabric veth is its "switch port": at 1500, full-size frames to and
    # from node 2 are dropped, while nodes 0 and 1 still reach each other.
    port = state.nodes[2].fabric_veth
    subprocess.run(["ip", "link", "set", port, "mtu", "1500"], check=True)
    try:
        result = configure(spec, outputs, lambda _line: None, full=True)
    finally:
        subprocess.run(["ip", "link", "set", port, "mtu", "9000"], check=True)
    assert sorted(result.failed) == sorted(n.name for n in outputs.nodes)
    for node in outputs.nodes:
        failed = result.nodes[node.name]
        assert failed.failed_task == (
            "mtu: Fail if a peer that is still up did not answer the full-size do-not-fragment ping"
        )
        assert f"{node.name} cannot reach" in (failed.message or "")
        assert "the path MTU is below 8500" in (failed.message or "")
    node0_message = result.nodes[outputs.nodes[0].name].message or ""
    assert outputs.nodes[2].name in node0_message
    assert outputs.nodes[1].name not in node0_message
    healed = run_configure(spec, outputs)
    assert healed.ok, [n.line() for n in healed.nodes.values()]


def test_down_leaves_nothing_named_for_the_cluster(lab: tuple[ClusterSpec, ClusterOutputs]) -> None:
    spec, _ = lab
    state = lab_state.load(NAME)
    assert state is not None
    LocalLabDriver().down(spec, lambda _line: None)
    assert LocalLabDriver.leftovers(state) == []
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    mounts = Path("/proc/self/mountinfo").read_text()
    assert state.tag not in netns
    assert state.tag not in links
    assert str(Path(state.nodes[0].node_dir).parent) not in mounts
    for node in state.nodes:
        assert lab_nodes.node_processes(node) == []
        assert not Path(node.node_dir).exists()
