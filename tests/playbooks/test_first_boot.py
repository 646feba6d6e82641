"""A fresh cloud node's first minutes: cloud-init and unattended-upgrades hold the package lock, and
downloads from NVIDIA's CDN or Alibaba's mirror drop. The rendered site playbook (golden, from the
real render path) waits and retries instead of failing the node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from toolkit.paths import ROLES_PATH

pytestmark = pytest.mark.unit

GOLDEN = Path(__file__).parent / "golden" / "site-alicloud-erdma.yml"


def _site_play() -> dict[str, Any]:
    plays = yaml.safe_load(GOLDEN.read_text())
    return next(p for p in plays if p["name"].startswith("Install the stack"))


def test_apt_and_dnf_wait_for_the_package_lock() -> None:
    assert _site_play()["module_defaults"] == {"ansible.builtin.apt": {"lock_timeout": 900},
                                               "ansible.builtin.dnf": {"lock_timeout": 900}}


def test_the_roles_wait_for_cloud_init_and_never_fail_a_node_for_it() -> None:
    pre = _site_play()["pre_tasks"]
    wait = next(t for t in pre if t["name"].startswith("Wait for cloud-init"))
    assert wait["ansible.builtin.command"]["argv"] == ["timeout", "900", "cloud-init", "status", "--wait"]
    assert (wait["failed_when"], wait["changed_when"], wait["tags"]) == (False, False, "always")
    said = next(t for t in pre if t["name"].startswith("Say what cloud-init left behind"))
    assert said["when"] == "gpuctl_cloud_init.rc not in [0, 127]"  # done, or no cloud-init (a lab node)
    assert said["ansible.builtin.debug"]["msg"].startswith("Note: cloud-init ")
    names = [t["name"] for t in pre]
    assert names.index(wait["name"]) < names.index(next(n for n in names if "GPU" in n or "gpu" in n))


def test_apt_retries_downloads_and_the_roles_retry_theirs() -> None:
    pre = _site_play()["pre_tasks"]
    retries = next(t for t in pre if t["name"] == "Make apt retry a failed download")
    assert retries["ansible.builtin.copy"]["dest"] == "/etc/apt/apt.conf.d/80-gpuctl-retries"
    assert 'Acquire::Retries "5";' in retries["ansible.builtin.copy"]["content"].splitlines()
    downloads = []
    for tasks_file in ROLES_PATH.glob("*/tasks/*.yml"):
        for entry in yaml.safe_load(tasks_file.read_text()) or []:
            for task in entry.get("block", [entry]):
                if "ansible.builtin.get_url" in task:
                    downloads.append((tasks_file.parent.parent.name, task))
    assert sorted(role for role, _ in downloads) == ["erdma", "nccl", "nccl_tests"]
    for role, task in downloads:
        assert (task["retries"], task["delay"]) == (5, 10), role
        assert task["until"] == f"{task['register']} is succeeded", role
