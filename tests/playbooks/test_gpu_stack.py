"""The pool's gpu_stack on the roles: what each path keeps and installs, decided by the roles' own
task files on localhost against fake trees (nothing is installed), plus the spec, plan and inventory
sides of the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.playbooks.test_roles_nvidia_driver import PATH_REPORT, fake_smi, image_driver, run_tasks

CAPTURES = Path(__file__).resolve().parents[1] / "captures"
NVCC_12_4 = (CAPTURES / "cuda" / "nvcc-version-12.4.131.txt").read_text().split("\n", 1)[1]  # a real output


def test_an_image_pool_keeps_the_loaded_driver_of_another_version_and_checks_against_it(tmp_path: Path) -> None:
    image = image_driver(tmp_path, smi=fake_smi(tmp_path), runfile=True, loaded="550.163.01")
    report = PATH_REPORT[:-1] + ", 'checked_against': nvidia_driver_target_version}"
    rc, log, got = run_tasks(tmp_path, "preinstalled.yml", {**image, "gpuctl_gpu_stack": "image"}, report)
    assert rc == 0, log
    assert got == {"path": "keep", "origin": "runfile", "version": "550.163.01", "checked_against": "550.163.01"}
    said = " ".join(log.split())
    assert ("Note: kept the image's driver 550.163.01 (from NVIDIA's .run installer): the pool takes the image's "
            "stack (gpu_stack image), the pin 570.133.20 is not applied; nothing installed.") in said


def test_the_same_runfile_driver_on_an_install_pool_is_still_refused(tmp_path: Path) -> None:
    image = image_driver(tmp_path, smi=fake_smi(tmp_path), runfile=True, loaded="550.163.01")
    rc, log, _ = run_tasks(tmp_path, "preinstalled.yml", {**image, "gpuctl_gpu_stack": "install"}, PATH_REPORT)
    assert rc != 0
    assert "gpuctl does not install a package driver over it" in " ".join(log.split())


@pytest.mark.parametrize(("smi", "words"), [
    (False, "(no nvidia-smi, no kernel module loaded;"),
    (True, "(nvidia-smi is there, no kernel module is loaded;"),
])
def test_an_image_pool_without_a_running_driver_is_refused_never_installed(
        tmp_path: Path, smi: bool, words: str) -> None:
    image = image_driver(tmp_path, smi=fake_smi(tmp_path) if smi else None, runfile=False, loaded=None)
    rc, log, got = run_tasks(tmp_path, "preinstalled.yml", {**image, "gpuctl_gpu_stack": "image"}, PATH_REPORT)
    assert rc != 0
    assert got is None
    said = " ".join(log.split())
    assert "localhost: its pool's gpu_stack is image, but no NVIDIA driver runs on it " + words in said
    assert "gpuctl installs no driver on this path" in said


def toolkits(root: Path, versions: dict[str, str]) -> Path:
    """<root>/cuda-<dir>/bin/nvcc printing the real 12.4 output with its release replaced."""
    for directory, release in versions.items():
        nvcc = root / f"cuda-{directory}" / "bin" / "nvcc"
        nvcc.parent.mkdir(parents=True)
        text = NVCC_12_4.replace("release 12.4, V12.4.131", f"release {release}, V{release}.0")
        nvcc.write_text("#!/bin/sh\ncat <<'OUT'\n" + text + "OUT\n")
        nvcc.chmod(0o755)
    (root / "cuda-broken" / "bin").mkdir(parents=True)  # a toolkit directory with no nvcc: not a toolkit
    return root


CUDA_REPORT = "{'path': cuda_path, 'version': cuda_target_version, 'home': cuda_home}"


def test_the_real_nvcc_output_reads_as_its_release(tmp_path: Path) -> None:
    root = tmp_path / "local"
    nvcc = root / "cuda-12.4" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("#!/bin/sh\ncat <<'OUT'\n" + NVCC_12_4 + "OUT\n")
    nvcc.chmod(0o755)
    rc, log, got = run_tasks(tmp_path, "find.yml", {"cuda_search_root": str(root), "cuda_version": "12.8",
                                                    "gpuctl_gpu_stack": "image"}, CUDA_REPORT, role="cuda")
    assert rc == 0, log
    assert got == {"path": "keep", "version": "12.4", "home": str(root / "cuda-12.4")}


def test_an_install_pool_keeps_a_toolkit_only_at_the_pin(tmp_path: Path) -> None:
    root = toolkits(tmp_path / "local", {"12.4": "12.4", "12.8": "12.8"})
    rc, log, got = run_tasks(tmp_path, "find.yml", {"cuda_search_root": str(root), "cuda_version": "12.8"},
                             CUDA_REPORT, role="cuda")
    assert rc == 0, log
    assert got == {"path": "keep", "version": "12.8", "home": str(root / "cuda-12.8")}
    assert "Note: kept the image's CUDA 12.8 (" + str(root / "cuda-12.8") + "): it is the pinned version" in log


def test_an_install_pool_installs_the_pin_beside_another_toolkit(tmp_path: Path) -> None:
    root = toolkits(tmp_path / "local", {"12.4": "12.4"})
    rc, log, got = run_tasks(tmp_path, "find.yml", {"cuda_search_root": str(root), "cuda_version": "12.8"},
                             "{'path': cuda_path, 'version': cuda_target_version}", role="cuda")
    assert rc == 0, log
    assert got == {"path": "install", "version": "12.8"}


def test_an_image_pool_keeps_its_newest_toolkit_by_version_not_by_name(tmp_path: Path) -> None:
    root = toolkits(tmp_path / "local", {"12.4": "12.4", "12.10": "12.10", "12.6": "12.6"})
    rc, log, got = run_tasks(tmp_path, "find.yml", {"cuda_search_root": str(root), "cuda_version": "12.8",
                                                    "gpuctl_gpu_stack": "image"}, CUDA_REPORT, role="cuda")
    assert rc == 0, log
    assert got == {"path": "keep", "version": "12.10", "home": str(root / "cuda-12.10")}
    assert "the pin 12.8 is not applied; nothing installed." in " ".join(log.split())


def test_an_image_pool_without_a_toolkit_installs_the_pin(tmp_path: Path) -> None:
    root = tmp_path / "local"
    root.mkdir()
    rc, log, got = run_tasks(tmp_path, "find.yml", {"cuda_search_root": str(root), "cuda_version": "12.8",
                                                    "gpuctl_gpu_stack": "image"},
                             "{'path': cuda_path, 'version': cuda_target_version}", role="cuda")
    assert rc == 0, log
    assert got == {"path": "install", "version": "12.8"}


NCCL_REPORT = "{'path': nccl_path, 'version': nccl_target_version}"


def nccl_dirs(tmp_path: Path, names: list[str]) -> list[str]:
    lib = tmp_path / "lib"
    lib.mkdir()
    for name in names:
        (lib / name).write_bytes(b"\x7fELF")
    return [str(lib), str(tmp_path / "lib64-absent")]


def test_an_image_pool_keeps_its_newest_nccl(tmp_path: Path) -> None:
    dirs = nccl_dirs(tmp_path, ["libnccl.so.2", "libnccl.so.2.21.5", "libnccl.so.2.23.4", "libnccl.so.2.9.9"])
    rc, log, got = run_tasks(tmp_path, "find.yml", {"nccl_library_dirs": dirs, "nccl_version": "2.26.2",
                                                    "gpuctl_gpu_stack": "image"}, NCCL_REPORT, role="nccl")
    assert rc == 0, log
    assert got == {"path": "keep", "version": "2.23.4"}
    assert ("Note: kept the image's NCCL 2.23.4: the pool takes the image's stack (gpu_stack image), the pin 2.26.2 "
            "is not applied; nothing installed.") in " ".join(log.split())


def test_an_image_pool_without_nccl_installs_the_pin(tmp_path: Path) -> None:
    dirs = nccl_dirs(tmp_path, ["libnccl-net.so"])
    rc, log, got = run_tasks(tmp_path, "find.yml", {"nccl_library_dirs": dirs, "nccl_version": "2.26.2",
                                                    "gpuctl_gpu_stack": "image"}, NCCL_REPORT, role="nccl")
    assert rc == 0, log
    assert got == {"path": "install", "version": "2.26.2"}


def load(role: str, name: str) -> list[dict[str, Any]]:
    import yaml

    from toolkit.paths import ROLES_PATH
    return list(yaml.safe_load((ROLES_PATH / role / "tasks" / name).read_text()))


def test_package_steps_of_cuda_and_nccl_run_only_on_their_install_path() -> None:
    for role, path in (("cuda", "cuda_path"), ("nccl", "nccl_path")):
        for task in load(role, "install.yml"):
            module = next(k for k in task if k.startswith("ansible.builtin."))
            argv = str(task.get("ansible.builtin.command", {}))
            if module in ("ansible.builtin.apt", "ansible.builtin.dnf", "ansible.builtin.dpkg_selections") \
                    or "versionlock" in argv:
                assert f"{path}" in str(task["when"]), (role, task["name"])


def test_nccl_is_the_version_the_soname_link_points_at_not_merely_the_newest(tmp_path: Path) -> None:
    dirs = nccl_dirs(tmp_path, ["libnccl.so.2.21.5", "libnccl.so.2.23.4"])
    (Path(dirs[0]) / "libnccl.so.2").symlink_to("libnccl.so.2.21.5")
    rc, log, got = run_tasks(tmp_path, "find.yml", {"nccl_library_dirs": dirs, "nccl_version": "2.26.2",
                                                    "gpuctl_gpu_stack": "image"}, NCCL_REPORT, role="nccl")
    assert rc == 0, log
    assert got == {"path": "keep", "version": "2.21.5"}


def test_a_kept_drivers_own_module_flavour_is_recorded(tmp_path: Path) -> None:
    from tests.playbooks.test_roles_nvidia_driver import OPEN
    image = image_driver(tmp_path, smi=fake_smi(tmp_path), runfile=True, loaded="575.57.08")
    (tmp_path / "version").write_text(OPEN.format(v="575.57.08"))
    rc, log, got = run_tasks(tmp_path, "preinstalled.yml", {**image, "gpuctl_gpu_stack": "image"},
                             "{'path': nvidia_driver_path, 'open': nvidia_driver_preinstalled_open}")
    assert rc == 0, log
    assert got == {"path": "keep", "open": True}


def test_cuda_and_nccl_add_nvidias_repository_only_when_they_install() -> None:
    for role, path in (("cuda", "cuda_path == 'install'"), ("nccl", "nccl_path == 'install'")):
        tasks = load(role, "install.yml")
        names = [t["name"] for t in tasks]
        repository = next(t for t in tasks if t["name"] == "Add NVIDIA's CUDA package repository")
        assert repository["ansible.builtin.include_role"] == {"name": "nvidia_driver", "tasks_from": "repository.yml"}
        assert repository["when"] == path
        first_install = next(t["name"] for t in tasks if "ansible.builtin.apt" in t or "ansible.builtin.dnf" in t)
        assert names.index(repository["name"]) < names.index(first_install)


def test_an_install_pool_leaves_a_packaged_toolkit_to_the_package_manager() -> None:
    tasks = load("cuda", "find.yml")
    ask = next(t for t in tasks if t["name"].startswith("Ask the package manager whether the pinned toolkit"))
    assert "dpkg-query" in ask["ansible.builtin.command"]["argv"]
    assert "rpm" in ask["ansible.builtin.command"]["argv"]
    leave = next(t for t in tasks if t["name"].startswith("Leave a packaged toolkit"))
    assert leave["ansible.builtin.set_fact"] == {"cuda_kept": {}}
    assert leave["when"] == "cuda_stack == 'install' and cuda_kept and cuda_kept_owner.rc | default(1) == 0"


def test_an_image_pool_is_tuned_for_the_nccl_the_node_has_not_the_pin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import toolkit.topology.detect as detect
    import toolkit.tuning.engine as engine
    from toolkit.configure.decide import tune_spec_node
    from toolkit.spec import load_spec_text

    spec = load_spec_text("name: s\nprovider: local\nnode_pools: [{name: n, instance_type: lab, count: 1}]\n"
                          "network: {fabric: tcp, admin_cidr: 127.0.0.0/8}\nlifecycle: {ttl: 2h}\n")
    asked: list[object] = []
    monkeypatch.setattr(detect, "detect_paths", lambda paths: "topology")
    monkeypatch.setattr(engine, "tune", lambda topology, **kw: asked.append(kw["nccl_version"]))
    tune_spec_node(spec, tmp_path, None, image_stack=True)
    tune_spec_node(spec, tmp_path, None)
    assert asked == [None, "2.26.2"]  # None: the version the gathered topology names
