"""Node-local runs: each node's inventory, the shipped bundle, and the launcher run for real on this
machine (ansible-core from the bundle, the events callback, the report) read by the tracker."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from toolkit.configure import node_local
from toolkit.configure.render import InventoryData
from toolkit.paths import ROLES_PATH
from toolkit.topology.gather import gather_script

pytestmark = pytest.mark.unit

HOSTILE = "{{ lookup('pipe', 'touch /tmp/gpuctl-pwned') }}"


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!unsafe", lambda loader, node: ("unsafe", loader.construct_scalar(node)))  # type: ignore[arg-type]


def _data() -> InventoryData:
    return InventoryData(
        hosts={"n-0": {"ansible_host": "10.0.0.5", "ansible_port": 22, "ansible_user": "ubuntu", "ansible_become": True,
                       "gpuctl_pool": HOSTILE, "gpuctl_fabric_ip": "10.1.0.5/24"},
               "n-1": {"ansible_host": "10.0.0.6", "gpuctl_pool": "p"}},
        group={"ansible_ssh_common_args": "-o StrictHostKeyChecking=yes",
               "ansible_python_interpreter": "/usr/bin/python3",
               "ansible_ssh_private_key_file": "/root/.gpuctl/key", "gpuctl_cluster": "c", "gpuctl_mtu": 8500,
               "gpuctl_gather_script": "/opt/gpuctl/gather.sh", "gpuctl_bundle_dir": "/root/.gpuctl/c/bundles",
               "gpuctl_nccl_dir": "/root/.gpuctl/c/nccl"})


def test_a_nodes_inventory_holds_its_own_vars_without_the_controllers_connection_every_string_unsafe() -> None:
    text = node_local.node_inventory(_data(), "n-0", "/var/lib/gpuctl-local-abc", Path("/opt/gpuctl/gather.sh"),
                                     cluster="c", provider="alicloud")
    nodes = yaml.load(text, Loader=_Loader)["all"]["children"]["gpuctl_nodes"]
    assert list(nodes["hosts"]) == ["n-0"]
    assert nodes["hosts"]["n-0"] == {"gpuctl_pool": ("unsafe", HOSTILE), "gpuctl_fabric_ip": ("unsafe", "10.1.0.5/24")}
    assert nodes["vars"] == {
        "gpuctl_cluster": ("unsafe", "c"), "gpuctl_mtu": 8500,
        "gpuctl_gather_script": ("unsafe", "/var/lib/gpuctl-local-abc/gather/gather.sh"),
        "gpuctl_bundle_dir": ("unsafe", "/var/lib/gpuctl-local-abc/run/bundles"),
        "ansible_connection": ("unsafe", "local"), "mtu_runtime_only": True,
    }


def test_the_finish_inventory_names_the_peers_not_to_judge_and_the_found_addresses_of_hcc_peers() -> None:
    data = _data()
    data.hosts["n-0"]["gpuctl_mtu_peer_nodes"] = ["n-1"]
    text = node_local.node_inventory(data, "n-0", "/var/lib/gpuctl-local-abc", Path("/opt/gpuctl/gather.sh"),
                                     cluster="c", provider="tencentcloud", phase="finish", unjudged=["10.1.0.9"],
                                     known={"n-1": ["10.2.0.6", "10.2.1.6"]})
    nodes = yaml.load(text, Loader=_Loader)["all"]["children"]["gpuctl_nodes"]
    host, group = nodes["hosts"]["n-0"], nodes["vars"]
    assert "gpuctl_mtu_peer_nodes" not in host
    assert host["gpuctl_mtu_peers"] == [("unsafe", "10.2.0.6"), ("unsafe", "10.2.1.6")]
    assert host["gpuctl_mtu_peer_names"] == {"10.2.0.6": ("unsafe", "n-1"), "10.2.1.6": ("unsafe", "n-1")}
    assert group["gpuctl_mtu_unjudged"] == [("unsafe", "10.1.0.9")]
    assert group["gpuctl_nccl_dir"] == ("unsafe", "/var/lib/gpuctl-local-abc/finish/nccl")
    assert "mtu_runtime_only" not in group


def test_the_bundle_holds_ansible_core_its_requirements_and_the_named_roles_owned_by_root_without_caches(
    tmp_path: Path,
) -> None:
    site = {"finish.yml": "---\n", "site.yml": "---\n- hosts: gpuctl_nodes\n  tasks: []\n"}
    digest = node_local.bundle_digest(site, ["mtu"], gather_script())
    bundle = node_local.build_bundle(tmp_path, digest, site, ["mtu"], gather_script())
    assert bundle.name == f"bundle-{digest}.tar.gz"
    assert bundle.stat().st_mode & 0o777 == 0o600
    with tarfile.open(bundle) as archive:
        members = archive.getmembers()
    names = {m.name for m in members}
    top = f"gpuctl-local-{digest}"
    for wanted in ("lib/ansible/cli/playbook.py", "lib/jinja2/__init__.py", "lib/yaml/__init__.py",
                   "lib/markupsafe/__init__.py", "lib/packaging/version.py", "lib/resolvelib/__init__.py",
                   "roles/mtu/tasks/main.yml", "roles/mtu/filter_plugins", "callback_plugins/gpuctl_events.py",
                   "launch.sh", "ansible.cfg", "gather/gather.sh", "site.yml", "finish.yml"):
        assert f"{top}/{wanted}" in names, wanted
    # site.yml last: the unarchive's `creates` names it, so a half-done unpack is done again.
    assert members[-1].name == f"{top}/site.yml"
    assert any(n.startswith(f"{top}/lib/ansible-core-") and n.endswith(".dist-info/METADATA") for n in names)
    assert not any(n.startswith(f"{top}/roles/") and not n.startswith(f"{top}/roles/mtu") for n in names)
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert all(m.uid == 0 and m.gid == 0 and not m.mode & 0o022 for m in members)
    assert next(m for m in members if m.name == top).mode == 0o700
    # Built once: the same digest is the same file; another digest replaces it.
    assert node_local.build_bundle(tmp_path, digest, site, ["mtu"], gather_script()) == bundle
    other = node_local.build_bundle(tmp_path, "0" * 16, site, ["mtu"], gather_script())
    assert [p.name for p in tmp_path.glob("bundle-*")] == [other.name]


SITE = """---
- name: A node-local run's site playbook
  hosts: gpuctl_nodes
  gather_facts: false
  tasks:
    - name: Read this node's identity (boot id, machine id) for gpuctl's record
      ansible.builtin.command: echo boot_id=b-1
      changed_when: false
    - name: Say what was decided
      ansible.builtin.debug:
        msg: "Note: the var stays literal: {{ gpuctl_pool }}"
    - name: Write a file
      ansible.builtin.copy:
        dest: "{{ gpuctl_bundle_dir }}/n-0.tar"
        content: "bundle"
        mode: "0600"
    - name: Fail where asked
      ansible.builtin.command: "false"
      when: fail_here | default(false) | bool
"""


def _launch(tmp_path: Path, site: str, role: str | None = None) -> tuple[int, Path]:
    """Ship `site` as a bundle into tmp_path/node, as the controller's unarchive does, and run the
    launcher there on this machine; `role`: a role `probe` whose one task is this text."""
    playbooks = {"site.yml": site, "finish.yml": "---\n"}
    digest = node_local.bundle_digest(playbooks, [], gather_script())
    (tmp_path / "controller").mkdir(exist_ok=True)
    bundle = node_local.build_bundle(tmp_path / "controller", digest, playbooks, [], gather_script())
    nodes = tmp_path / "node"
    nodes.mkdir(exist_ok=True)
    with tarfile.open(bundle) as archive:
        archive.extractall(nodes, filter="data")
    remote = nodes / f"gpuctl-local-{digest}"
    if role is not None:
        (remote / "roles/probe/tasks").mkdir(parents=True)
        (remote / "roles/probe/tasks/main.yml").write_text(role)
    inventory = node_local.node_inventory(_data(), "n-0", str(remote), gather_script(), cluster="c", provider="local")
    done = subprocess.run(["sh", str(remote / "launch.sh"), str(remote), "site", "converge"], input=inventory.encode(),
                          capture_output=True, timeout=300, check=False)
    return done.returncode, remote / "result.tar"


def test_the_launcher_runs_the_site_playbook_here_and_its_report_reads_as_a_controller_run(tmp_path: Path) -> None:
    rc, report = _launch(tmp_path, SITE)
    assert rc == 0
    lines: list[str] = []
    bundles = tmp_path / "bundles"
    bundles.mkdir()
    node = node_local.read_report(report, "n-0", lines.append, bundles)
    assert node is not None
    assert node.ok
    assert node.failed_task is None
    assert node.identity == "boot_id=b-1"
    assert node.notes == [f"site: Note: the var stays literal: {HOSTILE}"]
    assert node.changed == 1
    assert lines == ["n-0 site: changed"]
    assert (bundles / "n-0.tar").read_text() == "bundle"
    assert not Path("/tmp/gpuctl-pwned").exists()


def test_a_task_that_fails_on_the_node_is_named_from_its_events(tmp_path: Path) -> None:
    rc, report = _launch(tmp_path, SITE.replace("fail_here | default(false)", "true"))
    assert rc == 2
    node = node_local.read_report(report, "n-0", lambda _line: None, tmp_path)
    assert node is not None
    assert not node.ok
    assert node.failed_task == "site: Fail where asked"
    assert node.message is not None
    assert "non-zero return code" in node.message


def _report(tmp_path: Path, members: dict[str, Any]) -> Path:
    path = tmp_path / "report.tar"
    with tarfile.open(path, "w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/shadow"
                archive.addfile(info)
                continue
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_a_run_that_ended_before_any_task_fails_the_node_with_its_last_output(tmp_path: Path) -> None:
    report = _report(tmp_path, {"events.jsonl": b"", "rc": b"3\n",
                                "output": b"no Python 3.10 to 3.12 on this node (ansible-core 2.16 needs one)\n"})
    node = node_local.read_report(report, "n-0", lambda _line: None, tmp_path)
    assert node is not None
    assert not node.ok
    assert node.failed_task == "node-local run"
    assert node.message == "exit status 3: no Python 3.10 to 3.12 on this node (ansible-core 2.16 needs one)"


def test_a_report_is_read_defensively(tmp_path: Path) -> None:
    assert node_local.read_report(tmp_path / "absent.tar", "n-0", lambda _line: None, tmp_path) is None
    events = b'not json\n["a list"]\n{"event": "runner_on_ok", "event_data": {"host": "other", "task": "t"}}\n'
    report = _report(tmp_path, {"events.jsonl": events, "rc": b"0", "output": b"", "bundles/n-0.tar": None})
    bundles = tmp_path / "bundles"
    bundles.mkdir()
    node = node_local.read_report(report, "n-0", lambda _line: None, bundles)
    assert node is not None
    assert node.ok
    assert node.changed == 0
    # The link in the report is not followed, and not kept.
    assert not (bundles / "n-0.tar").exists()
    (tmp_path / "broken.tar").write_bytes(b"\x1f\x8b not a tar")
    broken = node_local.read_report(tmp_path / "broken.tar", "n-0", lambda _line: None, bundles)
    assert broken is not None
    assert not broken.ok
    assert broken.message == "its report could not be read (ReadError)"


def test_a_role_task_is_named_as_a_controller_run_names_it(tmp_path: Path) -> None:
    site = "---\n- name: Site\n  hosts: gpuctl_nodes\n  gather_facts: false\n  roles:\n    - probe\n"
    rc, report = _launch(tmp_path, site, role='---\n- name: Probe task\n  ansible.builtin.command: "false"\n')
    assert rc == 2
    lines: list[str] = []
    node = node_local.read_report(report, "n-0", lines.append, tmp_path)
    assert node is not None
    assert node.failed_task == "probe: Probe task"
    assert lines == ["n-0 probe: failed"]


def test_the_launcher_stops_a_run_left_going_and_nothing_else(tmp_path: Path) -> None:
    nodes = tmp_path / "node"
    left, other = nodes / "gpuctl-local-old", nodes / "gpuctl-local-other"
    for directory in (left, other):
        (directory / "run").mkdir(parents=True)
    (left / "launch.sh").write_text("sleep 120\n")
    running = subprocess.Popen(["sh", str(left / "launch.sh")], start_new_session=True)
    # A pid file naming a process that is not a launcher of its directory: never signalled.
    innocent = subprocess.Popen(["sleep", "120"], start_new_session=True)
    try:
        (left / "run/pid").write_text(f"{running.pid}\n")
        (other / "run/pid").write_text(f"{innocent.pid}\n")
        rc, _report = _launch(tmp_path, SITE)
        assert rc == 0
        assert running.wait(timeout=10) == -15
        assert innocent.poll() is None
        assert not left.exists()
        assert not other.exists()
    finally:
        for process in (running, innocent):
            process.kill()
            process.wait()


def test_a_report_with_hostile_events_or_compression_is_read_without_harm(tmp_path: Path) -> None:
    events = b"[" * 200000 + b'\n{"event": "runner_on_ok", "event_data": {"host": "n-0", "res": [1]}}\n' \
        + b'{"event": "runner_on_ok", "event_data": {"host": ["n-0"], "task": "t"}}\n'
    report = _report(tmp_path, {"events.jsonl": events, "rc": b"0", "output": b""})
    node = node_local.read_report(report, "n-0", lambda _line: None, tmp_path)
    assert node is not None
    assert node.ok
    # Compressed: never inflated on the controller.
    packed = tmp_path / "packed.tar"
    with tarfile.open(packed, "w:gz") as archive:
        archive.add(report, arcname="events.jsonl")
    refused = node_local.read_report(packed, "n-0", lambda _line: None, tmp_path)
    assert refused is not None
    assert refused.message == "its report could not be read (ReadError)"


def test_finish_ships_only_the_tuned_nccl_conf_byte_for_byte(tmp_path: Path) -> None:
    nccl = tmp_path / "nccl"
    (nccl / "n-0").mkdir(parents=True)
    (nccl / "n-0" / "nccl.conf").write_bytes(b"NCCL_IB_HCA=mlx5_0\n# caf\xe9 latin-1\n")
    (nccl / "n-0" / "explain.json").write_text("{}")
    run = node_local.LocalRun(bundle=tmp_path / "b", remote_dir="/var/lib/gpuctl-local-abc",
                              inventories=tmp_path / "inv", results=tmp_path / "res", tuned=tmp_path / "tuned",
                              gather=Path("/opt/gpuctl/gather.sh"))
    for directory in (run.inventories, run.tuned):
        directory.mkdir()
    node_local.prepare_finish(run, _data(), ["n-0"], nccl, unjudged=["10.1.0.9"], known={}, cluster="c",
                              provider="alicloud")
    with tarfile.open(run.tuned / "n-0.tar") as archive:
        assert archive.getnames() == ["finish/nccl/n-0/nccl.conf"]
        handle = archive.extractfile("finish/nccl/n-0/nccl.conf")
        assert handle is not None
        assert handle.read() == b"NCCL_IB_HCA=mlx5_0\n# caf\xe9 latin-1\n"


def test_the_ping_check_named_is_the_mtu_roles_own_task() -> None:
    from toolkit.configure import PING_CHECK
    tasks = yaml.safe_load((ROLES_PATH / "mtu" / "tasks" / "main.yml").read_text())
    names = [task["name"] for block in tasks for task in block.get("block", [])]
    assert "Fail if a peer that is still up did not answer the full-size do-not-fragment ping" in names
    assert PING_CHECK == "mtu: Fail if a peer that is still up did not answer the full-size do-not-fragment ping"


def test_nodes_that_failed_only_for_a_peer_that_dropped_out_of_finish_are_checked_again_without_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from toolkit.configure import PING_CHECK, _NodeLocal
    from toolkit.configure.ansible_run import NodeResult, RunResult

    data = _data()
    data.hosts["n-2"] = {"ansible_host": "10.0.0.7", "gpuctl_fabric_ip": "10.1.0.7/24"}
    data.hosts["n-3"] = {"ansible_host": "10.0.0.8", "gpuctl_fabric_ip": "10.1.0.8/24"}
    shipped: list[tuple[list[str], list[str]]] = []
    monkeypatch.setattr(node_local, "prepare_finish",
                        lambda run, data, names, nccl, *, unjudged, **_: shipped.append((list(names), list(unjudged))))
    rounds = iter([
        RunResult(nodes={"n-0": NodeResult("n-0", ok=False, failed_task=PING_CHECK, message="cannot reach n-2"),
                         "n-1": NodeResult("n-1"),
                         "n-2": NodeResult("n-2", ok=False, failed_task="ansible-playbook", message="ssh lost"),
                         "n-3": NodeResult("n-3", ok=False, failed_task=PING_CHECK, message="cannot reach n-2")},
                  rc=2),
        RunResult(nodes={"n-0": NodeResult("n-0"), "n-3": NodeResult("n-3")}, rc=0),
    ])
    phases: list[list[str]] = []

    def phase(self: Any, name: str, names: list[str], extravars: Any) -> RunResult:
        phases.append(list(names))
        return next(rounds)

    monkeypatch.setattr(_NodeLocal, "_phase", phase)
    local = object.__new__(_NodeLocal)
    local.data, local.run = data, object()  # type: ignore[assignment]
    local.paths = SimpleNamespace(nccl=Path("/nonexistent"))  # type: ignore[assignment]
    local.outputs = SimpleNamespace(cluster="c", provider="alicloud")  # type: ignore[assignment]
    lines: list[str] = []
    local.progress = lines.append
    result = local.finish(["n-0", "n-1", "n-2", "n-3"], ["10.1.0.99"], {"n-2": ["10.2.0.7"]})
    assert phases == [["n-0", "n-1", "n-2", "n-3"], ["n-0", "n-3"]]
    assert shipped[1] == (["n-0", "n-3"], ["10.1.0.7", "10.1.0.99", "10.2.0.7"])
    assert {name: node.ok for name, node in result.nodes.items()} == {"n-0": True, "n-1": True, "n-2": False,
                                                                       "n-3": True}
    assert result.rc == 2
    assert lines == ["finish: 2 node(s) failed the MTU check while 1 peer(s) dropped out (n-2): checking them "
                     "again without those"]
