"""The fast path's fingerprint and verdicts, without a lab: what changes the fingerprint, what
does not, how a probe's output is judged, and whom a failed ping is held against."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from toolkit.configure import converge
from toolkit.configure.render import InventoryData
from toolkit.paths import ROLES_PATH
from toolkit.providers.base import ClusterOutputs

ROLES = ("mtu", "nccl_conf")
NODES = ("c-n-0", "c-n-1")


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cluster directory as configure leaves it, with a private copy of two roles."""
    roles = tmp_path / "roles"
    for role in ROLES:
        shutil.copytree(ROLES_PATH / role, roles / role)
    monkeypatch.setattr(converge, "ROLES_PATH", roles)
    cluster = tmp_path / "cluster"
    cluster.mkdir()
    (cluster / "site.yml").write_text("---\n- hosts: gpuctl_nodes\n")
    for name in NODES:
        (cluster / "nccl" / name).mkdir(parents=True)
        (cluster / "nccl" / name / "nccl.conf").write_text("NCCL_IB_DISABLE=1\n")
        (cluster / "nccl" / name / "nccl.sh").write_text("export NCCL_IB_DISABLE=1\n")
    return cluster


def inventory() -> InventoryData:
    """The typed inventory configure hands to converge (never read back from inventory.yml)."""
    hosts = {name: {"ansible_host": f"10.0.0.{i}", "gpuctl_fabric_interface": "fab0",
                    "gpuctl_fabric_ip": f"10.1.0.{i}/24"} for i, name in enumerate(NODES)}
    return InventoryData(hosts=hosts, group={"gpuctl_mtu": 8500, "gpuctl_gather_script": ""})


DATA = inventory()


def print_of(base: Path, node: str = NODES[0], data: InventoryData = DATA) -> str:
    return converge.fingerprint(converge.fingerprint_parts(base, node, ROLES, data))


def test_fingerprint_is_stable_when_nothing_changes(base: Path) -> None:
    before = print_of(base)
    assert re.fullmatch(r"[0-9a-f]{64}", before)
    # Files configure writes that do not decide the configuration leave it unchanged.
    (base / "bundles" / NODES[0]).mkdir(parents=True)
    (base / "bundles" / NODES[0] / "ibv_devinfo.txt").write_text("hca_id: mlx5_0\n")
    (base / "nccl" / NODES[0] / "explain.json").write_text("{}\n")
    assert print_of(base) == before
    # ... and an input that does decide it changes it (so the comparison above can fail).
    (base / "nccl" / NODES[0] / "nccl.sh").write_text("export NCCL_IB_DISABLE=0\n")
    assert print_of(base) != before


def test_fingerprint_changes_with_a_role_file(base: Path) -> None:
    before = converge.fingerprint_parts(base, NODES[0], ROLES, DATA)
    tasks = converge.ROLES_PATH / "mtu" / "tasks" / "main.yml"
    tasks.write_text(tasks.read_text() + "\n# edited\n")
    after = converge.fingerprint_parts(base, NODES[0], ROLES, DATA)
    assert converge.fingerprint(after) != converge.fingerprint(before)
    assert [k for k in after if after[k] != before[k]] == ["roles"]


def test_fingerprint_changes_with_a_new_role_file(base: Path) -> None:
    before = print_of(base)
    (converge.ROLES_PATH / "nccl_conf" / "tasks" / "extra.yml").write_text("---\n")
    assert print_of(base) != before


def test_fingerprint_changes_with_a_host_var_of_that_node_only(base: Path) -> None:
    before = {n: print_of(base, n) for n in NODES}
    changed = inventory()
    changed.hosts[NODES[1]]["gpuctl_fabric_interface"] = "eth9"
    assert print_of(base, NODES[1], changed) != before[NODES[1]]
    assert print_of(base, NODES[0], changed) == before[NODES[0]]


def test_fingerprint_changes_with_a_group_var_rendered_files_and_site(base: Path) -> None:
    seen = {print_of(base)}
    seen.add(print_of(base, data=InventoryData(hosts=DATA.hosts, group={**DATA.group, "gpuctl_mtu": 9000})))
    (base / "nccl" / NODES[0] / "nccl.conf").write_text("NCCL_IB_DISABLE=0\n")
    seen.add(print_of(base))
    (base / "site.yml").write_text("---\n- hosts: all\n")
    seen.add(print_of(base))
    assert len(seen) == 4


def test_plan_says_why_each_node_needs_the_playbook(base: Path) -> None:
    converge.write_record(base, NODES[0], ROLES, DATA, identity={"boot_id": "b", "machine_id": "m"},
                          packages={"dpkg": ["perftest"]})
    converge.write_record(base, NODES[1], ROLES, DATA, identity={"boot_id": "b", "machine_id": "m"}, packages={})
    to_verify, reasons = converge.plan(base, NODES, ROLES, DATA)
    assert sorted(to_verify) == list(NODES)
    assert reasons == {}
    tasks = converge.ROLES_PATH / "mtu" / "tasks" / "main.yml"
    tasks.write_text(tasks.read_text() + "\n# edited\n")
    converge.forget(base, [NODES[1]])
    to_verify, reasons = converge.plan(base, NODES, ROLES, DATA)
    assert to_verify == {}
    assert reasons == {NODES[0]: "roles changed", NODES[1]: "no record of a successful run"}


def record(base: Path) -> dict[str, Any]:
    return converge.write_record(base, NODES[0], ROLES, DATA, identity={"boot_id": "b1", "machine_id": "m1"},
                                 packages={"dpkg": ["perftest", "libnccl2=2.26.2-1+cuda12.4"]})


def probe_output(rec: dict[str, Any], *, boot_id: str = "b1", mtu: str = "8500",
                 files: tuple[str, str] | None = None, extra: tuple[str, ...] = ()) -> str:
    """What the probe script prints on a node in the given state (by default: as recorded)."""
    recorded = [rec["expect"]["files"][p] for p in sorted(rec["expect"]["files"])]
    hashes = files if files is not None else recorded
    return "\n".join([f"boot_id={boot_id}", "machine_id=m1", f"mtu={mtu}",
                      *(f"file{i}={h}" for i, h in enumerate(hashes)), *extra, "done=1"])


def test_probe_script_checks_everything_the_record_expects(base: Path) -> None:
    script = converge.probe_script(record(base))
    assert "ping -M do -s 8472 -c 1 -W 1 10.1.0.1" in script
    assert "/sys/class/net/fab0/mtu" in script
    assert "sha256sum < /etc/nccl.conf" in script
    assert "sha256sum < /etc/profile.d/nccl.sh" in script
    assert "dpkg-query" in script
    assert "'installed 2.26.2-1+cuda12.4'" in script  # an apt pin is checked with its version


def test_judge_names_each_drift(base: Path) -> None:
    rec = record(base)
    assert converge.judge(NODES[0], rec, 0, probe_output(rec, extra=("ping_ok=10.1.0.1",)), "").problems == []
    drifted = probe_output(rec, boot_id="b2", mtu="1500", files=("0" * 64, ""),
                           extra=("missing=perftest", "ping_fail=10.1.0.1"))
    probe = converge.judge(NODES[0], rec, 0, drifted, "")
    assert probe.problems == ["rebooted", "MTU 1500 != 8500", "nccl.conf differs", "nccl.sh missing",
                              "package perftest not installed"]
    assert probe.ping_failed == ["10.1.0.1"]
    lost = converge.judge(NODES[0], rec, 255, "", "ssh: connect to host 10.0.0.0 port 22: Connection refused")
    assert not lost.reachable
    assert "Connection refused" in lost.problems[0]


def test_a_failed_ping_is_held_against_the_sender_only_when_the_peer_looks_healthy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outputs = ClusterOutputs.model_validate({
        "cluster": "c", "provider": "local", "fabric": "tcp", "mtu": 8500,
        "nodes": [{"name": n, "pool": "n", "instance_id": n, "instance_type": "lab", "private_ip": f"10.0.0.{i}",
                   "ssh_host": f"10.0.0.{i}", "fabric_interfaces": [{"name": "fab0", "ipv4": f"10.1.0.{i}/24"}]}
                  for i, n in enumerate(NODES)],
    })
    rec = {"expect": {"mtu": 8500}}
    # Node 1's MTU drifted: node 0's ping to it fails, but the blame is node 1's alone.
    probes = {NODES[0]: converge.Probe(NODES[0], ping_failed=["10.1.0.1"]),
              NODES[1]: converge.Probe(NODES[1], problems=["MTU 1500 != 8500"], ping_failed=["10.1.0.0"])}
    monkeypatch.setattr(converge, "_run_probe", lambda _o, node, _r: probes[node])
    assert converge.verify(outputs, dict.fromkeys(NODES, rec)) == {NODES[0]: [], NODES[1]: ["MTU 1500 != 8500"]}
    # Both look healthy yet cannot reach each other: the path is broken, both get the playbook.
    probes[NODES[1]] = converge.Probe(NODES[1], ping_failed=["10.1.0.0"])
    found = converge.verify(outputs, dict.fromkeys(NODES, rec))
    assert found == {NODES[0]: ["ping -M do -s 8472 to 10.1.0.1 failed"],
                     NODES[1]: ["ping -M do -s 8472 to 10.1.0.0 failed"]}
