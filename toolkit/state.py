"""Where gpuctl keeps per-cluster state: `$GPUCTL_HOME` (default `~/.gpuctl`)/clusters/<name>/.

State is written before anything is created, so `down` can clean up after a crash of `up`.
"""

from __future__ import annotations

import os
from pathlib import Path


def gpuctl_home() -> Path:
    return Path(os.environ.get("GPUCTL_HOME", Path.home() / ".gpuctl")).expanduser()


def cluster_dir(name: str, *, create: bool = False) -> Path:
    path = gpuctl_home() / "clusters" / name
    if create:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path
