"""The Pulumi CLI: is there one, and is it one gpuctl can drive (`MIN_CLI`)?

No Pulumi CLI: a MissingToolError (exit 7) with the install commands of the CLI and of the cloud's
provider plugins; one older than `MIN_CLI` (3.181.0, which refresh and destroy with an inline program
need), of another major version, or that does not say its version (`pulumi version`, bounded): exit 7
too, with the command that installs the SDK's version.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from importlib import metadata

from toolkit.errors import MissingToolError
from toolkit.providers.pulumi.plugins import ProviderPlugin
from toolkit.secrets import child_env

# All the Pulumi CLI gets from gpuctl on top of the environment it inherits.
WORKSPACE_ENV = {"PULUMI_SKIP_UPDATE_CHECK": "true"}
INSTALL_CLI = "curl -fsSL https://get.pulumi.com | sh"
# The oldest Pulumi CLI gpuctl can drive. Every stack gpuctl opens carries an inline program, and the
# Automation API (pulumi/automation/_stack.py `_check_inline_support`, in the Python SDK since 3.183.0,
# pulumi/pulumi#19912; read in 3.272.0) refuses `refresh`, `destroy` and their previews with an inline
# program on a CLI older than 3.181.0, the release whose `--client` flag on refresh and destroy makes
# them possible (pulumi/pulumi#19916, CHANGELOG 3.181.0). `up` works on older CLIs (the SDK's own
# floor, automation/_minimum_version.py, is 3.1.0): without this check an `up` would succeed that
# `down` cannot undo. Other version gates of the SDK (environments 3.95/3.99, whoami 3.58, install
# 3.91/3.130) are on calls gpuctl does not make.
MIN_CLI = (3, 181, 0)
# The major version the Automation SDK drives: it refuses a CLI of a higher one (automation/_cmd.py,
# "Major version mismatch").
CLI_MAJOR = 3
# `pulumi version` answers in well under a second; a CLI that does not within this is broken.
CLI_VERSION_TIMEOUT_S = 15.0
CLI_VERSION_MAX_BYTES = 4096  # a version line is ~20 bytes: more than this is not one
# A version as the SDK parses it (semver 2.0, after `v` is stripped: automation/_cmd.py).
_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
)


@dataclass(frozen=True)
class CliVersion:
    """What `pulumi version` said: the version, or why there is none."""

    path: str
    version: tuple[int, int, int] | None = None
    prerelease: str | None = None  # `alpha.1` of 3.182.0-alpha.1
    unreadable: str | None = None  # why no version: what it printed, its exit status, a timeout

    @property
    def text(self) -> str:
        if self.version is None:
            return "unknown"
        return ".".join(map(str, self.version)) + (f"-{self.prerelease}" if self.prerelease else "")

    def too_old(self) -> bool:
        """Below MIN_CLI as semver orders it (and the SDK compares): 3.181.0-alpha is older than 3.181.0."""
        if self.version is None:
            return False
        return self.version < MIN_CLI or (self.version == MIN_CLI and self.prerelease is not None)


def parse_cli_version(path: str, output: str) -> CliVersion:
    """`pulumi version`'s output -> a CliVersion; anything but one semver line is unreadable."""
    text = output.strip()
    match = _SEMVER.fullmatch(text.removeprefix("v"))
    if match is None:
        shown = text.splitlines()[0][:60] if text else ""
        return CliVersion(path, unreadable=f"it printed {shown!r}" if shown else "it printed nothing")
    major, minor, patch = (int(part) for part in match.group(1, 2, 3))
    return CliVersion(path, version=(major, minor, patch), prerelease=match.group(4))


def read_cli_version(path: str, *, timeout: float | None = None) -> CliVersion:
    """Run `<path> version`, bounded in time and output: a CLI that hangs, spews or fails is reported,
    never waited on. Its whole process group goes on a timeout, so a child holding the pipe cannot
    keep gpuctl waiting either."""
    timeout = CLI_VERSION_TIMEOUT_S if timeout is None else timeout
    try:
        proc = subprocess.Popen(
            [path, "version"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=child_env(WORKSPACE_ENV), start_new_session=True,
        )
    except OSError as exc:
        return CliVersion(path, unreadable=f"it cannot be run ({exc.strerror or type(exc).__name__})")
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    output = b""
    code: int | None = None
    try:
        while len(output) <= CLI_VERSION_MAX_BYTES:
            left = deadline - time.monotonic()
            if left <= 0:
                return CliVersion(path, unreadable=f"`pulumi version` did not answer within {timeout:g} s")
            ready, _, _ = select.select([proc.stdout], [], [], left)
            if ready:
                chunk = os.read(proc.stdout.fileno(), 1024)
                if not chunk:
                    break
                output += chunk
        else:
            return CliVersion(path, unreadable=f"it printed more than {CLI_VERSION_MAX_BYTES} bytes")
        try:
            code = proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            return CliVersion(path, unreadable=f"`pulumi version` did not exit within {timeout:g} s")
    finally:
        if code is None:  # not reaped yet, so its pid still names its group: end all of it
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.stdout.close()
        proc.wait()
    if code != 0:
        return CliVersion(path, unreadable=f"`pulumi version` exited {code}")
    return parse_cli_version(path, output.decode("utf-8", "replace"))


# Versions already read, by the CLI file's identity: `up` opens several stacks, reap downs many
# clusters, and each asks; a CLI replaced in place (upgraded) has another identity and is read again.
_READ: dict[tuple[str, int, int, int], CliVersion] = {}


def cli_version(path: str) -> CliVersion:
    try:
        info = os.stat(path)
    except OSError:
        return read_cli_version(path)
    key = (path, info.st_ino, info.st_size, info.st_mtime_ns)
    if key not in _READ:
        found = read_cli_version(path)
        if found.version is None:
            return found  # asked again next time: a timeout may pass
        _READ[key] = found
    return _READ[key]


def sdk_version() -> str | None:
    """The installed Pulumi Python SDK's version: the CLI version it installs itself by default
    (automation/_cmd.py `PulumiCommand.install`), so the one to recommend."""
    try:
        return metadata.version("pulumi")
    except metadata.PackageNotFoundError:
        return None


def install_cli_version_command() -> str:
    version = sdk_version() or ".".join(map(str, MIN_CLI))
    return f"{INSTALL_CLI} -s -- --version {version}"


def cli_version_problem(found: CliVersion) -> tuple[str, str] | None:
    """(what is wrong, how to fix it) of a CLI gpuctl cannot drive, or None."""
    minimum = ".".join(map(str, MIN_CLI))
    fix = f"`{install_cli_version_command()}` (the installed Pulumi SDK's version; any 3.x from {minimum} works)"
    if found.version is None:
        return (f"the Pulumi CLI at {found.path} does not say its version ({found.unreadable})",
                f"reinstall it with {fix}")
    if found.too_old():
        return (f"the Pulumi CLI at {found.path} is {found.text}, older than the {minimum} gpuctl needs: older CLIs "
                "cannot refresh or destroy a stack with the inline program gpuctl runs, so `down` could not undo an "
                "`up`", f"upgrade it with {fix}")
    if found.version[0] != CLI_MAJOR:
        return (f"the Pulumi CLI at {found.path} is {found.text}, a major version the installed Pulumi SDK "
                f"({sdk_version() or CLI_MAJOR}) does not drive", f"install a {CLI_MAJOR}.x with {fix}")
    return None


def missing_cli_error(cloud: str, plugins: tuple[ProviderPlugin, ...]) -> MissingToolError:
    then = ", then the provider with " + " and ".join(f"`{p.install_command()}`" for p in plugins) if plugins else ""
    return MissingToolError(
        f"the Pulumi CLI is not installed (no `pulumi` on PATH); gpuctl drives {cloud} through it",
        hint=f"install it with `{INSTALL_CLI}`{then}",
    )

