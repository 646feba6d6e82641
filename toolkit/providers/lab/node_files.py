"""Writing into a lab node's writable layer from the host, never through a link the node made.

A node's writable layer (the overlay's upper directory, or its copied root) belongs to the node:
root on the node can replace `/etc/hosts` or `/usr/local` with a link, and an absolute link there
read from the host points into the HOST's tree (`/etc/shadow`). gpuctl writes into that layer as
root (the node's identity, the replay's stand-ins), so every write here goes through directory
descriptors: each level opened with O_NOFOLLOW | O_DIRECTORY from the layer down, each file created
new (O_EXCL | O_NOFOLLOW) after whatever stood at its name was unlinked. A link the node planted is
refused (a directory level) or replaced as itself (a file), never followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from toolkit.errors import ProviderError
from toolkit.files import read_open

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@contextlib.contextmanager
def directory(layer: Path, relative: str, *, base: Path | None = None) -> Iterator[int]:
    """A descriptor of `layer/relative`, each missing level created (with the mode the same directory
    has in `base`, else 0755: an overlay takes a directory's mode from its upper layer, and a 0700
    /root/.ssh or a 0755 /root matter to sshd). A level that is not a real directory is refused."""
    fd = _open_dir(layer, layer)
    try:
        where = layer
        for part in Path(relative).parts:
            where = where / part
            try:
                os.mkdir(part, 0o700, dir_fd=fd)
                created = True
            except FileExistsError:
                created = False
            inner = _open_dir(part, where, dir_fd=fd)
            os.close(fd)
            fd = inner
            if created:
                os.fchmod(fd, _base_mode(base, where.relative_to(layer)))
        yield fd
    finally:
        os.close(fd)


def _open_dir(name: str | Path, where: Path, *, dir_fd: int | None = None) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ProviderError(f"{where} is not a directory (a link or a file made on the node?); gpuctl "
                                "does not write into a lab node through it",
                                hint="remove it on the node, or take the lab down and up again") from None
        raise ProviderError(f"{where} cannot be opened: {exc.strerror}") from None


def _base_mode(base: Path | None, relative: Path) -> int:
    if base is not None:
        with contextlib.suppress(OSError):
            info = os.lstat(base / relative)
            if stat.S_ISDIR(info.st_mode):
                return stat.S_IMODE(info.st_mode)
    return 0o755


def write(dir_fd: int, name: str, data: bytes | str, *, mode: int) -> None:
    """`name` in the directory, made new with exactly `mode`: what stood there (a link too) is unlinked."""
    remove(dir_fd, name)
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        os.fchmod(fd, mode)  # the umask never decides
        payload = data.encode() if isinstance(data, str) else data
        while payload:
            payload = payload[os.write(fd, payload):]
    finally:
        os.close(fd)


def symlink(dir_fd: int, name: str, target: str) -> None:
    """A link `name` -> `target` in the directory (a relative target, resolved on the node)."""
    remove(dir_fd, name)
    os.symlink(target, name, dir_fd=dir_fd)


def remove(dir_fd: int, name: str) -> None:
    """Remove `name` from the directory as itself: a link or file unlinked, a directory removed with
    its contents (shutil.rmtree never follows a link in it)."""
    try:
        info = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


def read(dir_fd: int, name: str, *, limit: int) -> bytes | None:
    """The bytes of the regular file `name` in the directory (at most `limit`), or None when none is there
    (a link, a FIFO or another kind of file counts as none: it is not one gpuctl wrote)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return read_open(fd, limit)[:limit]
    finally:
        os.close(fd)
