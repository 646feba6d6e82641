"""One gpuctl at a time per cluster: `up`, `configure` and `down` hold the cluster's lock.

The lock is an flock on `<gpuctl home>/locks/<cluster>.lock`, outside the cluster's directory
(which `down` removes), so the kernel releases it when its holder exits however it exits: a
crashed or killed gpuctl never leaves a lock that blocks `down`. The file names its holder (pid,
command, start time) so that the second caller can say who has it.

The lock is opened without following a link and must be a regular file of this user's
(`toolkit.files.open_private`): gpuctl often runs as root, and a link planted at the lock's path
would otherwise have it truncate whatever file the link names.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

from toolkit.errors import ProviderError
from toolkit.files import open_private
from toolkit.state import check_cluster_name, gpuctl_home, home_dir


def lock_path(cluster: str) -> Path:
    return gpuctl_home() / "locks" / f"{check_cluster_name(cluster, where='cluster lock')}.lock"


@contextlib.contextmanager
def cluster_lock(cluster: str, command: str) -> Iterator[None]:
    """Hold the cluster's lock for the duration of `command`; refuse at once if another holds it."""
    path = lock_path(cluster)
    home_dir("locks")
    fd = open_private(path, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ProviderError(
                f"cluster {cluster} is busy: {_holder(fd)}",
                hint="wait for it to finish, or stop that process; a gpuctl that died releases the lock by itself",
            ) from None
        holder = {"pid": os.getpid(), "command": command, "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        # The holder's name is a courtesy to the next caller: the flock is what locks, so a full disk
        # that refuses these bytes does not stop the command (its own writes will say so, cleanly).
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _holder(fd: int) -> str:
    try:
        holder = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
        return f"gpuctl {holder['command']} (pid {holder['pid']}) has held it since {holder['started']}"
    except (ValueError, KeyError, TypeError, OSError, RecursionError):  # the file is anyone's: any bytes
        return "another gpuctl holds its lock"
