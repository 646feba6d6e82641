"""Progress: timestamped plain lines off a terminal, stepped lines and a spinner on one, NO_COLOR,
--quiet, --json (progress on stderr), redaction, and the lab's debootstrap phases."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import FakeDriver
from toolkit import progress
from toolkit.cli import main
from toolkit.providers.lab.rootfs import run_debootstrap

REPO = Path(__file__).resolve().parents[2]
LAB = "examples/local-lab.yaml"
STAMP = re.compile(r"^\d\d:\d\d:\d\d ")
# SGR sequences that set a colour (foreground, background, 256-colour and truecolour forms).
COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-9]|4[0-9]|9[0-7]|10[0-7])(?:;[0-9;]*)?m")


@pytest.fixture(autouse=True)
def reset() -> Iterator[None]:
    yield
    progress.finish()


def test_off_a_terminal_each_line_has_a_timestamp(capsys: pytest.CaptureFixture[str]) -> None:
    progress.setup()  # capsys' stdout is not a terminal
    progress.progress("lab-node-0: namespace gl-1234-n1")
    progress.progress("two\nlines")
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3
    assert all(STAMP.match(line) for line in out), out
    assert out[0].endswith(" lab-node-0: namespace gl-1234-n1")


def test_credentials_are_redacted(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", "s3cr3t-value-123")
    progress.setup()
    progress.progress("pulumi said s3cr3t-value-123")
    out = capsys.readouterr().out
    assert "s3cr3t" not in out
    assert "<ALICLOUD_SECRET_KEY>" in out


def test_quiet_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    progress.setup(quiet=True)
    progress.progress("a step")
    assert capsys.readouterr() == ("", "")


def test_json_sends_progress_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    progress.setup(to_stderr=True)
    progress.progress("a step")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.endswith(" a step\n")


def test_finish_goes_back_to_plain_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    progress.setup(quiet=True, to_stderr=True)
    progress.finish()
    progress.progress("after")
    assert capsys.readouterr().out.endswith(" after\n")


def test_elapsed_is_short_and_readable() -> None:
    assert [progress.format_elapsed(s) for s in (0.04, 59.9, 65, 3725)] == ["0.0s", "59.9s", "1m05s", "1h02m"]


# ------------------------------------------------------------------------------------ the CLI


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeDriver:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path))
    monkeypatch.chdir(REPO)
    driver = FakeDriver()
    monkeypatch.setattr("toolkit.commands.down.driver_for", lambda spec, args: driver)
    return driver


def test_down_shows_timestamped_progress_then_its_summary(fake: FakeDriver,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["down", LAB]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert STAMP.match(lines[0])
    assert lines[0].endswith(" removing nothing at all")
    assert lines[-1] == "lab: removed, and nothing named for it is left"


@pytest.mark.parametrize("argv", [["--quiet", "down", LAB], ["down", "-q", LAB]])
def test_quiet_keeps_only_the_summary(fake: FakeDriver, capsys: pytest.CaptureFixture[str],
                                      argv: list[str]) -> None:
    assert main(argv) == 0
    assert capsys.readouterr() == ("lab: removed, and nothing named for it is left\n", "")


def test_json_keeps_stdout_for_the_document(fake: FakeDriver, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["down", "--json", LAB]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["removed"] is True
    assert "removing nothing at all" in captured.err


# ------------------------------------------------------------------------------------ a terminal

STEPS = """
import time
from toolkit import progress
progress.setup()
progress.progress("first step")
time.sleep(0.6)
progress.progress("second step")
time.sleep(0.3)
print("a summary line")
progress.finish()
"""


def run_in_terminal(code: str, env: dict[str, str]) -> str:
    """Run Python `code` with stdout and stderr on a pseudo-terminal; return what it drew."""
    main_fd, child_fd = os.openpty()
    process = subprocess.Popen([sys.executable, "-c", code], stdout=child_fd, stderr=child_fd, cwd=REPO, env=env)
    os.close(child_fd)
    chunks = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main_fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(main_fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    process.wait(timeout=10)
    os.close(main_fd)
    return b"".join(chunks).decode(errors="replace")


def terminal_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "CI", "TERM")}
    env.update({"TERM": "xterm-256color", "COLUMNS": "100", **extra})
    return env


def test_on_a_terminal_each_step_shows_elapsed_time_and_a_spinner_runs() -> None:
    drawn = run_in_terminal(STEPS, terminal_env())
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn)
    assert re.search(r"0\.\ds first step", plain), plain
    assert re.search(r"0\.[5-9]s second step|1\.\ds second step", plain), plain
    assert "a summary line" in plain
    assert re.search(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] first step \(0\.\ds\)", plain), plain  # the spinner with the step's own time
    assert not STAMP.search(plain)  # the terminal form has no wall-clock stamp
    assert COLOUR.search(drawn), "expected colour on a terminal without NO_COLOR"


def test_no_color_turns_every_colour_code_off() -> None:
    drawn = run_in_terminal(STEPS, terminal_env(NO_COLOR="1"))
    assert "first step" in drawn
    assert "second step" in drawn
    assert not COLOUR.search(drawn), repr(drawn[:400])


# ------------------------------------------------------------------------------------ debootstrap

FAKE_DEBOOTSTRAP = """#!/bin/sh
echo "I: Retrieving InRelease"
echo "I: Checking Release signature"
echo "I: Retrieving adduser 3.134"
echo "I: Validating adduser 3.134"
echo "I: Retrieving apt 2.6.1"
echo "I: Validating apt 2.6.1"
sleep 0.6
echo "I: Extracting adduser..."
echo "I: Installing core packages..."
echo "I: Unpacking required packages..."
echo "I: Unpacking adduser..."
echo "I: Configuring required packages..."
echo "I: Configuring adduser..."
echo "I: Base system installed successfully."
"""


def test_debootstrap_reports_each_phase_and_that_it_is_still_going(tmp_path: Path) -> None:
    script = tmp_path / "debootstrap"
    script.write_text(FAKE_DEBOOTSTRAP)
    script.chmod(0o755)
    lines: list[str] = []
    returncode, _ = run_debootstrap([str(script)], lines.append, every=0.2)
    assert returncode == 0
    phases = [line.split(" (")[0] for line in lines if line.startswith("debootstrap: ")]
    assert phases == ["debootstrap: downloading", "debootstrap: extracting", "debootstrap: installing core packages",
                      "debootstrap: unpacking", "debootstrap: configuring", "debootstrap: base system installed"]
    still = [line for line in lines if line.startswith("still building the base root, ")]
    assert still, lines
    assert "(downloading, 3 so far)" in still[0]


def test_a_failed_debootstrap_returns_its_last_lines(tmp_path: Path) -> None:
    script = tmp_path / "debootstrap"
    script.write_text("#!/bin/sh\necho 'I: Retrieving InRelease'\necho 'E: Failed getting release file' >&2\nexit 1\n")
    script.chmod(0o755)
    lines: list[str] = []
    returncode, output = run_debootstrap([str(script)], lines.append, every=5)
    assert returncode == 1
    assert output.endswith("E: Failed getting release file")
    assert lines == ["debootstrap: downloading (0 s)"]
