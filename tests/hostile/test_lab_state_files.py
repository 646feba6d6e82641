"""Hostile lab state files: `gpuctl status SPEC` then `gpuctl down SPEC` on a lab whose lab-state.json
(or object-store record) was rewritten, counting every action on what gpuctl did not create.

The host is `FakeHost` (tests/hostile/lab_fake.py): the lab's links, namespaces and pids exist there
beside the host's own (`eth0`, `docker0`, another lab's `gl-00000-*`, a `cni-*` namespace), and
nothing real is destroyed. Each case must: exit with a code that is not a bug, never hang, leak no
canary, act on nothing but the cluster's own plan (tag gl-8f383 for cluster `hostile`), and still
leave none of the lab's own objects behind when `down` says it removed the lab.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.hostile.harness import environment, run_case, tally
from tests.hostile.lab_fake import FakeHost
from tests.lab_specs import NAME, write_lab_spec
from toolkit.providers.lab import state as lab_state
from toolkit.spec.loader import load_spec

TAG = "gl-8f383"  # "gl-" + sha256("hostile")[:5]
SURFACE = "lab state files"

Mutation = Callable[[dict[str, Any], Path], "dict[str, Any] | bytes | None"]


def spec_file(directory: Path) -> Path:
    return write_lab_spec(directory, capture=REPO / "examples/captures/h100-roce-node", image="debian_12", mtu=8500)


def node(field: str, value: Any, index: int = 0) -> Mutation:
    def change(state: dict[str, Any], home: Path) -> dict[str, Any]:
        state["nodes"][index][field] = value(home) if callable(value) else value
        return state
    return change


def top(field: str, value: Any) -> Mutation:
    def change(state: dict[str, Any], home: Path) -> dict[str, Any]:
        state[field] = value(home) if callable(value) else value
        return state
    return change


def raw(data: bytes) -> Mutation:
    return lambda _state, _home: data


def linked_dir(state: dict[str, Any], home: Path) -> dict[str, Any]:
    """The node directory the file names is a link to a directory outside the home."""
    outside = home.parent / "outside-dir"
    outside.mkdir(exist_ok=True)
    (outside / "keep.txt").write_text("not gpuctl's\n")
    link = home / "clusters" / NAME / "nodes"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not os.path.lexists(link):
        link.symlink_to(outside)
    return state


def extra_node(state: dict[str, Any], home: Path) -> dict[str, Any]:
    extra = dict(state["nodes"][1])
    extra.update(name="hostile-n-2", index=3, netns="eth0", mgmt_veth="docker0", fabric_veth="lo",
                 mgmt_ip="8.8.8.8", node_dir="/")
    state["nodes"].append(extra)
    return state


CASES: list[tuple[str, Mutation]] = [
    ("unchanged", lambda state, _home: state),
    # Names of links and namespaces gpuctl did not make.
    *[(f"netns {value}", node("netns", value)) for value in
      ("eth0", "lo", "decoy", "cni-1f2e3d4c", "gl-00000-n1", f"{TAG}-n9", f"{TAG}-n1/../x", "", "x" * 300)],
    *[(f"mgmt_veth {value}", node("mgmt_veth", value)) for value in
      ("eth0", "lo", "docker0", "gl-00000-m1", f"{TAG}-evil", TAG, f"{TAG}-m2")],
    *[(f"fabric_veth {value}", node("fabric_veth", value, 1)) for value in ("eth0", "virbr0", "cni0")],
    *[(f"{bridge} {value}", top(bridge, value)) for bridge in ("mgmt_bridge", "fabric_bridge")
      for value in ("eth0", "docker0", "gl-00000-m")],
    ("tag of another lab", top("tag", "gl-00000")),
    ("tag empty", top("tag", "")),
    # Directories outside the cluster's nodes directory.
    *[(f"node_dir {value}", node("node_dir", value)) for value in ("/", "/etc", "/root", "/proc", "/home")],
    ("node_dir of the home", node("node_dir", lambda home: str(home))),
    ("node_dir of another cluster", node("node_dir", lambda home: str(home / "clusters/other/nodes/other-n-0"))),
    ("node_dir with ..", node("node_dir", lambda home: str(home / f"clusters/{NAME}/nodes/../../other"))),
    ("node_dir relative", node("node_dir", "nodes/hostile-n-0")),
    ("node name with ..", node("name", "../../../etc")),
    ("node name of another cluster", node("name", "other-n-0")),
    ("node names repeated", node("name", "hostile-n-0", 1)),
    *[(f"dirs {value}", top("dirs", [value])) for value in ("/", "/etc", "/tmp", "/var/lib")],
    ("dirs the home", top("dirs", lambda home: [str(home)])),
    ("dirs the cluster dir's parent", top("dirs", lambda home: [str(home / "clusters")])),
    ("dirs with ..", top("dirs", lambda home: [str(home / f"clusters/{NAME}/nodes/../..")])),
    ("dirs many", top("dirs", ["/etc", "/usr", "/boot", "/root"])),
    ("nodes dir is a link", linked_dir),
    ("a node more, of the host's", extra_node),
    # Addresses the sshd probe would connect to, and a subnet outside the lab's ranges.
    *[(f"mgmt_ip {value}", node("mgmt_ip", value)) for value in ("8.8.8.8", "127.0.0.1", "169.254.169.254")],
    ("mgmt_cidr the world", top("mgmt_cidr", "0.0.0.0/0")),
    ("host_mgmt_ip foreign", top("host_mgmt_ip", "192.168.1.1/24")),
    ("replay_capture relative", node("replay_capture", "relative/etc")),
    # Another cluster's file, wrong types, junk, huge and deep documents.
    ("another cluster's name", top("cluster", "other")),
    ("layout unknown", top("layout", "host")),
    ("phase unknown", top("phase", "rm -rf")),
    ("index a string", node("index", "one")),
    ("nodes a string", top("nodes", "all")),
    ("nodes of numbers", top("nodes", [1, 2, 3])),
    ("extra key", top("pids", [1])),
    ("top-level list", raw(b"[]")),
    ("top-level null", raw(b"null")),
    ("empty", raw(b"")),
    ("binary", raw(bytes(range(256)) * 4)),
    ("truncated", raw(b'{"cluster": "hostile", "tag": "gl-8f383", "nodes": [')),
    ("deep", raw(b'{"nodes": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")),
    ("huge", raw(b'{"cluster": "' + b"a" * (5 * 1024 * 1024) + b'"}')),
    ("many nodes", lambda state, _home: {**state, "nodes": state["nodes"] * 3000}),
]


def plant(home: Path, mutate: Mutation, spec: Path) -> None:
    """A lab state as `up` leaves it under `home`, then changed by `mutate`; written as a hostile file would be."""
    with environment({"GPUCTL_HOME": str(home)}):
        state = lab_state.plan(load_spec(spec))
    state.phase = "up"
    document = json.loads(state.model_dump_json())
    path = home / "clusters" / NAME / "lab-state.json"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    changed = mutate(document, home)
    path.write_bytes(changed if isinstance(changed, bytes) else json.dumps(changed).encode())


# Files that are not files: the state path itself is a link, a FIFO or a directory.
def plant_special(home: Path, kind: str) -> None:
    path = home / "clusters" / NAME / "lab-state.json"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if kind == "link to /etc/passwd":
        path.symlink_to("/etc/passwd")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()


STORE_CASES: list[tuple[str, dict[str, Any]]] = [
    ("store of another cluster", {"cluster": "other"}),
    ("store pid 1", {"pid": 1}),
    ("store pid -1", {"pid": -1}),
    ("store pid 0", {"pid": 0}),
    ("store address foreign", {"address": "8.8.8.8"}),
    ("store address loopback", {"address": "127.0.0.1"}),
    ("store port 22", {"port": 22}),
]


def plant_store(home: Path, change: dict[str, Any]) -> None:
    record = {"cluster": NAME, "pid": os.getpid(), "address": "10.213.196.1", "port": 9000,
              "started_at": "2026-01-01T00:00:00Z", **change}
    directory = home / "lab-storage" / NAME
    directory.mkdir(parents=True, mode=0o700)
    (directory / "store.json").write_text(json.dumps(record))


def run_one(label: str, home: Path, spec: Path, monkeypatch: pytest.MonkeyPatch) -> FakeHost:
    host = FakeHost(NAME, TAG, home)
    record = tally(SURFACE).record
    with host.installed(monkeypatch):
        status = run_case(f"{label}: status", ["status", str(spec)], home=home)
        down = run_case(f"{label}: down", ["down", str(spec)], home=home)
    actions = host.foreign()
    if down.code == 0 and host.lab_left():
        actions.append(f"left the lab's own {', '.join(host.lab_left())} while saying it removed the lab")
    record(status)
    record(down, actions=actions)
    problems = status.problems() + down.problems() + [f"acted on {what}" for what in actions]
    assert problems == [], f"{label}: {problems}\nstatus: {status.err[-600:]}\ndown: {down.out[-600:]}{down.err[-600:]}"
    return host


@pytest.mark.parametrize("label", [label for label, _ in CASES])
def test_hostile_state_file(label: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    spec = spec_file(tmp_path)
    plant(home, dict(CASES)[label], spec)
    run_one(label, home, spec, monkeypatch)


@pytest.mark.parametrize("kind", ["link to /etc/passwd", "fifo", "directory"])
def test_state_path_that_is_not_a_file(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    spec = spec_file(tmp_path)
    plant_special(home, kind)
    run_one(f"state is a {kind}", home, spec, monkeypatch)
    assert stat.S_ISREG(os.stat("/etc/passwd").st_mode)


@pytest.mark.parametrize("label", [label for label, _ in STORE_CASES])
def test_hostile_store_record(label: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    spec = spec_file(tmp_path)
    plant(home, lambda state, _home: state, spec)
    plant_store(home, dict(STORE_CASES)[label])
    run_one(label, home, spec, monkeypatch)
    # A damaged record never blocks `down`: it is set aside (kept for a post-mortem), not acted on.
    assert not (home / "lab-storage" / NAME / "store.json").exists()
    assert [p.name.startswith(f"{NAME}-") and p.name.endswith("-store.json") for p in (home / "damaged").iterdir()] \
        == [True]


def test_zz_lab_state_files_corpus_is_clean() -> None:
    """Last in the module: the counts of every case above (each also asserted on its own) are 0."""
    tally(SURFACE).assert_clean(minimum=1)
