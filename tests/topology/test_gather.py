"""gather.sh under plain /bin/sh (dash) on this machine, and `gpuctl detect` on its bundle."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from toolkit.cli import main
from toolkit.topology.gather import gather_script, run_gather_locally


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_gather_locally(tmp_path_factory.mktemp("gather") / "node")


def test_script_is_package_data_and_posix_sh() -> None:
    script = gather_script()
    assert script.name == "gather.sh"
    assert script.read_text().startswith("#!/bin/sh\n")
    if shutil.which("dash"):  # dash -n: syntax check with the strictest common /bin/sh
        subprocess.run(["dash", "-n", str(script)], check=True)


def test_manifest_records_every_command(bundle: Path) -> None:
    lines = (bundle / "MANIFEST").read_text().splitlines()
    assert lines[0] == "# gpuctl gather manifest"
    entries = {line.split("\t")[0]: line.split("\t")[1] for line in lines if "\t" in line}
    for name in ("nvidia-smi-topo-m.txt", "nvidia-smi-query-gpu.csv", "nvidia-smi-q.xml",
                 "ibv_devinfo-v.txt", "ibstat.txt", "show_gids.txt", "ibdev2netdev.txt",
                 "rdma-link.txt", "ip-addr.json", "ip-link.json", "hostname.txt", "uname-r.txt",
                 "proc-cmdline.txt", "nccl-version.txt", "sys-class-infiniband"):
        assert name in entries
        assert entries[name] == "missing" or entries[name].isdigit()
    if not shutil.which("nvidia-smi"):
        assert entries["nvidia-smi-topo-m.txt"] == "missing"


def test_replay_note_is_written(tmp_path: Path) -> None:
    env = {**os.environ, "GPUCTL_REPLAY_NOTE": "lab node replaying\tthe DGX A100 capture"}
    subprocess.run(["/bin/sh", str(gather_script()), str(tmp_path)], check=True, env=env,
                   capture_output=True)
    assert "replayed: lab node replaying the DGX A100 capture" in (tmp_path / "MANIFEST").read_text()


def test_missing_dest_is_usage_error() -> None:
    result = subprocess.run(["/bin/sh", str(gather_script())], capture_output=True, check=False)
    assert result.returncode == 2


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has a GPU")
def test_detect_on_this_machine_says_no_gpu(bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["detect", str(bundle)]) == 0
    out = capsys.readouterr().out
    assert "GPUs: none" in out
    assert "no GPU found (no nvidia-smi output with a GPU in it)" in out
    assert main(["detect", "--json", str(bundle)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gpus"] == []
    assert data["gpu_nic_distance"] == {}
    assert "no GPU found (no nvidia-smi output with a GPU in it)" in data["notes"]
    assert "rdma_devices_listed" in data


def test_gpuctl_gather_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gather", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "MANIFEST").is_file()
    assert f"detect {tmp_path / 'b'}" in capsys.readouterr().out  # how to read it (the command as invoked)
