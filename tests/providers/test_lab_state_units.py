"""The lab acts only on what its own plan names.

`down` and `status` on a lab whose lab-state.json names the host's `eth0`, `/etc` or another
address act on none of it (FakeHost records every action; nothing real is touched), and `up` and
`status` refuse such a file, naming the entry. Processes and mounts are matched a path component
at a time; an object-store record of another cluster, address, port or pid is refused. The host
writes a node's identity into its layer without following a link the node made there.
"""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.hostile.harness import run_case
from tests.hostile.lab_fake import FakeHost
from tests.lab_specs import NAME, write_lab_spec
from toolkit.errors import ProviderError
from toolkit.providers.lab import nodes as lab_nodes
from toolkit.providers.lab import object_store as lab_store
from toolkit.providers.lab import state as lab_state
from toolkit.spec.loader import load_spec

TAG = "gl-8f383"  # "gl-" + sha256("hostile")[:5]
TOPO = REPO / "examples/captures/h100-roce-node/nvidia-smi-topo-m.txt"


def write_spec(directory: Path, capture: str | None = None) -> Path:
    return write_lab_spec(directory, capture=capture)


def plant_state(home: Path, spec: Path, **changes: object) -> Path:
    state = lab_state.plan(load_spec(spec))
    state.phase = "up"
    document = json.loads(state.model_dump_json())
    for key, value in changes.items():
        if key.startswith("node0_"):
            document["nodes"][0][key.removeprefix("node0_")] = value
        else:
            document[key] = value
    path = home / "clusters" / NAME / "lab-state.json"
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text(json.dumps(document))
    return path


# ------------------------------------------------------------------------------ state files


def test_down_of_a_state_naming_host_objects_acts_only_on_the_labs_own(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = write_spec(tmp_path)
    plant_state(home, spec, node0_netns="eth0", node0_mgmt_veth="docker0", node0_node_dir="/",
                mgmt_bridge="lo", dirs=["/etc"])
    host = FakeHost(NAME, TAG, home)
    with host.installed(monkeypatch):
        down = run_case("down", ["down", str(spec)], home=home)
    assert down.code == 0, down.err
    assert sorted(host.actions) == [
        ("ip link delete", "gl-8f383-f"),
        ("ip link delete", "gl-8f383-m"),
        ("ip netns delete", "gl-8f383-n1"),
        ("ip netns delete", "gl-8f383-n2"),
        ("kill", "800001 15"),
        ("kill", "800002 15"),
        ("rmtree", str(home / "clusters/hostile")),
        ("unlink", str(home / "clusters/hostile")),  # rmtree's last rmdir
    ]
    assert "mgmt_bridge 'lo' (gpuctl's plan has 'gl-8f383-m')" in down.out
    assert "nodes[0].netns 'eth0' (gpuctl's plan has 'gl-8f383-n1')" in down.out
    assert "nodes[0].mgmt_veth 'docker0' (gpuctl's plan has 'gl-8f383-m1')" in down.out
    assert "nodes[0].node_dir '/' (gpuctl's plan has" in down.out
    assert "hostile: removed, and nothing named for it is left" in down.out
    kept = [path.name for path in (home / "damaged").iterdir()]
    assert len(kept) == 1  # kept for a post-mortem
    assert kept[0].endswith("-lab-state.json")


def test_down_without_a_state_finds_every_node_by_the_tag(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The spec shrank to 2 nodes, the lab had 4 and lost its state: all 4 go, by the plan's names."""
    spec = write_spec(tmp_path)
    (home / "clusters" / NAME).mkdir(parents=True, mode=0o700)
    host = FakeHost(NAME, TAG, home, nodes=4)
    host.links.add("gl-8f383-x")  # carries the tag, yet no plan makes it: left alone
    with host.installed(monkeypatch):
        down = run_case("down", ["down", str(spec)], home=home)
    assert down.code == 0, down.err
    assert host.lab_left() == ["gl-8f383-x"]
    assert sorted(t for kind, t in host.actions if kind == "ip netns delete") == [
        "gl-8f383-n1", "gl-8f383-n2", "gl-8f383-n3", "gl-8f383-n4"]


def test_status_of_a_state_naming_another_address_refuses_and_connects_nowhere(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = write_spec(tmp_path)
    plant_state(home, spec, node0_mgmt_ip="8.8.8.8")
    host = FakeHost(NAME, TAG, home)
    with host.installed(monkeypatch):
        status = run_case("status", ["status", str(spec)], home=home)
    assert status.code == 6
    assert "nodes[0].mgmt_ip '8.8.8.8' (gpuctl's plan has '10.213.196.11')" in status.err
    assert [target for kind, target in host.actions if kind == "connect"] == []


def test_up_refuses_a_state_that_names_what_the_plan_does_not(home: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    plant_state(home, spec, node0_fabric_veth="eth0", host_mgmt_ip="192.168.1.1/24")
    with pytest.raises(ProviderError) as refused:
        lab_state.load(NAME)
    assert refused.value.exit_code == 6
    assert ("names what gpuctl's plan for this lab does not, so gpuctl acts on none of it: "
            "host_mgmt_ip '192.168.1.1/24' (gpuctl's plan has '10.213.196.1/24'); "
            "nodes[0].fabric_veth 'eth0' (gpuctl's plan has 'gl-8f383-f1')") in refused.value.message


def test_a_state_of_gpuctls_own_plan_is_accepted(home: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    plant_state(home, spec)
    state = lab_state.load(NAME)
    assert state is not None
    assert [n.netns for n in state.nodes] == ["gl-8f383-n1", "gl-8f383-n2"]


def test_plan_names_are_recognised_and_others_are_not() -> None:
    assert [lab_state.own_link(TAG, n) for n in ("gl-8f383-m", "gl-8f383-f12", "gl-8f383-n1", "eth0",
                                                 "gl-8f383-x", "gl-00000-m", "gl-8f383-m0")] == [
        True, True, False, False, False, False, False]
    assert [lab_state.own_netns(TAG, n) for n in ("gl-8f383-n1", "gl-8f383-n16", "gl-8f383-m1", "cni-1",
                                                  "gl-8f383-n")] == [True, True, False, False, False]


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:  # only the processes this test started, by their own handle
        process.kill()
        process.wait()


def test_processes_are_matched_by_whole_path_components_and_gpuctls_own_launcher(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]],
) -> None:
    nodes = tmp_path / "clusters/lab/nodes"
    # Mentions node 1's directory on its command line, and node 10's: neither is a node's process.
    mentions = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(nodes / "lab-node-1"),
                                 str(nodes / "lab-node-10/merged")])
    # gpuctl's launcher of node 1 before it chroots: the script ends `exec chroot ROOT /usr/sbin/sshd`.
    # It waits on a builtin (`read`), not a child: a forked child carries the script's command line
    # until it execs, and would be matched as a second launcher for that moment.
    script = f"read -r _\nexec chroot {nodes}/lab-node-1/merged /usr/sbin/sshd -D -e"
    launcher = subprocess.Popen(["/bin/sh", "-c", script], stdin=subprocess.PIPE)
    spawned += [mentions, launcher]
    # Popen returns after the fork; /proc shows the command only once the child has exec'd it.
    for child, word in ((mentions, b"time.sleep"), (launcher, b"exec chroot")):
        deadline = time.monotonic() + 10
        while word not in Path(f"/proc/{child.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
    node = lab_state.LabNode(name="lab-node-1", pool="node", index=1, netns="gl-a5114-n1", mgmt_veth="gl-a5114-m1",
                             fabric_veth="gl-a5114-f1", mgmt_ip="10.213.211.11", fabric_ip="10.214.211.11/24",
                             node_dir=str(nodes / "lab-node-1"))
    assert lab_nodes.node_processes(node) == [launcher.pid]
    assert lab_nodes.processes_under(nodes / "lab-node-10") == []
    assert lab_nodes.processes_under(nodes) == [launcher.pid]


def test_mounts_are_matched_by_whole_path_components(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "36 35 0:30 / /h/clusters/lab-2/nodes/a/merged rw - overlay overlay rw\n"
        "37 35 0:31 / /h/clusters/lab/nodes/a/merged rw - overlay overlay rw\n"
        "38 35 0:32 / /h/clusters/lab/nodes/with\\040space rw - tmpfs tmpfs rw\n"
        "39 35 0:33 / /h/clusters/lab rw - tmpfs tmpfs rw\n"
    )
    real_open = open
    monkeypatch.setattr(lab_nodes, "open", lambda path, *a, **k: real_open(mountinfo, *a, **k), raising=False)
    assert lab_nodes.host_mounts_under("/h/clusters/lab") == [
        "/h/clusters/lab/nodes/a/merged", "/h/clusters/lab/nodes/with space", "/h/clusters/lab"]


@pytest.mark.parametrize(("change", "named"), [
    ({"cluster": "other"}, "cluster 'other' (this store is hostile's)"),
    ({"address": "8.8.8.8"}, "address '8.8.8.8' (gpuctl's store listens on 10.213.<1-250>.1)"),
    ({"port": 22}, "port 22 (gpuctl's store listens on 9000)"),
    ({"pid": -1}, "pid -1 (a process of its own has a pid above 1)"),
])
def test_a_store_record_naming_what_gpuctl_did_not_make_is_refused(
    home: Path, change: dict[str, object], named: str,
) -> None:
    record = {"cluster": NAME, "pid": 4242, "address": "10.213.196.1", "port": 9000,
              "started_at": "2026-01-01T00:00:00Z", **change}
    (home / "lab-storage" / NAME).mkdir(parents=True)
    (home / "lab-storage" / NAME / "store.json").write_text(json.dumps(record))
    with pytest.raises(ProviderError) as refused:
        lab_store.load(NAME)
    assert named in refused.value.message


def test_a_damaged_store_record_never_blocks_down_and_its_store_is_still_stopped(
    home: Path, tmp_path: Path,
) -> None:
    """The record names another cluster's store: it is set aside, and `down --delete-storage` finds
    this cluster's store by what gpuctl derives itself (a moto server working in its store directory)."""
    directory = home / "lab-storage" / NAME
    directory.mkdir(parents=True)
    (directory / "store.json").write_text(json.dumps({"cluster": "other", "pid": 4242, "address": "10.213.196.1",
                                                      "port": 9000, "started_at": "2026-01-01T00:00:00Z"}))
    # A stand-in for the store: its command line names moto.server and it works in the store's folder.
    store = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "moto.server"], cwd=directory)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "moto.server"], cwd=tmp_path)
    try:
        assert lab_store.orphan_processes(NAME) == [store.pid]
        spec = load_spec(write_spec(tmp_path))
        lines: list[str] = []
        [kept] = lab_store.on_down(spec, lines.append)
        assert kept.startswith(f"kept the lab object store of {NAME} (pid {store.pid}), whose record was damaged; `")
        assert " down " in kept
        assert kept.endswith(" --delete-storage` stops it")
        assert lines[0].startswith(f"object store: the record {directory}/store.json is damaged (names what "
                                   "gpuctl's store for this lab does not")
        assert store.poll() is None  # kept: its buckets could not be listed safely
        assert lab_store.delete_storage(spec, lines.append) == [f"every bucket of the store (pid {store.pid})"]
        assert store.wait(timeout=10) == -15
        assert not directory.exists()
        assert bystander.poll() is None  # a moto server elsewhere is no store of this cluster's
    finally:
        for process in (store, bystander):
            process.kill()
            process.wait()


def test_a_nodes_identity_is_never_written_through_a_link_the_node_made(tmp_path: Path, home: Path) -> None:
    """Root on a node replaced its /etc/hosts with a link to a host file: the host file stays as it was."""
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen (openssh-client) makes the node's host key")
    host_file = tmp_path / "host-passwd"
    host_file.write_text("root:x:0:0:root:/root:/bin/bash\n")
    spec = write_spec(tmp_path)
    state = lab_state.plan(load_spec(spec))
    node = state.nodes[0]
    layer = Path(node.node_dir) / "upper"
    (layer / "etc").mkdir(parents=True)
    (layer / "etc/hosts").symlink_to(host_file)
    base = tmp_path / "base"
    (base / "etc").mkdir(parents=True)
    lab_nodes.prepare(state, node, base, "ssh-ed25519 AAAAC3Nza test\n", "10.213.196.11 hostile-n-0\n")
    assert host_file.read_text() == "root:x:0:0:root:/root:/bin/bash\n"
    assert not (layer / "etc/hosts").is_symlink()
    assert (layer / "etc/hosts").read_text() == "127.0.0.1 localhost\n10.213.196.11 hostile-n-0\n"
    assert stat.S_IMODE((layer / "root/.ssh/authorized_keys").stat().st_mode) == 0o600


def test_what_a_node_replays_comes_from_the_spec_never_from_the_state_file(home: Path, tmp_path: Path) -> None:
    """`configure` revives a lab's nodes from the recorded state: the replay files a node gets are the
    spec's capture (checked by validate), whatever path the state file names."""
    from toolkit.providers.lab.driver import LocalLabDriver

    spec = load_spec(write_spec(tmp_path))  # no capture
    state = lab_state.plan(spec)
    elsewhere = tmp_path / "secretdir"
    elsewhere.mkdir()
    for node in state.nodes:
        node.replay_capture = str(elsewhere)
    state.phase = "up"
    lab_state.save(state)
    loaded = LocalLabDriver._load(spec)
    assert loaded is not None
    assert [node.replay_capture for node in loaded.nodes] == [None] * len(state.nodes)
