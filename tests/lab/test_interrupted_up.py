"""`gpuctl up` killed half-way (SIGKILL, or Ctrl-C = SIGINT): `gpuctl down` still removes everything."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.lab.conftest import write_spec
from toolkit.providers.lab import network as lab_network
from toolkit.providers.lab import state as lab_state
from toolkit.providers.lab.driver import LocalLabDriver
from toolkit.spec.loader import load_spec

# Slow (a minute or more in all): `make test-slow` runs them.
pytestmark = [pytest.mark.lab, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


def _up_and_interrupt(spec_path: Path, name: str, sig: signal.Signals) -> str:
    """Start `gpuctl up`, send `sig` once it has created its first namespace; return the phase then."""
    tag = lab_state.lab_tag(name)
    process = subprocess.Popen(
        [sys.executable, "-m", "toolkit", "up", "--no-configure", str(spec_path)],
        cwd=REPO, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and process.poll() is None:
            if any(ns.startswith(tag) for ns in lab_network.existing_netns()):
                process.send_signal(sig)
                break
            time.sleep(0.005)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    state = lab_state.load(name)
    assert state is not None, "the state file must exist before anything is created"
    return state.phase


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["sigkill", "sigint"])
def test_down_cleans_up_after_an_interrupted_up(tmp_path: Path, replay_bundle: Path, sig: signal.Signals) -> None:
    name = f"cistop-{sig.name.lower()[3:]}"
    spec_path = write_spec(tmp_path, name, 6, replay_bundle)
    phase = _up_and_interrupt(spec_path, name, sig)
    assert phase == "creating"  # interrupted half-way, not after it finished
    state = lab_state.load(name)
    assert state is not None
    assert LocalLabDriver.leftovers(state), "something should have been created before the interrupt"

    LocalLabDriver().down(load_spec(spec_path), lambda _line: None)

    assert LocalLabDriver.leftovers(state) == []
    assert state.tag not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                                           check=True).stdout
    assert state.tag not in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True,
                                           check=True).stdout


@pytest.mark.parametrize("moment", ["creating", "site-playbook", "tuned"])
def test_ctrl_c_during_up_exits_130_and_says_how_to_resume_or_remove(
    tmp_path: Path, replay_bundle: Path, moment: str,
) -> None:
    """SIGINT at three moments of `gpuctl up`: exit 130, what exists, and commands that work as printed."""
    name = f"ciint-{moment}"[:20]
    spec_path = write_spec(tmp_path, name, 2, replay_bundle)
    tag = lab_state.lab_tag(name)
    triggers = {"site-playbook": " nvidia_driver: ", "tuned": " tuned: "}
    process = subprocess.Popen([sys.executable, "-m", "toolkit", "up", str(spec_path)], cwd=REPO,
                               env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    try:
        if moment == "creating":
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not any(ns.startswith(tag) for ns in lab_network.existing_netns()):
                time.sleep(0.005)
        else:
            for line in process.stdout:
                if triggers[moment] in line:
                    break
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert f"interrupted: {name} was not finished" in stderr
    commands = {line.split(":", 1)[0].strip(): line.split(":  ", 1)[1].strip()
                for line in stderr.splitlines() if line.startswith("  re")}
    assert set(commands) == {"resume (picks up where it stopped)", "remove everything it made"}
    assert commands["remove everything it made"].endswith(f"-m toolkit down {spec_path}")
    remove = subprocess.run(commands["remove everything it made"], shell=True, cwd=REPO, capture_output=True,
                            text=True, timeout=300, check=False)
    assert remove.returncode == 0, remove.stdout + remove.stderr
    assert f"{name}: removed" in remove.stdout
    assert not any(ns.startswith(tag) for ns in lab_network.existing_netns())
    assert not any(link.startswith(tag) for link in lab_network.existing_links())
