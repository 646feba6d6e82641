"""/etc/nccl.conf is the one source of the NCCL settings: gpuctl writes no environment file, removes
the profile.d copy it used to install (only its own), and warns when a login shell still exports a
value that would override nccl.conf. The deliver tasks run for real on localhost, on files in a
temporary directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from toolkit.configure.decide import write_node_files
from toolkit.paths import ROLES_PATH
from toolkit.tuning.config import NcclConfig, NcclSetting

BIN = Path(sys.executable).parent
FORMER = "#!/bin/sh\n# /etc/profile.d/nccl.sh written by gpuctl (gpuctl tune). Do not edit by hand.\n" \
         'export NCCL_IB_DISABLE="1"\n'


def deliver(tmp_path: Path, home: Path) -> tuple[int, str]:
    render = tmp_path / "nccl" / "localhost"
    render.mkdir(parents=True)
    (render / "nccl.conf").write_text("# tuned\nNCCL_IB_DISABLE=1\nNCCL_SOCKET_IFNAME==fab0\n")
    play = [{"hosts": "localhost", "connection": "local", "gather_facts": False,
             "tasks": [{"ansible.builtin.include_role": {"name": "nccl_conf"}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "extra.json").write_text(json.dumps({
        "ansible_python_interpreter": sys.executable, "gpuctl_nccl_dir": str(tmp_path / "nccl"),
        "nccl_conf_path": str(tmp_path / "etc" / "nccl.conf"),
        "nccl_conf_former_env_path": str(tmp_path / "etc" / "profile.d" / "nccl.sh"),
        "nccl_conf_log_dir": str(tmp_path / "var" / "log" / "gpuctl" / "nccl")}))
    (tmp_path / "etc" / "profile.d").mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", "localhost,", "play.yml", "-e", "@extra.json"],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300,
        # A login shell reads $HOME/.profile: the stand-in for an operator's own exports.
        env={**os.environ, "HOME": str(home), "ANSIBLE_ROLES_PATH": str(ROLES_PATH), "ANSIBLE_NOCOLOR": "1",
             "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp")},
    )
    return done.returncode, done.stdout + done.stderr


def test_deliver_installs_only_nccl_conf_and_removes_the_former_gpuctl_env_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "etc" / "profile.d").mkdir(parents=True)
    (tmp_path / "etc" / "profile.d" / "nccl.sh").write_text(FORMER)
    rc, log = deliver(tmp_path, home)
    assert rc == 0, log
    assert (tmp_path / "etc" / "nccl.conf").read_text() == "# tuned\nNCCL_IB_DISABLE=1\nNCCL_SOCKET_IFNAME==fab0\n"
    assert not (tmp_path / "etc" / "profile.d" / "nccl.sh").exists()
    assert "Warning: a login shell" not in log


def test_an_operators_own_env_file_stays_and_its_override_is_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    own = "export NCCL_DEBUG=INFO\n"
    (tmp_path / "etc" / "profile.d").mkdir(parents=True)
    (tmp_path / "etc" / "profile.d" / "nccl.sh").write_text(own)
    # The operator's login shell exports another value of a variable nccl.conf sets.
    (home / ".profile").write_text("export NCCL_IB_DISABLE=0\nexport NCCL_SOCKET_IFNAME==fab0\n")
    rc, log = deliver(tmp_path, home)
    assert rc == 0, log  # a warning, never a failure
    assert (tmp_path / "etc" / "profile.d" / "nccl.sh").read_text() == own
    message = " ".join(log.split())
    assert "Warning: a login shell on localhost exports NCCL_IB_DISABLE=0, which NCCL takes over" in message
    assert "NCCL_SOCKET_IFNAME" not in message.split("exports", 1)[1].split("which")[0]  # same value: no override


def test_node_files_are_nccl_conf_and_explain_only(tmp_path: Path) -> None:
    config = NcclConfig(hostname="h", nccl_version="2.26.2", fabric="tcp")
    config.set(NcclSetting("NCCL_SOCKET_IFNAME", "=fab0", "topology-rule", "the fabric interface", "provider"))
    (tmp_path / "nccl.sh").write_text(FORMER)  # left by an older gpuctl
    assert write_node_files(config, tmp_path) is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["explain.json", "nccl.conf"]
    assert write_node_files(config, tmp_path) is False


def test_env_rendering_does_not_look_like_the_file_the_role_removes() -> None:
    """`gpuctl tune --format env` output someone installs by choice must not be deleted as gpuctl's."""
    text = NcclConfig(hostname="h").render_env()
    assert not any(line.startswith("# /etc/profile.d/nccl.sh written by gpuctl") for line in text.splitlines())
    tasks = yaml.safe_load((ROLES_PATH / "nccl_conf" / "tasks" / "deliver.yml").read_text())
    remove = next(t for t in tasks if t["name"].startswith("Remove the profile.d copy"))
    assert "grep -qs '^# /etc/profile.d/nccl.sh written by gpuctl' \"$1\" || exit 0" in \
        remove["ansible.builtin.command"]["argv"][2]


def test_deliver_makes_the_one_directory_nccl_may_write_into(tmp_path: Path) -> None:
    """validate lets NCCL_DEBUG_FILE and the dump files name only files in this directory
    (toolkit/tuning/variables.py LOG_DIR); the role makes it sticky and world-writable, as /tmp."""
    from toolkit.tuning.variables import LOG_DIR

    defaults = yaml.safe_load((ROLES_PATH / "nccl_conf" / "defaults" / "main.yml").read_text())
    assert defaults["nccl_conf_log_dir"] == LOG_DIR == "/var/log/gpuctl/nccl"
    home = tmp_path / "home"
    home.mkdir()
    rc, log = deliver(tmp_path, home)
    assert rc == 0, log
    made = tmp_path / "var" / "log" / "gpuctl" / "nccl"
    assert made.is_dir()
    assert oct(made.stat().st_mode & 0o7777) == "0o1777"
    assert oct(made.parent.stat().st_mode & 0o7777) == "0o755"  # /var/log/gpuctl: root's alone
