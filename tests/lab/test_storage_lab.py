"""Issue 15 on a real lab: a checkpoint written into the mounted bucket outlives `down`.

One node writes a checkpoint into the object volume (the lab's S3-compatible store, mounted by the
storage role with s3fs); `down` keeps the store and says so; a fresh `up` builds a NEW node (new
root, new host key) that reads the same bytes back; `gpuctl down --yes-delete-storage` removes the
bucket and stops the store. Tests share one cluster and run in file order.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit.cli import main as gpuctl
from toolkit.configure import configure
from toolkit.providers.base import ClusterOutputs
from toolkit.providers.lab import object_store as lab_store
from toolkit.providers.lab import state as lab_state
from toolkit.providers.lab.driver import LocalLabDriver
from toolkit.spec.loader import load_spec
from toolkit.spec.models import ClusterSpec

pytestmark = pytest.mark.lab
NAME = "storeci"
BUCKET = "storeci-ckpt"
CHECKPOINT = os.urandom(3 * 1024 * 1024 + 17)  # bigger than one s3fs part would need to be, odd size


def write_spec(directory: Path, bundle: Path) -> Path:
    spec = directory / f"{NAME}.yaml"
    spec.write_text(f"""\
name: {NAME}
provider: local
node_pools:
  - name: n
    instance_type: lab
    count: 1
    image: debian_12
    capture: {bundle}
network:
  fabric: tcp
  mtu: 8500
  admin_cidr: 127.0.0.0/8
lifecycle:
  ttl: 2h
storage:
  - name: ckpt
    kind: object
    mount_path: /mnt/ckpt
""")
    return spec


def ssh(outputs: ClusterOutputs, command: str, data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    node = outputs.nodes[0]
    return subprocess.run(
        ["ssh", "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={outputs.known_hosts}",
         "-o", "BatchMode=yes", "-i", str(outputs.ssh_private_key), f"root@{node.ssh_host}", command],
        input=data, capture_output=True, timeout=120, check=False,
    )


def lab_namespaces() -> list[str]:
    tag = lab_state.lab_tag(NAME)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.startswith(tag)]


class Lab:
    def __init__(self, spec_path: Path) -> None:
        self.spec_path = spec_path
        self.spec: ClusterSpec = load_spec(spec_path)
        self.driver = LocalLabDriver()
        self.lines: list[str] = []
        self.outputs: ClusterOutputs | None = None
        self.first_host_key = ""

    def up_and_configure(self) -> ClusterOutputs:
        self.outputs = self.driver.up(self.spec, self.lines.append)
        result = configure(self.spec, self.outputs, self.lines.append)
        assert result.rc == 0, "\n".join(self.lines[-40:])
        return self.outputs


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, replay_bundle: Path) -> Iterator[Lab]:
    lab = Lab(write_spec(tmp_path_factory.mktemp("spec"), replay_bundle))
    try:
        yield lab
    finally:
        # Whatever failed above: nothing of this test stays on the machine, the store included.
        try:
            lab.driver.down(lab.spec, lambda _line: None)
        finally:
            lab_store.delete_storage(lab.spec, lambda _line: None)
    assert lab_namespaces() == []


def test_a_node_writes_a_checkpoint_into_the_mounted_bucket(lab: Lab) -> None:
    outputs = lab.up_and_configure()
    assert [(v.name, v.bucket, v.mount_path) for v in outputs.volumes] == [("ckpt", BUCKET, "/mnt/ckpt")]
    mounted = ssh(outputs, "findmnt --noheadings --output FSTYPE /mnt/ckpt")
    assert mounted.stdout.decode().strip() == "fuse.s3fs", mounted.stderr.decode()
    wrote = ssh(outputs, "cat > /mnt/ckpt/step-100.pt && sync && touch /root/first-node-was-here", CHECKPOINT)
    assert wrote.returncode == 0, wrote.stderr.decode()
    record = lab_store.load(NAME)
    assert record is not None
    assert lab_store.bucket_usage(record, BUCKET) == (1, len(CHECKPOINT))
    lab.first_host_key = Path(str(outputs.known_hosts)).read_text()


def test_down_keeps_the_bucket_and_says_so(lab: Lab) -> None:
    lines: list[str] = []
    assert lab.driver.down(lab.spec, lines.append) is True
    kept = [line for line in lines if line.startswith("kept bucket")]
    assert len(kept) == 1, lines
    assert kept[0].startswith(f"kept bucket {BUCKET} (1 objects, {len(CHECKPOINT)} bytes) in the lab object store "
                              "at http://10.213.")
    assert kept[0].endswith(" --delete-storage` removes it")
    assert lab.driver.kept == kept
    assert lab_namespaces() == []
    record = lab_store.load(NAME)
    assert record is not None
    assert lab_store.running(record)


def test_a_new_node_reads_the_same_checkpoint_back(lab: Lab) -> None:
    outputs = lab.up_and_configure()
    # A new node: a fresh root (the first node's marker is gone) and a new host key.
    assert ssh(outputs, "test ! -e /root/first-node-was-here").returncode == 0
    assert Path(str(outputs.known_hosts)).read_text() != lab.first_host_key
    read = ssh(outputs, "cat /mnt/ckpt/step-100.pt")
    assert read.returncode == 0, read.stderr.decode()
    assert read.stdout == CHECKPOINT


def test_down_delete_storage_removes_the_bucket(lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    record = lab_store.load(NAME)
    assert record is not None
    assert gpuctl(["down", str(lab.spec_path), "--yes-delete-storage=other"]) == 2  # wrong name: refused
    assert lab_namespaces() != []  # ... before anything was removed
    assert gpuctl(["down", str(lab.spec_path), "--yes-delete-storage", NAME]) == 0
    out = capsys.readouterr().out
    assert f"storage deleted ({BUCKET})" in out
    assert lab_namespaces() == []
    assert lab_store.load(NAME) is None
    assert not lab_store.running(record)
    # Nothing listens where the store was (never connect there: the lab's network is gone, so the
    # address is no longer this host's and a connection would leave the machine).
    listening = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True, check=True).stdout
    assert f"{record.address}:{record.port}" not in listening
