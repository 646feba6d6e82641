"""The nvidia_driver role's decisions, run for real by ansible-playbook against localhost with fake
PCI/proc/sys trees (read-only task files only: nothing is installed), plus the structure of the task
files that cannot run here (apt/dnf, holds), parsed and asserted."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolkit.paths import ROLES_PATH

ROLE = ROLES_PATH / "nvidia_driver"
BIN = Path(sys.executable).parent


def run_tasks(tmp_path: Path, tasks_from: str, extra: dict[str, Any], report: str,
              role: str = "nvidia_driver") -> tuple[int, str, Any]:
    """Run one task file of a role (this file's: nvidia_driver) on localhost; return (rc, output,
    the JSON the play wrote)."""
    out = tmp_path / "out.json"
    play = [{
        "hosts": "localhost", "connection": "local", "gather_facts": True, "gather_subset": ["min"],
        "tasks": [
            {"ansible.builtin.include_role": {"name": role, "tasks_from": tasks_from}},
            {"ansible.builtin.copy": {"dest": str(out), "content": "{{ " + report + " | to_json }}",
                                      "mode": "0644"}},
        ],
    }]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "extra.json").write_text(json.dumps({"ansible_python_interpreter": sys.executable, **extra}))
    done = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", "localhost,", "play.yml", "-e", "@extra.json"],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300,
        env={**os.environ, "ANSIBLE_ROLES_PATH": str(ROLES_PATH), "ANSIBLE_NOCOLOR": "1"},
    )
    return done.returncode, done.stdout + done.stderr, json.loads(out.read_text()) if out.exists() else None


def pci_tree(root: Path, devices: dict[str, tuple[str, str, str]]) -> Path:
    for slot, (vendor, cls, device) in devices.items():
        (root / slot).mkdir(parents=True)
        (root / slot / "vendor").write_text(vendor + "\n")
        (root / slot / "class").write_text(cls + "\n")
        (root / slot / "device").write_text(device + "\n")
    return root


DETECT = ("{'nvswitches': nvidia_driver_nvswitches, 'pre_turing': nvidia_driver_pre_turing_gpus, "
          "'open': nvidia_driver_open_modules | bool, 'fm': nvidia_driver_fabricmanager_needed | bool, "
          "'gdr': nvidia_driver_gpudirect_mode}")
H100 = ("0x10de", "0x030200", "0x2330")
NVSWITCH_GEN3 = ("0x10de", "0x068000", "0x22a3")
A10 = ("0x10de", "0x030200", "0x2236")
V100 = ("0x10de", "0x030200", "0x1db4")
INTEL_BRIDGE = ("0x8086", "0x060400", "0x347a")


def test_hgx_h100_gets_fabric_manager_open_modules_and_dmabuf(tmp_path: Path) -> None:
    root = pci_tree(tmp_path / "pci", {"0000:18:00.0": H100, "0000:19:00.0": H100, "0000:05:00.0": NVSWITCH_GEN3,
                                       "0000:06:00.0": ("0x10de", "0x068000", "0x9999"), "0000:00:01.0": INTEL_BRIDGE})
    rc, log, got = run_tasks(tmp_path, "detect.yml", {"nvidia_driver_pci_root": str(root), "gpuctl_fabric": "rdma",
                                                      "ansible_kernel": "5.15.0-91-generic"}, DETECT)
    assert rc == 0, log
    # An unknown NVIDIA device ID of class 0x0680 counts as an NVSwitch too (a future generation).
    assert got == {"nvswitches": ["0000:05:00.0", "0000:06:00.0"], "pre_turing": [], "open": True, "fm": True,
                   "gdr": "dmabuf"}


def test_single_gpu_tcp_node_needs_no_fabric_manager_and_no_gpudirect(tmp_path: Path) -> None:
    root = pci_tree(tmp_path / "pci", {"0000:00:07.0": A10, "0000:00:01.0": INTEL_BRIDGE})
    rc, log, got = run_tasks(tmp_path, "detect.yml", {"nvidia_driver_pci_root": str(root), "gpuctl_fabric": "tcp"},
                             DETECT)
    assert rc == 0, log
    assert got == {"nvswitches": [], "pre_turing": [], "open": True, "fm": False, "gdr": "none"}


def kallsyms(path: Path, *, peer_memory: bool) -> Path:
    """A /proc/kallsyms in its own format (address, type, name, [module]); with MLNX_OFED's ib_core the
    peer-memory API nvidia-peermem needs is among the module's symbols."""
    lines = ["0000000000000000 T ib_register_client\t[ib_core]", "0000000000000000 T ib_dealloc_pd_user\t[ib_core]"]
    if peer_memory:
        lines.append("0000000000000000 T ib_register_peer_memory_client\t[ib_core]")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_volta_gets_the_proprietary_modules_and_peermem_where_the_kernel_has_peer_memory(tmp_path: Path) -> None:
    root = pci_tree(tmp_path / "pci", {"0000:00:07.0": V100})
    rc, log, got = run_tasks(tmp_path, "detect.yml", {
        "nvidia_driver_pci_root": str(root), "gpuctl_fabric": "erdma",
        "nvidia_driver_kallsyms": str(kallsyms(tmp_path / "kallsyms", peer_memory=True))}, DETECT)
    assert rc == 0, log
    assert got == {"nvswitches": [], "pre_turing": ["0000:00:07.0"], "open": False, "fm": False, "gdr": "peermem"}


def test_erdma_on_a_stock_kernel_leaves_gpudirect_off_and_says_why(tmp_path: Path) -> None:
    """Alibaba's eRDMA on a stock Ubuntu or Alibaba Cloud Linux kernel: no peer-memory API, so
    nvidia-peermem cannot load; the node is not failed, GPUDirect RDMA is off and the reason said."""
    root = pci_tree(tmp_path / "pci", {"0000:00:07.0": H100})
    rc, log, got = run_tasks(tmp_path, "detect.yml", {
        "nvidia_driver_pci_root": str(root), "gpuctl_fabric": "erdma", "ansible_kernel": "5.15.0-91-generic",
        "nvidia_driver_kallsyms": str(kallsyms(tmp_path / "kallsyms", peer_memory=False))},
        "{'gdr': nvidia_driver_gpudirect_mode, 'why': nvidia_driver_gpudirect_reason}")
    assert rc == 0, log
    assert got == {"gdr": "none", "why": "the kernel (5.15.0-91-generic) exports no RDMA peer-memory API "
                                         "(ib_register_peer_memory_client), which nvidia-peermem needs"}


def test_branch_before_560_keeps_the_proprietary_modules(tmp_path: Path) -> None:
    root = pci_tree(tmp_path / "pci", {"0000:00:07.0": H100})
    rc, log, got = run_tasks(tmp_path, "detect.yml", {
        "nvidia_driver_pci_root": str(root), "nvidia_driver_version": "550.163.01", "gpuctl_fabric": "rdma",
        "nvidia_driver_kallsyms": str(kallsyms(tmp_path / "kallsyms", peer_memory=True))}, DETECT)
    assert rc == 0, log
    assert got["open"] is False
    assert got["gdr"] == "peermem"  # MLNX_OFED's RDMA core (a Tencent HCC image) has the peer-memory API


PROPRIETARY = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  {v}  Tue Mar  4 21:09:37 UTC 2025\n"
OPEN = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {v}  Release Build  (dvs-builder@U16)\n"


@pytest.mark.parametrize("template", [PROPRIETARY, OPEN])
def test_matching_loaded_driver_passes(tmp_path: Path, template: str) -> None:
    (tmp_path / "version").write_text(template.format(v="570.133.20"))
    (tmp_path / "module").mkdir()
    rc, log, got = run_tasks(tmp_path, "mismatch.yml", {"nvidia_driver_proc_version_file": str(tmp_path / "version"),
                                                        "nvidia_driver_sys_module_root": str(tmp_path / "module")},
                             "nvidia_driver_loaded_version")
    assert rc == 0, log
    assert got == "570.133.20"


def test_older_loaded_driver_fails_with_what_to_do_and_does_not_reboot(tmp_path: Path) -> None:
    (tmp_path / "version").write_text(OPEN.format(v="560.35.03"))
    (tmp_path / "module").mkdir()
    rc, log, _ = run_tasks(tmp_path, "mismatch.yml", {"nvidia_driver_proc_version_file": str(tmp_path / "version"),
                                                      "nvidia_driver_sys_module_root": str(tmp_path / "module")}, "1")
    assert rc != 0
    assert "the loaded kernel module is 560.35.03" in log
    assert "nvidia_driver_reboot_on_mismatch: true" in log
    # The reboot is opt-in: by default its task is skipped (it never reboots this machine).
    assert re.search(r"TASK \[nvidia_driver : Reboot the node to load[^\n]*\*+\nskipping:", log), log


def test_nouveau_or_no_module_is_a_mismatch(tmp_path: Path) -> None:
    (tmp_path / "module" / "nouveau").mkdir(parents=True)
    rc, log, _ = run_tasks(tmp_path, "mismatch.yml", {"nvidia_driver_proc_version_file": str(tmp_path / "absent"),
                                                      "nvidia_driver_sys_module_root": str(tmp_path / "module")}, "1")
    assert rc != 0
    assert "nouveau is loaded and holds the GPU" in log


def load(name: str) -> list[dict[str, Any]]:
    data = yaml.safe_load((ROLE / "tasks" / name).read_text())
    assert isinstance(data, list)
    return data


def task(tasks: list[dict[str, Any]], name_part: str) -> dict[str, Any]:
    found = [t for t in tasks if name_part in t.get("name", "")]
    assert len(found) == 1, [t.get("name") for t in tasks]
    return found[0]


def test_apt_updates_the_cache_when_the_keyring_or_pin_changed() -> None:
    repository = load("repository.yml")
    keyring = task(repository, "Add NVIDIA's CUDA apt repository keyring")
    assert keyring["register"] == "nvidia_driver_keyring"
    update = task(repository, "Read the new repository's package lists")
    assert update["ansible.builtin.apt"] == {"update_cache": True}
    assert update["when"] == "ansible_os_family == 'Debian' and nvidia_driver_keyring is changed"
    tasks = load("apt.yml")
    added = task(tasks, "Add NVIDIA's CUDA apt repository")
    assert added["ansible.builtin.include_tasks"] == "repository.yml"
    again = task(tasks, "Read the package lists again")
    assert again["ansible.builtin.apt"] == {"update_cache": True}
    assert "cache_valid_time" not in again["ansible.builtin.apt"]
    assert again["when"] == "nvidia_driver_apt_pin is changed"
    names = [t["name"] for t in tasks]
    assert names.index(added["name"]) < names.index(task(tasks, "Pin the driver")["name"]) \
        < names.index(again["name"]) < names.index(task(tasks, "headers")["name"])


def test_apt_pins_the_exact_version_from_nvidias_origin_and_installs_headers_first() -> None:
    tasks = load("apt.yml")
    pin = task(tasks, "Pin the driver branch")["ansible.builtin.copy"]
    assert pin["dest"].startswith("/etc/apt/preferences.d/")
    assert 'Pin: origin "developer.download.nvidia.com"' in pin["content"]
    assert "Pin: version {{ nvidia_driver_version }}-*" in pin["content"]
    assert "Pin-Priority: 1001" in pin["content"]
    headers = task(tasks, "headers")["ansible.builtin.apt"]
    assert headers["name"] == "{{ nvidia_driver_prerequisites }}"
    ubuntu = yaml.safe_load((ROLE / "vars" / "Ubuntu.yml").read_text())
    assert ubuntu["nvidia_driver_prerequisites"][0] == "linux-headers-{{ ansible_kernel }}"
    assert not any("-server" in p for p in ubuntu["nvidia_driver_packages"])
    assert all("={{ nvidia_driver_version }}-*" in p for p in ubuntu["nvidia_driver_packages"])


def test_raising_the_pin_installs_through_the_hold_then_holds_again() -> None:
    apt = load("apt.yml")
    for t in apt:
        if "name" in t.get("ansible.builtin.apt", {}) and "nvidia_driver_prerequisites" not in str(t):
            assert t["ansible.builtin.apt"]["allow_change_held_packages"] is True, t["name"]
    hold = load("hold.yml")
    assert task(hold, "apt-mark")["ansible.builtin.dpkg_selections"]["selection"] == "hold"
    dnf = load("dnf.yml")
    names = [t["name"] for t in dnf]
    release = task(dnf, "Release the locks")
    install = task(dnf, "Install the pinned NVIDIA driver packages")
    assert names.index(release["name"]) < names.index(install["name"])
    assert release["ansible.builtin.command"]["argv"][:3] == ["dnf", "versionlock", "delete"]
    for lock in ("Lock the driver packages", "Lock the running kernel"):
        assert task(hold, lock)["ansible.builtin.command"]["argv"][:3] == ["dnf", "versionlock", "add"]


def test_dnf_uses_exact_versions_and_epel_not_a_bare_module_stream() -> None:
    redhat = (ROLE / "vars" / "RedHat.yml").read_text()
    assert "@nvidia-driver" not in redhat
    data = yaml.safe_load(redhat)
    assert data["nvidia_driver_packages"].endswith("'-' ~ nvidia_driver_version) | list }}")
    assert "dkms" in data["nvidia_driver_prerequisites"]
    assert task(load("dnf.yml"), "EPEL")["ansible.builtin.dnf"]["name"] == "{{ nvidia_driver_epel_package }}"


def test_peermem_is_loaded_then_persisted_and_a_failed_load_is_recorded_never_fatal() -> None:
    tasks = load("gpudirect.yml")
    names = [t["name"] for t in tasks]
    modprobe = task(tasks, "Load nvidia-peermem now")
    assert modprobe["ansible.builtin.command"]["argv"] == ["modprobe", "nvidia-peermem"]
    assert modprobe["failed_when"] is False
    persist = task(tasks, "every boot")
    assert persist["ansible.builtin.copy"]["dest"] == "/etc/modules-load.d/gpuctl-nvidia-peermem.conf"
    assert "nvidia-peermem" in persist["ansible.builtin.copy"]["content"]
    assert names.index(modprobe["name"]) < names.index(persist["name"])  # persisted only once it loads
    assert not [t for t in tasks if "ansible.builtin.fail" in t or "ansible.builtin.assert" in t]
    recorded = task(tasks, "Record that nvidia-peermem did not load")["ansible.builtin.set_fact"]
    assert recorded["nvidia_driver_gpudirect_mode"] == "none"
    said = task(tasks, "GPUDirect RDMA is off")["ansible.builtin.debug"]["msg"]
    assert said.startswith("Note: GPUDirect RDMA is off (")  # the summary's note (ansible_run.py)


def test_fabric_manager_and_persistenced_are_enabled_and_checked() -> None:
    tasks = load("services.yml")
    fm = task(tasks, "Enable and start Fabric Manager")
    assert fm["ansible.builtin.systemd_service"] == {"name": "{{ nvidia_driver_fabricmanager_service }}",
                                                     "enabled": True, "state": "started"}
    assert task(tasks, "persistenced")["ansible.builtin.systemd_service"]["enabled"] is True
    assert "assert" in str(task(tasks, "Check that Fabric Manager is running"))


def test_persistence_mode_is_turned_on_not_only_the_daemon_started() -> None:
    """Ubuntu's packaged unit passes --no-persistence-mode; NVIDIA's own role overrides ExecStart
    (files/nvidia-persistenced-override.conf). The drop-in, written out, and the restart it needs."""
    tasks = load("services.yml")
    names = [t["name"] for t in tasks]
    dropin = task(tasks, "turn persistence mode on")
    assert dropin["ansible.builtin.copy"]["dest"] == (
        "/etc/systemd/system/nvidia-persistenced.service.d/gpuctl-persistence-mode.conf")
    assert dropin["ansible.builtin.copy"]["content"].splitlines()[1:] == [
        "[Service]", "ExecStart=", "ExecStart=/usr/bin/nvidia-persistenced --user root --persistence-mode --verbose"]
    start = task(tasks, "Enable and start nvidia-persistenced")
    assert names.index(task(tasks, "drop-in directory")["name"]) < names.index(dropin["name"]) \
        < names.index(start["name"])
    assert start["ansible.builtin.systemd_service"]["daemon_reload"] == (
        "{{ nvidia_driver_persistenced_dropin is changed }}")
    assert start["ansible.builtin.systemd_service"]["state"] == (
        "{{ 'restarted' if nvidia_driver_persistenced_dropin is changed else 'started' }}")


def test_acs_iommu_probe_never_fails_or_changes() -> None:
    tasks = load("node_checks.yml")
    probe = tasks[0]
    assert probe["failed_when"] is False
    assert probe["changed_when"] is False
    assert probe["check_mode"] is False
    assert all("fail" not in t and "assert" not in str(t) for t in tasks)
    assert "ansible.builtin.debug" in tasks[1]


def test_nouveau_is_blacklisted() -> None:
    copy = load("nouveau.yml")[0]["ansible.builtin.copy"]
    assert "blacklist nouveau" in copy["content"]
    reboot = load("mismatch.yml")[-2]
    assert "ansible.builtin.reboot" in reboot
    assert reboot["when"] == "nvidia_driver_mismatch | bool and nvidia_driver_reboot_on_mismatch | bool"


SUPPORTED = "{'repo': nvidia_driver_repo_distro | default('none')}"


# The facts ansible-core 2.16 gathers on these images: TencentOS Server 3.1 → distribution TencentOS,
# major version 3, os_family RedHat (ansible/ansible@v2.16.9, its own fixture
# test/units/module_utils/facts/system/distribution/fixtures/tencentos_3_1.json). Alibaba Cloud Linux 3
# → Alibaba: /etc/redhat-release without "Red Hat" gives its first word as the distribution, and
# 'Alibaba' is in OS_FAMILY_MAP's RedHat list (lib/ansible/module_utils/facts/system/distribution.py:
# 112-121, 514); that file's content on alinux3 is paper only (no capture found).
@pytest.mark.parametrize(("distribution", "major"), [("TencentOS", "3"), ("Alibaba", "3"), ("Rocky", "8")])
def test_el8_compatible_releases_get_the_rhel8_repository(tmp_path: Path, distribution: str, major: str) -> None:
    extra = {"ansible_os_family": "RedHat", "ansible_distribution": distribution,
             "ansible_distribution_major_version": major}
    rc, output, report = run_tasks(tmp_path, "supported", {**extra, **yaml.safe_load(
        (ROLE / "vars" / "RedHat.yml").read_text())}, SUPPORTED)
    assert rc == 0, output
    assert report == {"repo": "rhel8"}


@pytest.mark.parametrize(("distribution", "major"), [("TencentOS", "4"), ("OpenCloudOS", "9"), ("Rocky", "9")])
def test_other_el_releases_are_refused_not_given_the_rhel8_repository(
    tmp_path: Path, distribution: str, major: str
) -> None:
    extra = {"ansible_os_family": "RedHat", "ansible_distribution": distribution,
             "ansible_distribution_major_version": major, "ansible_distribution_version": f"{major}.0"}
    rc, output, report = run_tasks(tmp_path, "supported", {**extra, **yaml.safe_load(
        (ROLE / "vars" / "RedHat.yml").read_text())}, SUPPORTED)
    assert rc != 0
    assert report is None
    assert (f"runs {distribution} {major}.0: gpuctl installs the NVIDIA driver from NVIDIA's rhel8 repository "
            "only on TencentOS, Alibaba, RedHat, Rocky, AlmaLinux, CentOS releases") in " ".join(output.split())


def play_with_role_vars(tmp_path: Path, family: str, tasks: list[dict[str, Any]], extra: dict[str, Any]) -> None:
    """Run `tasks` on localhost with the role's defaults and vars/<family>.yml loaded (nothing is installed)."""
    play = [{
        "hosts": "localhost", "connection": "local", "gather_facts": False,
        "vars_files": [str(ROLE / "defaults" / "main.yml"), str(ROLE / "vars" / f"{family}.yml")],
        "tasks": tasks,
    }]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "extra.json").write_text(json.dumps({"ansible_python_interpreter": sys.executable, **extra}))
    done = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", "play.yml", "-e", "@extra.json"],
                          cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300,
                          env={**os.environ, "ANSIBLE_NOCOLOR": "1"})
    assert done.returncode == 0, done.stdout + done.stderr


def render_vars(tmp_path: Path, family: str, names: list[str], extra: dict[str, Any]) -> dict[str, Any]:
    """The role's vars/<family>.yml as Ansible computes them for the given facts."""
    out = tmp_path / "vars.json"
    play_with_role_vars(tmp_path, family, [{"ansible.builtin.copy": {
        "dest": str(out), "mode": "0644",
        "content": "{{ {" + ", ".join(f"'{n}': {n}" for n in names) + "} | to_json }}"}}], extra)
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def test_el_nvswitch_packages_are_the_names_nvidias_spec_files_give() -> None:
    """NVIDIA's RPM spec files: `nvidia-fabric-manager` (no branch; yum-packaging-fabric-manager
    fabricmanager.spec:26) and `libnvidia-nscq-<branch>` (yum-packaging-libnvidia-nscq
    libnvidia_nscq.spec:28, e.g. libnvidia-nscq-525-525.85.12-1.x86_64.rpm). Written out here."""
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        got = render_vars(Path(scratch), "RedHat",
                          ["nvidia_driver_fabricmanager_package_names", "nvidia_driver_fabricmanager_packages"],
                          {"nvidia_driver_version": "570.133.20", "nvidia_driver_open_modules": True,
                           "ansible_kernel": "5.10.134-16.3.al8.x86_64", "ansible_architecture": "x86_64"})
    assert got == {
        "nvidia_driver_fabricmanager_package_names": ["nvidia-fabric-manager", "libnvidia-nscq-570"],
        "nvidia_driver_fabricmanager_packages": ["nvidia-fabric-manager-570.133.20", "libnvidia-nscq-570-570.133.20"],
    }


# `dnf module list --enabled` lines, in the shape real captures show them: "name  stream [e]  profiles
# summary", or "[d][e]" for an enabled default stream (RHEL 8.2's `yum module list --installed`:
# "postgresql   9.6 [e]   client, server [d] [i]   PostgreSQL server and client ..."; RHEL 8's
# "python36      3.6 [d][e]     build, common [d]    Python ... version 3.6"), with the header and hint.
ENABLED_550_DKMS = ["cuda-rhel8-x86_64", "Name           Stream          Profiles                 Summary",
                    "nvidia-driver  550-dkms [e]    default [d], fm, ks, src Nvidia driver for 550-dkms branch", "",
                    "Hint: [d]efault, [e]nabled, [x]disabled, [i]nstalled"]


@pytest.mark.parametrize(("enabled", "wanted", "resets"), [
    (ENABLED_550_DKMS, {"nvidia_driver_version": "570.133.20", "nvidia_driver_open_modules": True}, True),
    (ENABLED_550_DKMS, {"nvidia_driver_version": "550.163.01", "nvidia_driver_open_modules": True}, True),
    (ENABLED_550_DKMS, {"nvidia_driver_version": "550.163.01", "nvidia_driver_open_modules": False}, False),
    ([line.replace("[e]", "[d][e]") for line in ENABLED_550_DKMS],
     {"nvidia_driver_version": "550.163.01", "nvidia_driver_open_modules": False}, False),
    ([], {"nvidia_driver_version": "570.133.20", "nvidia_driver_open_modules": True}, False),  # none enabled yet
])
def test_el_resets_the_driver_module_before_enabling_another_stream(
        tmp_path: Path, enabled: list[str], wanted: dict[str, Any], resets: bool) -> None:
    """dnf cannot enable a stream while another of the module is enabled: a new branch or flavour
    resets the module first. The task's own condition, run by Ansible on the captured shape."""
    reset = task(load("dnf.yml"), "Reset the driver module")
    enable = task(load("dnf.yml"), "Enable the driver's module stream")
    tasks = load("dnf.yml")
    assert tasks.index(reset) < tasks.index(enable)
    assert reset["ansible.builtin.command"]["argv"] == ["dnf", "-y", "module", "reset", "nvidia-driver"]
    out = tmp_path / "out.json"
    play_with_role_vars(tmp_path, "RedHat", [
        {"ansible.builtin.set_fact": {"nvidia_driver_enabled_streams": {"stdout_lines": enabled}}},
        {"ansible.builtin.copy": {"dest": str(out), "mode": "0644", "content": "reset"}, "when": reset["when"]},
    ], wanted)
    assert out.exists() == resets


PATH_REPORT = ("{'path': nvidia_driver_path, 'origin': nvidia_driver_preinstalled_origin, "
               "'version': nvidia_driver_preinstalled_version}")


def image_driver(tmp_path: Path, *, smi: str | None, runfile: bool, loaded: str | None) -> dict[str, Any]:
    """The role's variables for an image: nvidia-smi at `smi` (a path that exists, or none), the
    .run installer's uninstaller or not, and the loaded module's /proc version line (its real format)."""
    marker = tmp_path / "nvidia-uninstall"
    if runfile:
        marker.write_text("#!/bin/sh\n")
    version = tmp_path / "version"
    if loaded is not None:
        version.write_text(PROPRIETARY.format(v=loaded))
    return {"nvidia_driver_smi_path": smi or str(tmp_path / "no-nvidia-smi"),
            "nvidia_driver_runfile_marker": str(marker), "nvidia_driver_proc_version_file": str(version),
            "nvidia_driver_version": "570.133.20"}


def fake_smi(tmp_path: Path) -> str:
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\n")
    return str(smi)


def test_an_image_without_a_driver_gets_the_pin_installed(tmp_path: Path) -> None:
    rc, log, got = run_tasks(tmp_path, "preinstalled.yml", image_driver(tmp_path, smi=None, runfile=False,
                                                                         loaded=None), PATH_REPORT)
    assert rc == 0, log
    assert got == {"path": "install", "origin": "none", "version": "none"}


def test_the_pinned_driver_the_image_runs_is_kept_and_said(tmp_path: Path) -> None:
    image = image_driver(tmp_path, smi=fake_smi(tmp_path), runfile=True, loaded="570.133.20")
    rc, log, got = run_tasks(tmp_path, "preinstalled.yml", image, PATH_REPORT)
    assert rc == 0, log
    assert got == {"path": "keep", "origin": "runfile", "version": "570.133.20"}
    assert ("Note: kept the image's driver 570.133.20 (from NVIDIA's .run installer): it is the pinned version; "
            "nothing installed.") in log


@pytest.mark.parametrize(("runfile", "origin_words"), [
    (True, "by NVIDIA's .run installer ("), (False, "by no package ("),
])
def test_another_driver_no_package_manager_knows_is_refused_never_layered(
        tmp_path: Path, runfile: bool, origin_words: str) -> None:
    rc, log, got = run_tasks(tmp_path, "preinstalled.yml", image_driver(tmp_path, smi=fake_smi(tmp_path),
                                                                         runfile=runfile, loaded="550.163.01"),
                             PATH_REPORT)
    assert rc != 0
    assert got is None  # the play stopped at the refusal
    said = " ".join(log.split())
    assert "already has an NVIDIA driver (version 550.163.01) installed " + origin_words in said
    assert "gpuctl does not install a package driver over it: either pin software.driver to 550.163.01" in said


def test_another_version_from_a_package_is_moved_to_the_pin_by_the_package_manager(tmp_path: Path) -> None:
    # /usr/bin/dpkg stands in for a package's nvidia-smi: a file dpkg really knows the owner of.
    if not Path("/usr/bin/dpkg").exists():
        pytest.skip("needs dpkg (a Debian host) for a file a package owns")
    rc, log, got = run_tasks(tmp_path, "preinstalled.yml", image_driver(tmp_path, smi="/usr/bin/dpkg",
                                                                         runfile=False, loaded="550.163.01"),
                             PATH_REPORT)
    assert rc == 0, log
    assert got == {"path": "install", "origin": "package", "version": "550.163.01"}


def test_install_steps_run_only_on_the_install_path() -> None:
    tasks = load("install.yml")
    names = [t["name"] for t in tasks]
    decide = task(tasks, "Find the driver the image already carries")
    for step in ("apt repository", "dnf repository", "Blacklist nouveau"):
        found = task(tasks, step)
        assert names.index(decide["name"]) < names.index(found["name"])
        assert "nvidia_driver_path == 'install'" in str(found["when"])
    hold = task(tasks, "Hold the driver")
    assert hold["when"] == "nvidia_driver_hold | bool or nvidia_driver_hold_kernel | bool"  # the kernel: always


def test_a_node_whose_install_record_holds_skips_the_package_steps_and_keeps_every_check() -> None:
    tasks = load("install.yml")
    skipped = ["Blacklist nouveau", "Install the pinned driver from NVIDIA's apt repository",
               "Install the pinned driver from NVIDIA's dnf repository", "Install Fabric Manager beside a kept driver"]
    for step in skipped:
        assert "not nvidia_driver_held | bool" in str(task(tasks, step)["when"]), step
    kept = [t["name"] for t in tasks if "nvidia_driver_held" not in str(t.get("when", ""))]
    assert kept == [
        "Load the package names for this operating system family",
        "Refuse an operating system release this role has no NVIDIA repository for",
        "Find the driver the image already carries, and decide to keep it, install the pin or refuse",
        "Probe the PCI bus for NVSwitches and pre-Turing GPUs",
        "Hold the driver and the kernel at their versions",
        "Rebuild the initramfs now if nouveau was just blacklisted",
        "Look for loaded nvidia and nouveau kernel modules",
        "Load the NVIDIA kernel module when neither it nor nouveau is loaded",
        "Check that the loaded driver is the installed one (driver/library mismatch, nouveau)",
        "Start nvidia-persistenced and Fabric Manager",
        "Set up GPUDirect RDMA for the fabric (or say why it is off on an RDMA fabric)",
        "Read the running driver's version from nvidia-smi",
        "Check that nvidia-smi runs and reports the pinned driver",
        "Warn about the IOMMU and PCIe ACS on bare metal",
    ]
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert defaults["nvidia_driver_held"] == "{{ install_record_held | default(false) }}"


@pytest.mark.parametrize(("stack", "path", "origin", "held"), [
    ("install", "install", "none", True),      # gpuctl installed it
    ("install", "keep", "package", True),      # a packaged driver kept at the pin
    ("install", "keep", "runfile", False),     # no package to hold
    ("image", "keep", "package", False),       # the image's own driver, at whatever version
])
def test_the_driver_packages_are_held_only_where_gpuctl_manages_them(
        tmp_path: Path, stack: str, path: str, origin: str, held: bool) -> None:
    decide = task(load("hold.yml"), "Decide whether the driver packages are gpuctl's to hold")
    expression = decide["ansible.builtin.set_fact"]["nvidia_driver_holds_packages"]
    content = "{{ (" + expression.strip().strip("{} ") + ") | to_json }}"
    play = [{"hosts": "localhost", "connection": "local", "gather_facts": False,
             "tasks": [{"ansible.builtin.copy": {"dest": str(tmp_path / "out.json"), "mode": "0644",
                                                 "content": content}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    extra = {"ansible_python_interpreter": sys.executable, "nvidia_driver_stack": stack,
             "nvidia_driver_path": path, "nvidia_driver_preinstalled_origin": origin}
    (tmp_path / "extra.json").write_text(json.dumps(extra))
    done = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", "play.yml", "-e", "@extra.json"],
                          cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((tmp_path / "out.json").read_text()) is held


def test_a_runfile_driver_whose_module_is_not_loaded_is_refused_with_its_version_unknown(tmp_path: Path) -> None:
    rc, log, _ = run_tasks(tmp_path, "preinstalled.yml", image_driver(tmp_path, smi=fake_smi(tmp_path),
                                                                       runfile=True, loaded=None), PATH_REPORT)
    assert rc != 0
    said = " ".join(log.split())
    assert "already has an NVIDIA driver (its module not loaded, version unknown) installed by NVIDIA's" in said
    assert "either pin software.driver to the image's version to keep" in said
