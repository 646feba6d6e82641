"""The minimum Pulumi CLI: preflight reads `pulumi version` (bounded) and refuses, with exit 7 and the
install command, a CLI the Automation API would let `up` but not `down` use.

Every CLI here is a fake shell script on PATH (tests/providers/pulumi_cli.py); there is no real one.
Where the minimum comes from: the installed Pulumi SDK refuses refresh and destroy with an inline
program below 3.181.0 (pulumi/automation/_stack.py `_check_inline_support`); the first test reads that
source so that an SDK upgrade that moves the floor fails here.
"""

from __future__ import annotations

import inspect
import re
import time
from pathlib import Path

import pytest

from tests.providers.pulumi_cli import write_fake_cli
from tests.providers.test_alicloud_driver import SPEC, plugin_installed
from toolkit import cli
from toolkit.errors import EXIT_MISSING_TOOL, MissingToolError
from toolkit.providers.alicloud.driver import AlicloudDriver
from toolkit.providers.pulumi import cli as version_check
from toolkit.providers.pulumi.failure import pulumi_failure
from toolkit.spec.loader import load_spec

pytestmark = pytest.mark.unit

UPGRADE = ("`curl -fsSL https://get.pulumi.com | sh -s -- --version 3.272.0` (the installed Pulumi SDK's version; "
           "any 3.x from 3.181.0 works)")
WHY = ("older CLIs cannot refresh or destroy a stack with the inline program gpuctl runs, so `down` could not undo "
       "an `up`")
TOO_OLD = f"is 3.180.0, older than the 3.181.0 gpuctl needs: {WHY}"


def test_the_minimum_is_the_sdks_own_floor_for_refresh_and_destroy_with_a_program() -> None:
    from pulumi.automation import Stack

    # The SDK in the venv (3.272.0) gates refresh/destroy (and their previews) on 3.181 when a program
    # is attached, which every gpuctl stack has; its general floor is far lower.
    source = inspect.getsource(Stack._check_inline_support)
    assert re.findall(r"VersionInfo\((\d+), (\d+)\)", source) == [("3", "181")]
    for method in (Stack.refresh, Stack.destroy, Stack.preview_refresh, Stack.preview_destroy):
        assert "self._check_inline_support()" in inspect.getsource(method)
    from pulumi.automation._minimum_version import _MINIMUM_VERSION

    assert str(_MINIMUM_VERSION) == "3.1.0"


@pytest.mark.parametrize(("script", "version"), [
    ("echo v3.181.0", "3.181.0"),
    ("echo 3.181.0", "3.181.0"),  # the SDK strips a leading v only when there is one
    ("echo v3.182.0-dev.0", "3.182.0-dev.0"),
    ("printf 'v3.272.0\\n\\n'", "3.272.0"),
])
def test_a_cli_from_the_minimum_on_is_accepted(tmp_path: Path, script: str, version: str) -> None:
    path = str(write_fake_cli(tmp_path, script))
    found = version_check.read_cli_version(path)
    assert (found.text, found.unreadable) == (version, None)
    assert version_check.cli_version_problem(found) is None
    assert AlicloudDriver().require_cli(lambda _name: path) == path


@pytest.mark.parametrize(("script", "message", "fix"), [
    ("echo v3.180.0", TOO_OLD, "upgrade it with "),
    # semver: a pre-release of 3.181.0 is older than 3.181.0, and the SDK compares the same way
    ("echo v3.181.0-alpha.1751", f"is 3.181.0-alpha.1751, older than the 3.181.0 gpuctl needs: {WHY}",
     "upgrade it with "),
    ("echo v3.99.1", f"is 3.99.1, older than the 3.181.0 gpuctl needs: {WHY}", "upgrade it with "),
    ("echo v4.0.0", "is 4.0.0, a major version the installed Pulumi SDK (3.272.0) does not drive",
     "install a 3.x with "),
    ("echo garbage", "does not say its version (it printed 'garbage')", "reinstall it with "),
    ("echo v3.181", "does not say its version (it printed 'v3.181')", "reinstall it with "),
    ("true", "does not say its version (it printed nothing)", "reinstall it with "),
    ("echo v3.272.0; exit 3", "does not say its version (`pulumi version` exited 3)", "reinstall it with "),
    ("yes v3.272.0", "does not say its version (it printed more than 4096 bytes)", "reinstall it with "),
    ("printf 'v3.272.0\\nwarning: a newer version is out\\n'",
     "does not say its version (it printed 'v3.272.0')", "reinstall it with "),
])
def test_a_cli_gpuctl_cannot_drive_is_exit_7_with_the_install_command(
    tmp_path: Path, script: str, message: str, fix: str
) -> None:
    path = str(write_fake_cli(tmp_path, script))
    with pytest.raises(MissingToolError) as caught:
        AlicloudDriver().require_cli(lambda _name: path)
    assert caught.value.exit_code == EXIT_MISSING_TOOL == 7
    assert caught.value.credentials is False  # a tool, not a credential: reap says which
    assert caught.value.message == f"the Pulumi CLI at {path} {message}"
    assert caught.value.hint == fix + UPGRADE


def test_a_cli_that_hangs_is_given_up_on_with_its_children(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The child keeps the output pipe open after its parent is killed: the whole group must go.
    path = str(write_fake_cli(tmp_path, "sleep 60 &\nsleep 60"))
    monkeypatch.setattr(version_check, "CLI_VERSION_TIMEOUT_S", 0.5)
    started = time.monotonic()
    with pytest.raises(MissingToolError) as caught:
        AlicloudDriver().require_cli(lambda _name: path)
    assert time.monotonic() - started < 5
    assert caught.value.message == (f"the Pulumi CLI at {path} does not say its version (`pulumi version` did not "
                                    "answer within 0.5 s)")


def test_a_cli_that_cannot_be_run_says_why(tmp_path: Path) -> None:
    path = write_fake_cli(tmp_path)
    path.chmod(0o644)
    with pytest.raises(MissingToolError) as caught:
        AlicloudDriver().require_cli(lambda _name: str(path))
    assert caught.value.message == f"the Pulumi CLI at {path} does not say its version (it cannot be run " \
                                   "(Permission denied))"


def test_missing_and_too_old_are_distinct_messages(tmp_path: Path) -> None:
    with pytest.raises(MissingToolError) as missing:
        AlicloudDriver().require_cli(lambda _name: None)
    assert missing.value.message == ("the Pulumi CLI is not installed (no `pulumi` on PATH); gpuctl drives Alibaba "
                                     "Cloud through it")
    assert (missing.value.hint or "").startswith("install it with `curl -fsSL https://get.pulumi.com | sh`, then ")
    old = str(write_fake_cli(tmp_path, "echo v3.180.0"))
    with pytest.raises(MissingToolError) as too_old:
        AlicloudDriver().require_cli(lambda _name: old)
    assert too_old.value.message == f"the Pulumi CLI at {old} {TOO_OLD}"


def test_preflight_lists_a_cli_too_old_with_the_other_gaps(tmp_path: Path) -> None:
    old = str(write_fake_cli(tmp_path / "bin", "echo v3.180.0"))
    env = {"PULUMI_HOME": str(tmp_path / "pulumi"), "ALICLOUD_ACCESS_KEY": "a", "ALICLOUD_SECRET_KEY": "b",
           "ALIBABA_CLOUD_ACCOUNT_TYPE": "Domestic"}
    with pytest.raises(MissingToolError) as caught:
        AlicloudDriver().preflight(load_spec(SPEC), "s3://team-state", env=env, which=lambda _name: old, home=tmp_path)
    lines = caught.value.message.splitlines()
    assert lines[0] == "t-erdma-spot: 3 thing(s) missing before gpuctl can reach Alibaba Cloud:"
    assert lines[1] == f"  - the Pulumi CLI at {old} {TOO_OLD}: upgrade it with {UPGRADE}"
    assert lines[2].startswith("  - the Pulumi provider plugin for Alibaba Cloud 4.0.0 is not in ")
    assert lines[3].startswith("  - the Pulumi state passphrase is not set")


def test_the_version_is_read_once_per_cli_file(tmp_path: Path) -> None:
    asked = tmp_path / "asked"
    path = write_fake_cli(tmp_path / "bin", f"echo x >> {asked}\necho v3.181.0")
    driver = AlicloudDriver()
    for _ in range(3):
        driver.require_cli(lambda _name: str(path))
    assert asked.read_text() == "x\n"
    # Replaced in place (an upgrade gone wrong): read again, and refused.
    write_fake_cli(tmp_path / "bin", f"echo x >> {asked}\necho v3.180.0")
    with pytest.raises(MissingToolError, match=r"is 3\.180\.0, older than"):
        driver.require_cli(lambda _name: str(path))
    assert asked.read_text() == "x\nx\n"


def test_the_sdks_own_version_refusal_is_exit_7_too() -> None:
    from pulumi.automation.errors import InvalidVersionError

    error = pulumi_failure(InvalidVersionError(
        "The installed version of the CLI does not support this operation. Please upgrade to at least version "
        "3.181.0."))
    assert isinstance(error, MissingToolError)
    assert error.message == ("the Pulumi CLI cannot do this for gpuctl: The installed version of the CLI does not "
                             "support this operation. Please upgrade to at least version 3.181.0.")
    assert error.hint == "upgrade it with `curl -fsSL https://get.pulumi.com | sh -s -- --version 3.272.0`"


@pytest.fixture
def old_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Pulumi CLI 3.180.0 first on PATH, everything else `up` and `down` need in place."""
    path = write_fake_cli(tmp_path / "bin", "echo v3.180.0")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    plugin_installed(tmp_path, monkeypatch)
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
    monkeypatch.setenv("ALICLOUD_ACCESS_KEY", "LTAI-test-access")
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", "test-secret-value")
    monkeypatch.delenv("GPUCTL_PULUMI_BACKEND", raising=False)
    return path


@pytest.mark.parametrize("argv", [
    ["up", str(SPEC), "--no-configure", "--yes"],
    ["down", str(SPEC)],
    ["status", str(SPEC)],
    ["outputs", str(SPEC)],
])
def test_every_command_that_drives_pulumi_refuses_a_cli_too_old(
    old_cli: Path, argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_stack(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a stack was opened with a CLI too old")

    monkeypatch.setattr("pulumi.automation.select_stack", no_stack)
    monkeypatch.setattr("pulumi.automation.create_or_select_stack", no_stack)
    assert cli.main(argv) == EXIT_MISSING_TOOL
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"the Pulumi CLI at {old_cli} is 3.180.0, older than the 3.181.0 gpuctl needs" in err
    assert "curl -fsSL https://get.pulumi.com | sh -s -- --version 3.272.0" in err
