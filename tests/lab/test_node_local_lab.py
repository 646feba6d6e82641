"""Node-local runs on a 3-node lab: the site playbook runs on each node itself, the controller pings
the MTU peers afterwards, a node whose run fails is named with the task that failed while the others
finish, and the records are the same as a run from the controller's.

Tests in this module share one lab and run in file order.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab.conftest import write_spec
from toolkit.configure import configure, converge
from toolkit.providers.base import ClusterOutputs
from toolkit.providers.lab import nodes as lab_nodes
from toolkit.providers.lab import state as lab_state
from toolkit.providers.lab.driver import LocalLabDriver
from toolkit.spec.loader import load_spec
from toolkit.spec.models import ClusterSpec
from toolkit.state import cluster_dir

pytestmark = pytest.mark.lab
NAME = "cinl"
RETRIES = Path("etc/apt/apt.conf.d/80-gpuctl-retries")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, replay_bundle: Path) -> Iterator[tuple[ClusterSpec, ClusterOutputs]]:
    spec = load_spec(write_spec(tmp_path_factory.mktemp("spec"), NAME, 3, replay_bundle))
    driver = LocalLabDriver()
    try:
        yield spec, driver.up(spec, lambda _line: None)
    finally:
        driver.down(spec, lambda _line: None)


def test_a_node_local_run_configures_every_node_and_a_run_from_here_then_verifies_them(
    lab: tuple[ClusterSpec, ClusterOutputs],
) -> None:
    spec, outputs = lab
    lines: list[str] = []
    result = configure(spec, outputs, lines.append, node_local=True)
    assert result.ok, [n.line() for n in result.nodes.values()]
    for name, node in result.nodes.items():
        # The roles ran on the node (their lines come from its events); the controller ran mtu again.
        assert node.roles["topology_facts"] == "changed", (name, node.roles)
        assert node.roles["nccl_conf"] == "changed"
        assert node.roles["mtu"] in ("ok", "changed")
        assert f"{name} rdma_userspace: changed" in lines
        assert converge.load_record(cluster_dir(NAME), name) is not None
    # The site playbook is the same either way: a run from the controller verifies every node.
    again = configure(spec, outputs, lambda _line: None)
    assert all(node.verified for node in again.nodes.values()), [n.line() for n in again.nodes.values()]


def test_a_node_whose_run_fails_is_named_with_the_task_and_the_others_finish(
    lab: tuple[ClusterSpec, ClusterOutputs],
) -> None:
    spec, outputs = lab
    state = lab_state.load(NAME)
    assert state is not None
    victim = state.nodes[1]
    # A directory where the site playbook writes apt's retry setting: that task fails on this node.
    # Through a process of the node: its root as the node sees it (the overlay is mounted in its own
    # namespace), from one that runs inside it.
    inside = next(pid for pid in lab_nodes.node_processes(victim) if os.readlink(f"/proc/{pid}/root") != "/")
    target = Path(f"/proc/{inside}/root") / RETRIES
    target.unlink()
    target.mkdir()
    try:
        result = configure(spec, outputs, lambda _line: None, full=True, node_local=True)
    finally:
        shutil.rmtree(target)
    assert result.failed == [victim.name], [n.line() for n in result.nodes.values()]
    failed = result.nodes[victim.name]
    assert failed.failed_task == "site: Make apt retry a failed download"
    assert failed.message
    # The other two did not ping the failed node and were not failed for it.
    for name, node in result.nodes.items():
        if name != victim.name:
            assert node.ok, node.line()
            assert node.roles["mtu"] in ("ok", "changed"), node.line()
    # Fixed, the node alone runs again and is ready.
    healed = configure(spec, outputs, lambda _line: None, nodes=[victim.name], node_local=True)
    assert healed.ok, [n.line() for n in healed.nodes.values()]
    assert list(healed.nodes) == [victim.name]
