"""Fabric-specific checks apply only to their fabric (a tcp node never meets the eRDMA provider
assertion), the memlock limit for RDMA users, and the NCCL holds. The role defaults are evaluated
by Ansible itself; the erdma and rdma roles run for real on localhost where they only skip."""

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

BIN = Path(sys.executable).parent


def play(tmp_path: Path, body: dict[str, Any], extra: dict[str, Any]) -> tuple[int, str]:
    body = {"hosts": "localhost", "connection": "local", "gather_facts": False, **body}
    (tmp_path / "play.yml").write_text(yaml.safe_dump([body]))
    (tmp_path / "extra.json").write_text(json.dumps({"ansible_python_interpreter": sys.executable, **extra}))
    done = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", "localhost,", "play.yml", "-e", "@extra.json"],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300,
        env={**os.environ, "ANSIBLE_ROLES_PATH": str(ROLES_PATH), "ANSIBLE_NOCOLOR": "1"},
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize(("fabric", "lab", "check", "provider"), [
    ("tcp", False, False, None),          # single-GPU cloud node: no RDMA NIC, no provider assertion
    ("erdma", False, False, None),        # the erdma role checks after installing Alibaba's rdma-core
    ("rdma", False, True, "mlx5"),        # Tencent HCC
    ("tcp", True, True, "erdma"),         # the lab keeps checking its userspace carries erdma
])
def test_rdma_userspace_checks_the_provider_only_for_its_fabric(
        tmp_path: Path, fabric: str, lab: bool, check: bool, provider: str | None) -> None:
    out = tmp_path / "out.json"
    rc, log = play(tmp_path, {
        "vars_files": [str(ROLES_PATH / "rdma_userspace" / "defaults" / "main.yml")],
        "tasks": [{"ansible.builtin.copy": {
            "dest": str(out), "mode": "0644",
            "content": "{{ {'check': rdma_userspace_check_provider | bool, "
                       "'provider': rdma_userspace_required_provider} | to_json }}"}}],
    }, {"gpuctl_fabric": fabric, "gpuctl_lab_node": lab})
    assert rc == 0, log
    got = json.loads(out.read_text())
    assert got["check"] is check
    if provider:
        assert got["provider"] == provider


def test_rdma_userspace_assertion_is_gated_by_the_check() -> None:
    tasks = yaml.safe_load((ROLES_PATH / "rdma_userspace" / "tasks" / "main.yml").read_text())
    for t in tasks:
        if "ansible.builtin.assert" in t or "ansible.builtin.find" in t:
            assert "rdma_userspace_check_provider | bool" in t["when"], t["name"]


@pytest.mark.parametrize(("role", "fabric"), [("erdma", "tcp"), ("erdma", "rdma"), ("rdma", "tcp"), ("rdma", "erdma")])
def test_fabric_roles_skip_a_node_of_another_fabric(tmp_path: Path, role: str, fabric: str) -> None:
    rc, log = play(tmp_path, {"roles": [role]}, {"gpuctl_fabric": fabric})
    assert rc == 0, log
    assert f"Skipped: fabric {fabric}, not {role}" in log
    assert "changed=0" in log
    assert "failed=0" in log


def test_nvidia_driver_skips_a_node_without_gpu(tmp_path: Path) -> None:
    """What every lab node does: the role says why and touches nothing."""
    rc, log = play(tmp_path, {"roles": ["nvidia_driver"]},
                   {"gpuctl_has_nvidia_gpu": False, "gpuctl_no_gpu_reason": "lab node without GPU"})
    assert rc == 0, log
    assert "Skipped: lab node without GPU." in log
    assert "changed=0" in log


def test_memlock_is_unlimited_for_rdma_users() -> None:
    tasks = yaml.safe_load((ROLES_PATH / "rdma_userspace" / "tasks" / "main.yml").read_text())
    copy = next(t for t in tasks if "locked-memory" in t["name"])["ansible.builtin.copy"]
    defaults = yaml.safe_load((ROLES_PATH / "rdma_userspace" / "defaults" / "main.yml").read_text())
    assert defaults["rdma_userspace_memlock"] == "unlimited"
    assert defaults["rdma_userspace_memlock_file"].startswith("/etc/security/limits.d/")
    lines = [line.split() for line in copy["content"].splitlines() if not line.startswith("#")]
    assert ["*", "-", "memlock", "{{", "rdma_userspace_memlock", "}}"] in lines
    assert ["root", "-", "memlock", "{{", "rdma_userspace_memlock", "}}"] in lines


def test_nccl_installs_through_its_hold_and_locks_on_dnf() -> None:
    tasks = yaml.safe_load((ROLES_PATH / "nccl" / "tasks" / "install.yml").read_text())
    by_name = {t["name"]: t for t in tasks}
    assert by_name["Install the pinned NCCL packages with apt"]["ansible.builtin.apt"]["allow_change_held_packages"]
    names = list(by_name)
    release = "Release the dnf locks on NCCL packages held at another version (nccl_version was raised)"
    lock = "Lock the NCCL packages at the pinned version with dnf versionlock"
    assert names.index(release) < names.index("Install the pinned NCCL packages with dnf") < names.index(lock)
    redhat = yaml.safe_load((ROLES_PATH / "nccl" / "vars" / "RedHat.yml").read_text())
    assert redhat["nccl_hold_names"] == ["libnccl", "libnccl-devel"]


def test_memlock_reaches_systemd_services_too() -> None:
    """limits.d is read by PAM sessions only: a service (slurmd's jobs) gets systemd's default."""
    tasks = yaml.safe_load((ROLES_PATH / "rdma_userspace" / "tasks" / "main.yml").read_text())
    defaults = yaml.safe_load((ROLES_PATH / "rdma_userspace" / "defaults" / "main.yml").read_text())
    assert defaults["rdma_userspace_systemd_memlock_file"] == "/etc/systemd/system.conf.d/90-gpuctl-rdma-memlock.conf"
    dropin = next(t for t in tasks if t["name"] == "Raise the locked-memory limit for systemd services too")
    assert dropin["ansible.builtin.copy"]["content"].splitlines()[1:] == [
        "[Manager]",
        "DefaultLimitMEMLOCK={{ 'infinity' if rdma_userspace_memlock == 'unlimited' else rdma_userspace_memlock }}"]
    assert dropin["when"] == "ansible_service_mgr == 'systemd'"  # lab nodes run no systemd
    handlers = yaml.safe_load((ROLES_PATH / "rdma_userspace" / "handlers" / "main.yml").read_text())
    [reexec] = [h for h in handlers if h["name"] == dropin["notify"]]
    assert reexec["ansible.builtin.command"]["argv"] == ["systemctl", "daemon-reexec"]


def test_nccl_tests_build_uses_the_processors_the_node_has() -> None:
    """`min` facts hold no ansible_processor_vcpus: the build asked `make -j4` on every node."""
    tasks = yaml.safe_load((ROLES_PATH / "nccl_tests" / "tasks" / "build.yml").read_text())
    count = next(t for t in tasks if "Count the node's processors" in t["name"])
    assert count["ansible.builtin.command"] == "nproc"
    build = next(t for t in tasks if t["name"].startswith("Build nccl-tests"))
    assert "-j{{ nccl_tests_nproc.stdout | int }}" in build["ansible.builtin.command"]["argv"]
    assert "ansible_processor_vcpus" not in str(tasks)


def test_the_erdma_installer_runs_again_for_a_new_kernel() -> None:
    """Pending (no erdma module for the running kernel) must run the installer even with eadm there."""
    tasks = yaml.safe_load((ROLES_PATH / "erdma" / "tasks" / "install.yml").read_text())
    block = next(t for t in tasks if "block" in t)
    assert block["when"] == "erdma_install_pending | bool"
    run = next(t for t in block["block"] if t["name"].startswith("Run Alibaba's eRDMA installer"))
    assert "creates" not in run["ansible.builtin.command"]
    pending = next(t for t in tasks if t["name"] == "Record whether the eRDMA stack still has to be installed")
    assert pending["ansible.builtin.set_fact"]["erdma_install_pending"] == (
        "{{ not erdma_marker.stat.exists or erdma_modinfo.rc != 0 }}")
