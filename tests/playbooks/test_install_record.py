"""The install record: the script the install_record role runs (on this machine's own dpkg), and
the install inputs digest render.py hands each node."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from toolkit.configure.render import install_inputs
from toolkit.paths import ROLES_PATH

SCRIPT = (ROLES_PATH / "install_record" / "files" / "install_state.sh").read_text()


def state(inputs: str, mode: str, file: Path) -> list[str]:
    done = subprocess.run(["sh", "-c", SCRIPT, "install_state", inputs, mode, str(file)],
                          capture_output=True, text=True, check=True, timeout=60)
    return done.stdout.splitlines()


@pytest.mark.skipif(shutil.which("dpkg-query") is None and shutil.which("rpm") is None,
                    reason="needs dpkg-query or rpm")
def test_the_record_holds_for_its_own_inputs_and_names_the_first_difference(tmp_path: Path) -> None:
    record = tmp_path / "etc" / "gpuctl" / "install.env"
    assert state("abc", "check", record) == ["why=no install record on this node"]
    assert state("abc", "record", record) == ["recorded=1"]
    lines = record.read_text().splitlines()
    assert lines[:2] == ["version=1", "inputs=abc"]
    assert [line.split("=", 1)[0] for line in lines] == ["version", "inputs", "kernel", "packages", "nvidia"]
    assert len(lines[3].split("=", 1)[1]) == 64  # a sha256 of the package set
    assert state("abc", "check", record) == ["held=1"]
    assert state("abd", "check", record) == [
        "why=the install inputs changed (roles, software pins, GPU stack, fabric or instance type)"]
    kernel = lines[2].split("=", 1)[1]
    record.write_text("\n".join([*lines[:2], "kernel=5.4.0-old", *lines[3:]]) + "\n")
    assert state("abc", "check", record) == [f"why=kernel {kernel}, the record's is 5.4.0-old"]
    record.write_text("\n".join([*lines[:3], "packages=" + "0" * 64, *lines[4:]]) + "\n")
    assert state("abc", "check", record) == ["why=the installed packages differ from those recorded"]
    loaded = Path("/sys/module/nvidia/version")
    now = loaded.read_text().strip() if loaded.is_file() else ""
    record.write_text("\n".join([*lines[:4], "nvidia=1.2.3"]) + "\n")
    assert state("abc", "check", record) == [f"why=NVIDIA module {now or 'not loaded'}, the record's is 1.2.3"]
    record.write_text("version=2\n")
    assert state("abc", "check", record) == ["why=an install record of another version"]


def host(**extra: object) -> dict[str, object]:
    return {"ansible_host": "10.0.0.1", "gpuctl_fabric_ip": "10.1.0.1/24", "gpuctl_pool": "gpu",
            "gpuctl_gpu_stack": "install", "gpuctl_instance_type": "ecs.ebmgn8v.48xlarge", **extra}


GROUP = {"gpuctl_cluster": "a", "gpuctl_provider": "alicloud", "gpuctl_fabric": "erdma", "gpuctl_mtu": 8500,
         "nvidia_driver_version": "570.124.06", "cuda_version": "12.8", "nccl_version": "2.26.2"}


def test_install_inputs_ignore_what_makes_a_node_itself_and_follow_what_decides_the_install() -> None:
    first = install_inputs("roles", host(), GROUP)
    # Another node, another cluster name and MTU: the same install.
    assert install_inputs("roles", host(ansible_host="10.0.0.2", gpuctl_fabric_ip="10.1.0.2/24"),
                          {**GROUP, "gpuctl_cluster": "b", "gpuctl_mtu": 1500}) == first
    assert install_inputs("roles2", host(), GROUP) != first
    assert install_inputs("roles", host(gpuctl_instance_type="ecs.gn7i-c32g1.8xlarge"), GROUP) != first
    assert install_inputs("roles", host(gpuctl_gpu_stack="image"), GROUP) != first
    assert install_inputs("roles", host(), {**GROUP, "cuda_version": "12.6"}) != first
    assert install_inputs("roles", host(), {**GROUP, "gpuctl_fabric": "tcp"}) != first


def test_a_node_whose_packages_cannot_be_listed_is_never_recorded_nor_matched(tmp_path: Path) -> None:
    # No dpkg database and no rpm on PATH: the listing is empty, which proves nothing.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("uname", "sort", "sha256sum", "cat", "sed", "head", "mkdir", "dirname", "mv", "printf"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    script = SCRIPT.replace("/var/lib/dpkg/status", str(tmp_path / "no-dpkg-status"))
    record = tmp_path / "install.env"
    env = {"PATH": str(bin_dir)}
    shell = shutil.which("sh") or "/bin/sh"
    done = subprocess.run([shell, "-c", script, "install_state", "abc", "record", str(record)], env=env,
                          capture_output=True, text=True, check=False, timeout=60)
    assert (done.returncode, done.stdout) == (1, "")
    assert "cannot list the installed packages" in done.stderr
    assert not record.exists()
    record.write_text("version=1\ninputs=abc\n")
    done = subprocess.run([shell, "-c", script, "install_state", "abc", "check", str(record)], env=env,
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.stdout.splitlines() == ["why=cannot list the installed packages (no dpkg or rpm database answered)"]
