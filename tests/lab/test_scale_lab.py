"""A 16-node lab: one node appended to a configured cluster converges alone, and one node that
cannot be reached fails with its reason while every other node finishes.

Tests in this module share one lab and run in file order (pytest keeps it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab.conftest import write_spec
from toolkit.commands.configure import record_last_run
from toolkit.commands.status import last_configure
from toolkit.configure import configure, converge
from toolkit.jobs.hostfile import ready_hosts, render
from toolkit.paths import Paths
from toolkit.providers.base import ClusterOutputs
from toolkit.providers.lab import nodes as lab_nodes
from toolkit.providers.lab import state as lab_state
from toolkit.providers.lab.driver import LocalLabDriver
from toolkit.spec.loader import load_spec
from toolkit.spec.models import ClusterSpec
from toolkit.state import cluster_dir

pytestmark = pytest.mark.lab
NAME = "citest"
NODES = 16


def name_of(index: int) -> str:
    return f"{NAME}-n-{index}"


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory,
          replay_bundle: Path) -> Iterator[tuple[ClusterSpec, ClusterOutputs]]:
    """16 nodes up and configured, then the spec's count raised to 17 and `up` run again."""
    folder = tmp_path_factory.mktemp("spec")
    spec = load_spec(write_spec(folder, NAME, NODES, replay_bundle))
    driver = LocalLabDriver()
    outputs = driver.up(spec, lambda _line: None)
    try:
        first = configure(spec, outputs, lambda _line: None)
        assert first.ok, [n.line() for n in first.nodes.values() if not n.ok]
        bigger = load_spec(write_spec(folder, NAME, NODES + 1, replay_bundle))
        yield bigger, driver.up(bigger, lambda _line: None)
    finally:
        driver.down(spec, lambda _line: None)


def test_up_appends_a_node_and_keeps_every_address_the_others_had(
    grown: tuple[ClusterSpec, ClusterOutputs],
) -> None:
    _spec, outputs = grown
    assert [n.name for n in outputs.nodes] == [name_of(i) for i in range(NODES + 1)]
    state = lab_state.load(NAME)
    assert state is not None
    octet = state.mgmt_cidr.split(".")[2]
    # Node i has host address 10 + i + 1 on both networks (FIRST_HOST 10, indexes from 1).
    assert [n.mgmt_ip for n in state.nodes] == [f"10.213.{octet}.{11 + i}" for i in range(NODES + 1)]


def test_an_appended_node_converges_alone_and_its_peers_ping_it_again(
    grown: tuple[ClusterSpec, ClusterOutputs],
) -> None:
    spec, outputs = grown
    lines: list[str] = []
    result = configure(spec, outputs, lines.append)
    assert result.ok, [n.line() for n in result.nodes.values() if not n.ok]
    new = name_of(NODES)
    assert result.nodes[new].reason == "no record of a successful run"
    assert not result.nodes[new].verified
    assert all(result.nodes[name_of(i)].verified for i in range(NODES))
    # Only the new node ran the site playbook ("node role: state" lines name no other node).
    assert {line.split(" ", 1)[0] for line in lines if " " in line.split(": ", 1)[0]} == {new}
    # Nodes 16 - 2^k ping the new node now (the old last node, 15, pinged node 0 before): they were
    # probed after the run, at full size, and kept their configuration.
    repinged = sorted(i for i in range(NODES) if "mtu: Note: new peers pinged at full size"
                      in result.nodes[name_of(i)].notes)
    assert repinged == [0, 8, 12, 14, 15]
    for i in repinged:
        assert f"{name_of(i)}: peers changed, pinged after the run" in lines
    again = configure(spec, outputs, lambda _line: None)
    assert all(node.verified for node in again.nodes.values()), [n.line() for n in again.nodes.values()]


def test_one_unreachable_node_fails_with_its_reason_and_the_others_finish(
    grown: tuple[ClusterSpec, ClusterOutputs],
) -> None:
    spec, outputs = grown
    state = lab_state.load(NAME)
    assert state is not None
    victim, healthy = name_of(3), name_of(5)
    # Both lose their record (a full run each); the victim's sshd and every process on it die first.
    converge.forget(cluster_dir(NAME), [victim, healthy])
    lab_nodes.stop(state.nodes[3])
    result = configure(spec, outputs, lambda _line: None)
    record_last_run(NAME, result)
    assert result.failed == [victim], [n.line() for n in result.nodes.values()]
    failed = result.nodes[victim]
    assert failed.failed_task is not None
    assert failed.message
    assert failed.line().startswith(f"{victim}: FAILED at '")
    assert result.nodes[healthy].ok
    assert not result.nodes[healthy].verified
    assert result.nodes[healthy].roles.get("nccl_conf") in ("ok", "changed")
    others = [name_of(i) for i in range(NODES + 1) if name_of(i) not in (victim, healthy)]
    assert all(result.nodes[name].verified for name in others)
    shown = last_configure(NAME, victim)
    assert shown.result == "failed"
    assert shown.reason is not None
    assert shown.reason.startswith(failed.failed_task)
    assert shown.text.startswith("failed at ")
    # The job hand-off holds the ready nodes only, each with the GPUs its topology shows, and names
    # the failed one with its reason.
    ready = ready_hosts(outputs, Paths.of(NAME))
    assert [host.name for host in ready.hosts] == [name_of(i) for i in range(NODES + 1) if i != 3]
    assert {host.slots for host in ready.hosts} == {8}  # the replayed H100 node's eight GPUs
    assert ready.hosts[0].address == str(outputs.nodes[0].fabric_interfaces[0].ipv4).split("/")[0]
    assert ready.left_out == {victim: shown.text}
    assert render(ready.hosts, "mpirun").splitlines()[0] == f"{ready.hosts[0].address} slots=8"
    assert render(ready.hosts, "torchrun") == (f"--nnodes={NODES} --nproc-per-node=8 --rdzv-backend=c10d "
                                               f"--rdzv-endpoint={ready.hosts[0].address}:29400\n")

    # The node is back (as after a reboot): `configure --nodes` runs it alone, touching no other.
    assert LocalLabDriver().revive(spec, lambda _line: None) == [victim]
    healed = configure(spec, outputs, lambda _line: None, nodes=[victim])
    assert list(healed.nodes) == [victim]
    assert healed.ok, healed.nodes[victim].line()
    assert healed.nodes[victim].reason == "no record of a successful run"
