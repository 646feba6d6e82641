"""configure() on four nodes without a lab: what each node's state sends where. Ansible, the host
key scan and the nodes' probes are replaced by recorders; the plan, the records, the inventory and
the playbooks are the real ones.

Node 3 is appended to a configured cluster of 0..2, so node 2 (the old last node) gains it as a
peer (peers.peers_of: the last node pings node 0; now node 2 pings 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import toolkit.configure as configure_module
from toolkit.configure import configure, converge
from toolkit.configure.ansible_run import NodeResult, RunResult
from toolkit.paths import Paths
from toolkit.providers.base import ClusterOutputs, FabricInterface, NodeOutput
from toolkit.spec.loader import load_spec
from toolkit.spec.models import ClusterSpec
from toolkit.ssh import Pinned

SPEC = Path(__file__).parents[2] / "examples" / "local-lab.yaml"


def outputs_of(count: int, known_hosts: Path | None = None) -> ClusterOutputs:
    return ClusterOutputs(cluster="lab", provider="local", fabric="tcp", mtu=8500, known_hosts=known_hosts, nodes=[
        NodeOutput(name=f"lab-gpu-{i}", pool="node", instance_id=f"i-{i}", instance_type="lab",
                   private_ip=f"10.0.0.{10 + i}", ssh_host=f"10.0.0.{10 + i}",
                   fabric_interfaces=[FabricInterface(name="fab0", ipv4=f"10.1.0.{10 + i}/24")])
        for i in range(count)])


class Cluster:
    """Recorders for every call configure makes to the world."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
        self.spec: ClusterSpec = load_spec(SPEC)
        self.limits: list[list[str]] = []
        self.extravars: list[dict[str, bool] | None] = []
        self.drifted: set[str] = set()  # nodes whose probe reports a local problem
        self.down: set[str] = set()  # nodes the site playbook cannot reach
        self.pinned_only: list[object] = []
        self.no_key: set[str] = set()
        self.probed: list[tuple[str, tuple[str, ...]]] = []
        monkeypatch.setattr(configure_module, "run_playbook", self.run_playbook)
        monkeypatch.setattr(configure_module, "_decide", self.decide)
        monkeypatch.setattr(configure_module, "pin_host_keys", self.pin)
        monkeypatch.setattr(converge, "_run_probe", self.probe)

    def run_playbook(self, playbook: Path, inventory: Path, hosts: list[str], progress: Any, *,
                     config: Path, limit: list[str] | None = None,
                     extravars: dict[str, bool] | None = None) -> RunResult:
        assert limit is not None
        self.limits.append(sorted(limit))
        self.extravars.append(extravars)
        nodes = {}
        for name in limit:
            ok = name not in self.down and name not in self.no_key
            nodes[name] = NodeResult(name, ok=ok, identity=f"boot_id=b-{name}\nmachine_id=m-{name}\n",
                                     failed_task=None if ok else "Gathering Facts",
                                     message=None if ok else "unreachable")
        return RunResult(nodes=nodes, rc=0 if all(n.ok for n in nodes.values()) else 2)

    def decide(self, spec: object, outputs: object, paths: object, result: RunResult, progress: Any) -> list[str]:
        return [name for name, node in result.nodes.items() if node.ok]

    def pin(self, outputs: ClusterOutputs, known_hosts: Path, progress: Any, *, only: object = None) -> Pinned:
        self.pinned_only.append(only)
        return Pinned(failed={name: "offered no host key" for name in self.no_key
                              if only is None or name in only})  # type: ignore[operator]

    def probe(self, outputs: ClusterOutputs, node: str, record: dict[str, Any]) -> converge.Probe:
        self.probed.append((node, tuple(record["expect"]["peers"])))
        found = converge.Probe(node)
        if node in self.drifted:
            found.problems.append("fab0: MTU 1500 != 8500")
        for peer in record["expect"]["peers"]:
            if peer in {f"10.1.0.{10 + int(n.rsplit('-', 1)[1])}" for n in self.down | self.no_key}:
                found.ping_unreachable.append(peer)
        return found


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Cluster:
    return Cluster(monkeypatch, tmp_path)


def lines(result: RunResult) -> dict[str, str]:
    return {name: node.line() for name, node in result.nodes.items()}


def test_a_node_that_offers_no_host_key_is_in_the_play_so_its_pingers_are_not_failed(cluster: Cluster) -> None:
    cluster.no_key = {"lab-gpu-1"}
    result = configure(cluster.spec, outputs_of(3), lambda _line: None)
    # Node 1 is in the site play (it fails there at once, so the mtu role skips it as a peer), but
    # neither tuned nor delivered.
    assert cluster.limits == [["lab-gpu-0", "lab-gpu-1", "lab-gpu-2"], ["lab-gpu-0", "lab-gpu-2"]]
    assert result.failed == ["lab-gpu-1"]
    assert result.nodes["lab-gpu-1"].failed_task == "gpuctl: pin the host key"
    assert result.nodes["lab-gpu-1"].message == "offered no host key"
    base = Paths.of("lab").base
    assert [converge.load_record(base, f"lab-gpu-{i}") is not None for i in range(3)] == [True, False, True]


def test_nodes_pins_only_the_named_nodes(cluster: Cluster) -> None:
    configure(cluster.spec, outputs_of(3), lambda _line: None, nodes=["lab-gpu-2"])
    assert cluster.pinned_only == [["lab-gpu-2"]]
    assert cluster.limits == [["lab-gpu-2"], ["lab-gpu-2"]]


def configured(cluster: Cluster) -> None:
    first = configure(cluster.spec, outputs_of(3), lambda _line: None)
    assert first.ok
    cluster.limits.clear()
    cluster.probed.clear()


def test_an_appended_node_runs_alone_and_its_new_pinger_is_rebased(cluster: Cluster) -> None:
    configured(cluster)
    result = configure(cluster.spec, outputs_of(4), lambda _line: None)
    assert cluster.limits == [["lab-gpu-3"], ["lab-gpu-3"]]
    # Node 2 is probed twice: before the run on the peer its record holds (node 0), after it on its new one.
    assert [p for p in cluster.probed if p[0] == "lab-gpu-2"] == [("lab-gpu-2", ("10.1.0.10",)),
                                                                 ("lab-gpu-2", ("10.1.0.13",))]
    assert result.nodes["lab-gpu-2"].notes == ["mtu: Note: new peers pinged at full size"]
    assert result.ok
    record = converge.load_record(Paths.of("lab").base, "lab-gpu-2")
    assert record is not None
    assert record["expect"]["peers"] == ["10.1.0.13"]


def test_a_pinger_that_drifted_on_its_own_runs_the_playbook_before_the_new_node_pings_it(cluster: Cluster) -> None:
    configured(cluster)
    cluster.drifted = {"lab-gpu-2"}
    result = configure(cluster.spec, outputs_of(4), lambda _line: None)
    assert cluster.limits == [["lab-gpu-2", "lab-gpu-3"], ["lab-gpu-2", "lab-gpu-3"]]
    assert result.nodes["lab-gpu-2"].reason == "fab0: MTU 1500 != 8500"
    assert [p for p in cluster.probed if p[0] == "lab-gpu-2"] == [("lab-gpu-2", ("10.1.0.10",))]


def test_a_pinger_whose_new_peer_failed_keeps_its_old_record_and_says_so(cluster: Cluster) -> None:
    configured(cluster)
    cluster.down = {"lab-gpu-3"}
    result = configure(cluster.spec, outputs_of(4), lambda _line: None)
    assert result.failed == ["lab-gpu-3"]
    pinger = result.nodes["lab-gpu-2"]
    assert (pinger.ok, pinger.verified) == (True, True)
    assert pinger.notes == ["mtu: Note: new peers 10.1.0.13 not judged (they are not ready): "
                            "the next configure pings them"]
    # Not rebased: the next run plans node 2 as a pinger of new peers again.
    base = Paths.of("lab").base
    record = converge.load_record(base, "lab-gpu-2")
    assert record is not None
    assert record["expect"]["peers"] == ["10.1.0.10"]
    cluster.down = set()
    cluster.limits.clear()
    healed = configure(cluster.spec, outputs_of(4), lambda _line: None)
    assert cluster.limits == [["lab-gpu-3"], ["lab-gpu-3"]]
    assert healed.nodes["lab-gpu-2"].notes == ["mtu: Note: new peers pinged at full size"]


def test_full_tells_the_site_playbook_to_run_the_install_roles_whatever_the_record_says(cluster: Cluster) -> None:
    configure(cluster.spec, outputs_of(2), lambda _line: None)
    configure(cluster.spec, outputs_of(2), lambda _line: None, full=True)
    # site, deliver of the first run; site (with the switch), deliver of the --full run.
    assert cluster.extravars == [None, None, {"gpuctl_full": True}, None]


def test_under_nodes_an_outside_new_peer_is_probed_before_it_counts_as_judged(cluster: Cluster) -> None:
    configured(cluster)
    configure(cluster.spec, outputs_of(4), lambda _line: None, nodes=["lab-gpu-3"])  # the new node alone
    cluster.limits.clear()
    cluster.probed.clear()
    # Node 2 gains node 3; configure node 2 alone: node 3 is outside, and probed before it counts.
    result = configure(cluster.spec, outputs_of(4), lambda _line: None, nodes=["lab-gpu-2"])
    assert cluster.limits == []
    assert ("lab-gpu-3", ("10.1.0.10",)) in cluster.probed
    assert result.nodes["lab-gpu-2"].notes == ["mtu: Note: new peers pinged at full size"]
    assert list(result.nodes) == ["lab-gpu-2"]


def test_under_nodes_an_outside_new_peer_that_is_down_is_not_held_against_the_pinger(cluster: Cluster) -> None:
    configured(cluster)
    configure(cluster.spec, outputs_of(4), lambda _line: None, nodes=["lab-gpu-3"])
    cluster.down = {"lab-gpu-3"}  # it died since: its probe fails, and node 2's ping to it too
    cluster.drifted = {"lab-gpu-3"}
    result = configure(cluster.spec, outputs_of(4), lambda _line: None, nodes=["lab-gpu-2"])
    pinger = result.nodes["lab-gpu-2"]
    assert (pinger.ok, pinger.verified) == (True, True)
    assert pinger.notes == ["mtu: Note: new peers 10.1.0.13 not judged (they are not ready): "
                            "the next configure pings them"]
