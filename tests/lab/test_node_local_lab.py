"""Node-local runs on a 3-node lab: the site playbook runs on each node itself, then finish.yml pings
the MTU peers; a node whose run fails is named with the task that failed while the others finish;
their records hold for a run from the controller; Ctrl-C stops the runs on every node.

Tests in this module share one lab and run in file order.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab.conftest import write_spec
from toolkit.configure import configure, converge
from toolkit.paths import REPO
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


SPEC: dict[str, Path] = {}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, replay_bundle: Path) -> Iterator[tuple[ClusterSpec, ClusterOutputs]]:
    SPEC["path"] = write_spec(tmp_path_factory.mktemp("spec"), NAME, 3, replay_bundle)
    spec = load_spec(SPEC["path"])
    driver = LocalLabDriver()
    try:
        yield spec, driver.up(spec, lambda _line: None)
    finally:
        driver.down(spec, lambda _line: None)


def _node_local_processes() -> dict[str, list[int]]:
    """Per node, its processes of a node-local run (the launcher, ansible-playbook, their modules):
    each has the shipped directory in its command line."""
    state = lab_state.load(NAME)
    assert state is not None
    running: dict[str, list[int]] = {}
    for node in state.nodes:
        for pid in lab_nodes.node_processes(node):
            try:
                line = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"gpuctl-local-" in line:
                running.setdefault(node.name, []).append(pid)
    return running


def test_a_node_local_run_configures_every_node_but_the_one_whose_task_fails(
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
    target.mkdir()
    lines: list[str] = []
    try:
        result = configure(spec, outputs, lines.append, node_local=True)
    finally:
        shutil.rmtree(target)
    assert result.failed == [victim.name], [n.line() for n in result.nodes.values()]
    failed = result.nodes[victim.name]
    assert failed.failed_task == "site: Make apt retry a failed download"
    assert failed.message
    assert converge.load_record(cluster_dir(NAME), victim.name) is None
    for name, node in result.nodes.items():
        if name == victim.name:
            continue
        # The roles ran on the node (their lines come from its events), and the peers were pinged
        # there without the failed node: neither was failed for it.
        assert node.ok, node.line()
        assert node.roles["topology_facts"] == "changed", (name, node.roles)
        assert node.roles["nccl_conf"] == "changed"
        assert node.roles["mtu"] == "changed"
        assert f"{name} rdma_userspace: changed" in lines
        assert converge.load_record(cluster_dir(NAME), name) is not None


def test_a_run_from_the_controller_then_verifies_the_node_local_nodes_and_heals_the_failed_one(
    lab: tuple[ClusterSpec, ClusterOutputs],
) -> None:
    spec, outputs = lab
    # The site playbook is the same either way: the node-local nodes' records hold for a run from here.
    again = configure(spec, outputs, lambda _line: None)
    assert again.ok, [n.line() for n in again.nodes.values()]
    assert [name for name, node in again.nodes.items() if not node.verified] == [f"{NAME}-n-1"]


@pytest.mark.slow  # 12 s; make test-slow
def test_ctrl_c_stops_the_runs_on_every_node_and_exits_130(lab: tuple[ClusterSpec, ClusterOutputs]) -> None:
    process = subprocess.Popen([sys.executable, "-m", "toolkit", "configure", str(SPEC["path"]), "--node-local",
                                "--full"], cwd=REPO, env=os.environ.copy(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(_node_local_processes()) < 3:
            time.sleep(0.2)
        assert len(_node_local_processes()) == 3, "the runs did not start on every node"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err[-2000:]
    assert "stopping the site runs on 3 node(s)" in out, out[-2000:]
    assert _node_local_processes() == {}
