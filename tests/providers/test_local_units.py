"""The local lab's pure parts: names, addresses, the state file, replay classification, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO, require_shared_fixtures
from toolkit.errors import MissingToolError
from toolkit.providers.lab import host as lab_host
from toolkit.providers.lab import replay as lab_replay
from toolkit.providers.lab import state as lab_state
from toolkit.providers.lab.capture import CaptureFile
from toolkit.spec.loader import load_spec_text
from toolkit.spec.models import ClusterSpec


def spec(name: str = "lab", count: int = 3, capture: str | None = "/captures/h100") -> ClusterSpec:
    capture_line = f"\n    capture: {capture}" if capture else ""
    return load_spec_text(f"""\
name: {name}
provider: local
node_pools:
  - name: node
    instance_type: lab
    count: {count}{capture_line}
network: {{fabric: tcp, admin_cidr: 127.0.0.0/8}}
lifecycle: {{ttl: 2h}}
""")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path))
    return tmp_path


def test_plan_names_fit_linux_limits_and_carry_the_cluster_tag() -> None:
    state = lab_state.plan(spec(count=12))
    assert state.tag == lab_state.lab_tag("lab")
    assert len(state.tag) == 8  # "gl-" + 5 hex digits
    for link in state.links:
        assert len(link) <= 15, link  # IFNAMSIZ - 1
        assert link.startswith(state.tag + "-")
    assert len(set(state.links)) == len(state.links)
    assert [n.name for n in state.nodes][:2] == ["lab-node-0", "lab-node-1"]


def test_two_clusters_get_different_tags() -> None:
    assert lab_state.lab_tag("lab") != lab_state.lab_tag("lab2")


def test_plan_addresses_are_in_the_lab_ranges_and_host_is_dot_one() -> None:
    state = lab_state.plan(spec(count=2))
    octet = state.mgmt_cidr.split(".")[2]
    assert state.mgmt_cidr == f"10.213.{octet}.0/24"
    assert state.fabric_cidr == f"10.214.{octet}.0/24"
    assert state.host_mgmt_ip == f"10.213.{octet}.1/24"
    assert [n.mgmt_ip for n in state.nodes] == [f"10.213.{octet}.11", f"10.213.{octet}.12"]
    assert [n.fabric_ip for n in state.nodes] == [f"10.214.{octet}.11/24", f"10.214.{octet}.12/24"]


def test_plan_avoids_a_subnet_another_lab_already_uses() -> None:
    first = lab_state.plan(spec())
    taken = int(first.mgmt_cidr.split(".")[2])
    second = lab_state.plan(spec(), {taken})
    assert second.mgmt_cidr != first.mgmt_cidr


def test_state_round_trips_and_is_written_atomically(home: Path) -> None:
    state = lab_state.plan(spec())
    state.phase = "creating"
    lab_state.save(state)
    path = home / "clusters" / "lab" / "lab-state.json"
    assert json.loads(path.read_text())["phase"] == "creating"
    assert not path.with_suffix(".tmp").exists()
    loaded = lab_state.load("lab")
    assert loaded == state


def test_state_lists_every_object_down_must_remove() -> None:
    state = lab_state.plan(spec(count=2))
    tag = state.tag
    assert state.links == [f"{tag}-m", f"{tag}-f", f"{tag}-m1", f"{tag}-f1", f"{tag}-m2", f"{tag}-f2"]
    assert [n.netns for n in state.nodes] == [f"{tag}-n1", f"{tag}-n2"]
    assert state.dirs == [str(Path(state.nodes[0].node_dir).parent)]


def test_load_without_a_state_file_is_none() -> None:
    assert lab_state.load("never-created") is None


def test_replay_classifies_real_captures_by_their_content(tmp_path: Path) -> None:
    shared = require_shared_fixtures()
    files = [
        shared / "topo/dgx-a100-8gpu-12mlx5.txt",
        shared / "rdma/cx7-roce-show_gids-ibv_devinfo.txt",
        shared / "rdma/h100-node-ip-br-ibdev2netdev.txt",
        shared / "gpu_query/gcp-a3high-h100-nvidia-smi-q.txt",
    ]
    answers = lab_replay.classify([CaptureFile(p.name, p.read_bytes(), 0o644, str(p)) for p in files])
    assert sorted(answers) == ["ibdev2netdev", "ibv_devinfo", "nvidia-smi", "show_gids"]
    smi = {a["args"]: a["file"] for a in answers["nvidia-smi"]}
    assert smi == {"topo": "dgx-a100-8gpu-12mlx5.txt", "-q": "gcp-a3high-h100-nvidia-smi-q.txt"}
    assert answers["ibv_devinfo"][0]["file"] == "cx7-roce-show_gids-ibv_devinfo.txt"


def test_replay_installs_stand_ins_only_for_commands_the_bundle_answers(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "topo.txt").write_bytes((REPO / "examples/captures/h100-roce-node/nvidia-smi-topo-m.txt").read_bytes())
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    assert lab_replay.install(bundle, root) == ["nvidia-smi"]
    assert (root / "usr/local/bin/nvidia-smi").is_symlink()
    assert not (root / "usr/local/bin/ibv_devinfo").exists()
    assert "no GPU" in (root / "etc/gpuctl-lab").read_text()
    assert "REPLAYED" in (root / lab_replay.STANDIN).read_text()


def test_replay_refuses_a_missing_bundle(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="does not exist"):
        lab_replay.install(tmp_path / "absent", tmp_path)


def test_not_root_is_refused_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(MissingToolError, match="needs root") as info:
        lab_host.require_root()
    assert info.value.exit_code == 7


def test_missing_tools_without_apt_get_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda tool: None)
    with pytest.raises(MissingToolError, match="debootstrap") as info:
        lab_host.ensure_tools()
    assert "openssh-client" in str(info.value)
