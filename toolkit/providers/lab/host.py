"""What the lab needs from the host machine: root, a few tools, and a way to run commands.

Tools that are missing are installed with apt-get on Debian/Ubuntu hosts (the lab is meant to work
on a fresh machine); elsewhere the error names exactly what to install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

from toolkit import hints
from toolkit.errors import MissingToolError, ProviderError

# command -> Debian package that provides it
HOST_TOOLS: dict[str, str] = {
    "debootstrap": "debootstrap",
    "ip": "iproute2",
    "ssh": "openssh-client",
    "ssh-keygen": "openssh-client",
    "unshare": "util-linux",
    "chroot": "coreutils",
    "mount": "mount",
}


def require_root() -> None:
    if os.geteuid() != 0:
        raise MissingToolError(
            "the local lab needs root: it creates network namespaces, bridges and mounts",
            hint=f"run it as root: `{hints.as_root()}`",
        )


def missing_tools() -> list[str]:
    return [tool for tool in HOST_TOOLS if shutil.which(tool) is None]


def ensure_tools() -> None:
    """Install what is missing, or say exactly what is missing and how to get it."""
    missing = missing_tools()
    if not missing:
        return
    packages = sorted({HOST_TOOLS[tool] for tool in missing})
    if shutil.which("apt-get") is None:
        raise MissingToolError(
            f"the local lab needs {', '.join(missing)} and this host has no apt-get to install them",
            hint=f"install the packages that provide them ({', '.join(packages)}) and run again",
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *packages]):
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise MissingToolError(
                f"could not install {', '.join(packages)} with `{' '.join(argv)}`: "
                f"{done.stderr.strip()[-400:]}",
                hint=f"install {', '.join(packages)} by hand and run again",
            )
    still = missing_tools()
    if still:
        raise MissingToolError(f"still missing after apt-get install: {', '.join(still)}")


def sh(argv: Sequence[str], *, check: bool = True, input_text: str | None = None) -> str:
    """Run a host command; on failure raise ProviderError quoting the command and its stderr."""
    done = subprocess.run(list(argv), capture_output=True, text=True, input=input_text, check=False)
    if check and done.returncode != 0:
        raise ProviderError(f"`{' '.join(argv)}` failed ({done.returncode}): {done.stderr.strip()[-600:]}")
    return done.stdout
