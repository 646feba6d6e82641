"""Hints print commands the user can paste: the gpuctl they actually ran, with the same spec path.

`gpuctl` may be `.venv/bin/gpuctl`, `python -m toolkit`, or a `gpuctl` on PATH, and lab commands
run under sudo; a hint that says plain `gpuctl` where none is on PATH does not work when pasted.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path


def gpuctl_command() -> str:
    """The command line prefix that runs this gpuctl again, as the user invoked it."""
    argv0 = sys.argv[0] if sys.argv else ""
    if not argv0 or argv0.endswith(("__main__.py", "-c")) or Path(argv0).name not in ("gpuctl",):
        command = f"{shlex.quote(sys.executable)} -m toolkit"
    elif "/" not in argv0 or shutil.which("gpuctl") == str(Path(argv0).resolve()):
        command = "gpuctl"
    else:
        command = shlex.quote(argv0)
    # Run through sudo (the lab needs root): the pasted command needs it too.
    return f"sudo {command}" if os.geteuid() == 0 and os.environ.get("SUDO_USER") else command


def command(*words: str) -> str:
    """`gpuctl WORDS...` as this user would type it, each word quoted for the shell."""
    return " ".join([gpuctl_command(), *(shlex.quote(w) for w in words)])
