"""On a real lab: planted credentials leave no trace, a damaged state never blocks `down`, and host
keys learned on first contact match the ones the lab pinned itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lab.conftest import write_spec
from toolkit.errors import ProviderError
from toolkit.providers.lab import network as lab_network
from toolkit.providers.lab import state as lab_state
from toolkit.providers.lab.driver import LocalLabDriver, known_hosts_path
from toolkit.spec.loader import load_spec
from toolkit.ssh import pin_host_keys
from toolkit.state import cluster_dir, gpuctl_home

pytestmark = pytest.mark.lab
REPO = Path(__file__).resolve().parents[2]
# Fake credentials under every name the docs tell users to export, and one the name rule catches.
PLANTED = {
    "ALICLOUD_ACCESS_KEY": "LTAIplantedAccessKey0001", "ALICLOUD_SECRET_KEY": "plantedAlicloudSecret0002",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "plantedAlibabaSecret0003", "TENCENTCLOUD_SECRET_ID": "AKIDplantedSecretId0004",
    "TENCENTCLOUD_SECRET_KEY": "plantedTencentSecret0005", "PULUMI_CONFIG_PASSPHRASE": "plantedPassphrase0006",
    "PULUMI_ACCESS_TOKEN": "pul-plantedAccessToken0007", "AWS_SECRET_ACCESS_KEY": "plantedAwsSecret0008",
    "TEAM_VAULT_TOKEN": "plantedVaultToken0009",
}


def gpuctl(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolkit", *args], cwd=REPO, env=env or os.environ.copy(),
                          capture_output=True, text=True, timeout=600, check=False)


def files_holding(root: Path, needles: list[str]) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                data = path.read_bytes()
            except OSError:
                continue
            found += [f"{path}: {needle}" for needle in needles if needle.encode() in data]
    return found


def nothing_left(name: str) -> list[str]:
    tag = lab_state.lab_tag(name)
    left = [f"netns {ns}" for ns in lab_network.existing_netns() if ns.startswith(tag + "-")]
    left += [f"link {link}" for link in lab_network.existing_links() if link.startswith(tag + "-")]
    return left + ([f"directory {cluster_dir(name)}"] if cluster_dir(name).exists() else [])


def test_planted_credentials_leave_no_trace_and_a_damaged_state_never_blocks_down(
    tmp_path: Path, replay_bundle: Path,
) -> None:
    name = "cisecret"
    spec = write_spec(tmp_path, name, 2, replay_bundle)
    env = {**os.environ, **PLANTED}
    up = gpuctl("up", str(spec), env=env)
    assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
    assert "Cluster cisecret is up" in up.stdout
    # Everything configure wrote: inventory, playbooks, bundles, tuned files, records, and each
    # node's own disk (the overlay's upper layer holds every file the roles wrote there).
    assert files_holding(cluster_dir(name), list(PLANTED.values())) == []
    assert files_holding(gpuctl_home(), list(PLANTED.values())) == []
    assert PLANTED["ALICLOUD_SECRET_KEY"] not in up.stdout + up.stderr

    # A second `up` while nothing else holds the lock works; the truncated state then must not block down.
    state_file = lab_state.state_path(name)
    state_file.write_text(state_file.read_text()[:40])
    status = gpuctl("status", str(spec))
    assert status.returncode == 6
    assert f"-m toolkit down {spec}" in status.stderr  # the hint names the gpuctl and spec this run used
    assert "Traceback" not in status.stderr
    down = gpuctl("down", str(spec), env=env)
    assert down.returncode == 0, down.stdout + down.stderr
    assert nothing_left(name) == []
    kept = list((gpuctl_home() / "damaged").glob(f"{name}-*-lab-state.json"))
    assert len(kept) == 1  # set aside for a post-mortem, not deleted
    assert files_holding(gpuctl_home(), list(PLANTED.values())) == []


@pytest.mark.parametrize("damage", ["deleted", "junk", "other-schema"])
def test_down_removes_a_lab_whatever_happened_to_its_state(tmp_path: Path, replay_bundle: Path, damage: str) -> None:
    name = f"cistate-{damage}"[:20]
    spec_path = write_spec(tmp_path, name, 2, replay_bundle)
    driver = LocalLabDriver()
    driver.up(load_spec(spec_path), lambda _line: None)
    state_file = lab_state.state_path(name)
    if damage == "deleted":
        state_file.unlink()
    elif damage == "junk":
        state_file.write_bytes(os.urandom(512))
    else:
        state_file.write_text('{"cluster": "someone-else", "tag": "gl-00000"}')
    # The spec shrank to one node meanwhile: the second node is found by the lab's tag, not the spec.
    write_spec(tmp_path, name, 1, replay_bundle)
    down = gpuctl("down", str(spec_path))
    assert down.returncode == 0, down.stdout + down.stderr
    assert "no usable state" in down.stdout
    assert nothing_left(name) == []


def test_host_keys_learned_on_first_contact_match_the_pinned_ones(tmp_path: Path, replay_bundle: Path) -> None:
    name = "citofu"
    spec = load_spec(write_spec(tmp_path, name, 2, replay_bundle))
    driver = LocalLabDriver()
    outputs = driver.up(spec, lambda _line: None)
    try:
        learned = tmp_path / "known_hosts"
        pinned_now = pin_host_keys(outputs, learned, lambda _line: None)
        assert len(pinned_now.shown) >= 2
        assert pinned_now.failed == {}
        pinned = {tuple(line.split()[:3]) for line in known_hosts_path(name).read_text().splitlines()}
        got = {tuple(line.split()[:3]) for line in learned.read_text().splitlines() if " ssh-ed25519 " in line}
        assert got == pinned
    finally:
        driver.down(spec, lambda _line: None)


def test_up_refuses_a_lab_of_the_same_name_from_another_home(tmp_path: Path, replay_bundle: Path) -> None:
    """Two GPUCTL_HOMEs, one cluster name: the second `up` would put two nodes on one address."""
    name = "cisame"
    spec = load_spec(write_spec(tmp_path, name, 1, replay_bundle))
    tag = lab_state.lab_tag(name)
    subprocess.run(["ip", "netns", "add", f"{tag}-n1"], check=True)  # what the other home's lab left
    try:
        with pytest.raises(ProviderError, match=rf"a lab with the tag {tag} \(cluster name {name}\) already exists"):
            LocalLabDriver().up(spec, lambda _line: None)
        assert not any(link.startswith(tag) for link in lab_network.existing_links())  # nothing was built
    finally:
        subprocess.run(["ip", "netns", "delete", f"{tag}-n1"], check=False)
        LocalLabDriver().down(spec, lambda _line: None)
    assert nothing_left(name) == []


def test_down_of_a_lab_whose_state_names_decoys_removes_the_lab_and_leaves_the_decoys(
    tmp_path: Path, replay_bundle: Path,
) -> None:
    """A link, a namespace with a process in it, a directory and a process that mentions the lab, none of
    them gpuctl's, are named by the lab's state file: `down` removes the lab and none of them."""
    name = "cidecoy"
    tag = "gl-22ed9"  # "gl-" + sha256("cidecoy")[:5]
    spec_path = write_spec(tmp_path, name, 1, replay_bundle)
    decoy_dir = tmp_path / "decoy-dir"
    decoy_dir.mkdir()
    (decoy_dir / "keep.txt").write_text("not gpuctl's\n")
    started: list[subprocess.Popen[bytes]] = []
    try:
        LocalLabDriver().up(load_spec(spec_path), lambda _line: None)
        subprocess.run(["ip", "link", "add", "gpdecoy0", "type", "bridge"], check=True)
        subprocess.run(["ip", "link", "add", f"{tag}-x", "type", "bridge"], check=True)  # the tag, no plan's name
        subprocess.run(["ip", "netns", "add", "gpdecoy-ns"], check=True)
        in_decoy_ns = subprocess.Popen(["ip", "netns", "exec", "gpdecoy-ns", "sleep", "600"])
        mentions = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)",
                                     str(cluster_dir(name) / "nodes" / f"{name}-n-0")])
        started += [in_decoy_ns, mentions]
        state_file = lab_state.state_path(name)
        document = json.loads(state_file.read_text())
        document["nodes"][0].update(netns="gpdecoy-ns", mgmt_veth="gpdecoy0", node_dir=str(decoy_dir))
        document.update(mgmt_bridge=f"{tag}-x", dirs=[str(decoy_dir)])
        state_file.write_text(json.dumps(document))

        down = gpuctl("down", str(spec_path))

        assert down.returncode == 0, down.stdout + down.stderr
        links = lab_network.existing_links()
        assert {"gpdecoy0", f"{tag}-x"} <= links
        assert "gpdecoy-ns" in lab_network.existing_netns()
        assert in_decoy_ns.poll() is None
        assert mentions.poll() is None
        assert (decoy_dir / "keep.txt").read_text() == "not gpuctl's\n"
        # ... and the lab itself is gone.
        assert sorted(link for link in links if link.startswith(tag)) == [f"{tag}-x"]
        assert not any(ns.startswith(tag) for ns in lab_network.existing_netns())
        assert not cluster_dir(name).exists()
        # The refused entries are named, each with what gpuctl's plan has there.
        assert "nodes[0].netns 'gpdecoy-ns' (gpuctl's plan has 'gl-22ed9-n1')" in down.stdout
        assert "nodes[0].mgmt_veth 'gpdecoy0' (gpuctl's plan has 'gl-22ed9-m1')" in down.stdout
        assert f"nodes[0].node_dir '{decoy_dir}'" in down.stdout
    finally:
        for process in started:  # only what this test started, by its own handle
            process.kill()
            process.wait()
        subprocess.run(["ip", "netns", "delete", "gpdecoy-ns"], check=False)
        for link in ("gpdecoy0", f"{tag}-x"):
            subprocess.run(["ip", "link", "delete", link], check=False)
        LocalLabDriver().down(load_spec(spec_path), lambda _line: None)
