"""The whole flow on a real 3-node lab: up, configure, idempotent re-run, MTU by real ping, tuned
nccl.conf on every node, a node whose sshd dies mid-configure, and down with nothing left.

Tests in this module share one lab and run in file order (pytest keeps it).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab.conftest import write_spec
from toolkit.ansible_run import RunResult
from toolkit.configure import configure
from toolkit.providers import lab_nodes, lab_state
from toolkit.providers.base import ClusterOutputs
from toolkit.providers.local import LocalLabDriver
from toolkit.spec.loader import load_spec
from toolkit.spec.models import ClusterSpec

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


def run_configure(spec: ClusterSpec, outputs: ClusterOutputs, lines: list[str] | None = None) -> RunResult:
    return configure(spec, outputs, (lines.append if lines is not None else lambda _line: None))


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


def test_second_configure_changes_nothing(lab: tuple[ClusterSpec, ClusterOutputs]) -> None:
    spec, outputs = lab
    result = run_configure(spec, outputs)
    assert result.ok
    assert result.changed == 0, {n.name: n.changed for n in result.nodes.values()}


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
        done = on_node(outputs, index, "cat /etc/nccl.conf; echo ===; . /etc/profile.d/nccl.sh; env | grep ^NCCL_")
        conf, env = done.stdout.split("===\n")
        assignments = [line for line in conf.splitlines() if line.startswith("NCCL_")]
        assert assignments, conf
        assert "# source: " in conf
        assert f"# node: {outputs.nodes[index].name}" in conf
        assert sorted(assignments) == sorted(env.split())
        # The lab's fabric is tcp: NCCL's sockets must run on the fabric network, not management.
        assert "NCCL_SOCKET_IFNAME==fab0" in assignments
        assert "NCCL_IB_DISABLE=1" in assignments
    bundle = on_node(outputs, 0, "cat /var/lib/gpuctl/topology/MANIFEST")
    assert "replayed: " in bundle.stdout  # the gathered bundle says its hardware was replayed


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

    result = configure(spec, outputs, progress)
    assert killed
    assert result.failed == [victim.name]
    failed = result.nodes[victim.name]
    assert failed.failed_task is not None
    assert failed.message
    for name in (outputs.nodes[0].name, outputs.nodes[2].name):
        assert result.nodes[name].ok
        assert result.nodes[name].roles.get("nccl_conf") in ("ok", "changed")

    driver = LocalLabDriver()
    assert driver.revive(spec, lambda _line: None) == [victim.name]
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
