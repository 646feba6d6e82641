"""The storage role run by Ansible itself on localhost in check mode: its asserts pass for a cloud
node's volumes, it would write one mount unit per volume (reported changed, nothing written), and
it refuses malformed volumes before touching anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolkit.paths import ROLES_PATH

pytestmark = pytest.mark.unit
BIN = Path(sys.executable).parent
VOLUMES = [
    {"client": "nfs", "name": "data", "kind": "nas", "mount_path": "/mnt/gpuctl-ci-data",
     "source": "31a8e48b9c-abc12.cn-beijing.nas.aliyuncs.com:/", "nfs_version": "3"},
    {"client": "ossfs", "name": "ckpt", "kind": "object", "mount_path": "/mnt/gpuctl-ci-ckpt",
     "bucket": "llm-ckpt-2026", "endpoint": "oss-cn-beijing-internal.aliyuncs.com", "instance_role": "gpuctl-node"},
]


def run_role(tmp_path: Path, volumes: list[dict[str, Any]]) -> tuple[int, str]:
    play = [{"hosts": "localhost", "connection": "local", "gather_facts": True, "gather_subset": ["min"],
             "roles": [{"role": "storage"}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    extra = {"ansible_python_interpreter": sys.executable, "gpuctl_storage_volumes": volumes,
             "storage_unit_dir": str(tmp_path / "units"), "storage_install_packages": False,
             "storage_mount_with": "systemd"}
    (tmp_path / "extra.json").write_text(json.dumps(extra))
    done = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", "localhost,", "play.yml", "-e", "@extra.json", "--check", "--diff"],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300,
        env={**os.environ, "ANSIBLE_ROLES_PATH": str(ROLES_PATH), "ANSIBLE_NOCOLOR": "1"},
    )
    return done.returncode, done.stdout + done.stderr


def test_check_mode_would_write_one_unit_per_volume_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "units").mkdir()
    rc, log = run_role(tmp_path, VOLUMES)
    # ossfs is not on this machine: check mode stops at the client check, after the asserts passed.
    assert "Check the volumes gpuctl gave this node" in log
    assert "has no ossfs" in log, log
    assert rc != 0
    rc, log = run_role(tmp_path, VOLUMES[:1])
    assert rc == 0, log
    assert "changed: [localhost] => (item=data: mnt-gpuctl\\x2dci\\x2ddata.mount)" in log
    assert "+Options=vers=3,nolock,proto=tcp,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport" in log
    assert list((tmp_path / "units").iterdir()) == []
    assert not Path("/mnt/gpuctl-ci-data").exists()


def test_malformed_volumes_are_refused_before_anything(tmp_path: Path) -> None:
    bad = [{**VOLUMES[1], "client": "cosfs", "instance_role": None}]
    bad[0].pop("instance_role")
    rc, log = run_role(tmp_path, bad)
    assert rc != 0
    assert "gpuctl_storage_volumes is malformed" in log


def test_defaults_are_prefixed_commented_and_listed_in_the_readme() -> None:
    path = ROLES_PATH / "storage" / "defaults" / "main.yml"
    lines = path.read_text().splitlines()
    readme = (ROLES_PATH / "storage" / "README.md").read_text()
    for name in yaml.safe_load(path.read_text()):
        assert name.startswith("storage_"), name
        assert f"| `{name}` |" in readme, name
        at = next(i for i, line in enumerate(lines) if line.startswith(name + ":"))
        assert lines[at - 1].startswith("#"), f"{name} has no comment above it"
