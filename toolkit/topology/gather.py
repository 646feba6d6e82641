"""Where the gather script lives, and running it on this machine.

`gather.sh` is the one thing that touches a node; Ansible copies it to every node and runs it
there. `run_gather_locally` runs it here, for `gpuctl gather` and for tests.
"""

from __future__ import annotations

import subprocess
from importlib import resources
from pathlib import Path

from toolkit.errors import MissingToolError, ProviderError


def gather_script() -> Path:
    """The path of gather.sh inside the installed package."""
    path = Path(str(resources.files("toolkit.topology").joinpath("gather.sh")))
    if not path.is_file():
        raise MissingToolError(f"gather.sh not found at {path}: the package is incomplete",
                               hint="reinstall gpuctl (pip install --force-reinstall gpuctl)")
    return path


def run_gather_locally(dest: Path, *, timeout_s: float = 600) -> Path:
    """Run gather.sh with /bin/sh into `dest` (created if need be); return `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        result = subprocess.run(
            ["/bin/sh", str(gather_script()), str(dest)],
            capture_output=True, text=True, timeout=timeout_s, check=False,
        )
    except FileNotFoundError:
        raise MissingToolError("/bin/sh not found: gather needs a POSIX shell") from None
    except subprocess.TimeoutExpired:
        raise ProviderError(f"gather.sh did not finish within {timeout_s:.0f} s") from None
    if result.returncode != 0:
        raise ProviderError(f"gather.sh exited {result.returncode}: {result.stderr.strip()}")
    return dest
