"""Reading a capture bundle (`node_pools[].capture`) from the host, so that nothing can redirect it.

The lab runs as root and copies a bundle's files into every node's root, where anything on the node
reads them. So a bundle is read only from inside the directory the spec names:

- the directory itself is opened with O_NOFOLLOW | O_DIRECTORY (a link there is refused), and the
  real path of what was opened must pass the spec's capture rules (`capture_path_problem`: no
  system tree, no home, no folder of keys), must not be any user's home, the gpuctl home, nor a
  cluster's ssh folder there (its private key);
- its entries are looked at relative to that open directory without following links: regular files
  only (a link, a sub-directory, a FIFO, a device or a socket is refused, by name), each with one
  name only (a hard link's content lives outside the bundle too), at most MAX_FILES of them,
  MAX_FILE_BYTES each and MAX_TOTAL_BYTES in all;
- each file is opened relative to the directory (O_NOFOLLOW | O_NONBLOCK, so no FIFO can block)
  and checked again once open: a file swapped for a link or a device in between is refused.

Every refusal is a FileError (exit 2) whose message starts with the path. `validate` reports the
same refusals (`problems`) before anything is created.
"""

from __future__ import annotations

import errno
import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path

from toolkit.files import FileError, kind_of, read_open, reason, size_text
from toolkit.paths import Paths
from toolkit.spec.models import capture_path_problem
from toolkit.state import gpuctl_home

# The bundles gpuctl ships hold 1-5 files of a few KiB; a host's full set of captures (nvidia-smi -q
# of 8 GPUs, ibv_devinfo -v of 12 ports, NCCL topology XML) stays well under 1 MiB a file.
MAX_FILES = 256
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_TOTAL_BYTES = 32 * 1024 * 1024
# Written by the replay beside the copied captures; a capture of that name would be overwritten.
RESERVED_NAMES = frozenset({"manifest.json"})
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
SSH_FOLDER = Paths(Path("cluster")).ssh.name  # clusters/<name>/ssh: the cluster's key pair
HINT = "node_pools[].capture names a folder of saved command outputs, such as examples/captures/h100-roce-node"


@dataclass(frozen=True)
class CaptureFile:
    name: str  # its name in the bundle (one path component)
    data: bytes
    mode: int  # the source's permission bits: the copy never gets more
    source: str  # where it was read, for the stand-in's note


def problems(bundle: Path) -> list[str]:
    """Why the lab would refuse to read `bundle` (empty when it reads it), without reading the files."""
    try:
        fd = _open_bundle(bundle)
        try:
            _entries(fd, bundle)
        finally:
            os.close(fd)
    except FileError as refused:
        return [refused.message]
    return []


def read_bundle(bundle: Path) -> list[CaptureFile]:
    """The bundle's files, by name; FileError naming the path for anything the lab does not read."""
    fd = _open_bundle(bundle)
    try:
        return [_read(fd, bundle, name) for name in _entries(fd, bundle)]
    finally:
        os.close(fd)


def _open_bundle(bundle: Path) -> int:
    problem = capture_path_problem(str(bundle))
    if problem is not None:
        raise FileError(bundle, problem, hint=HINT)
    try:
        fd = os.open(bundle, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FileError(bundle, "does not exist", hint=HINT) from None
    except ValueError:  # a NUL byte (the spec refuses control characters; a caller may not have)
        raise FileError(bundle, "is not a path (it holds a NUL byte)", hint=HINT) from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise FileError(bundle, f"is {_kind(bundle)}, not a directory of capture files (gpuctl does not "
                            "follow a link to a bundle: name the directory itself)", hint=HINT) from None
        raise FileError(bundle, f"cannot be read ({reason(exc)})", hint=HINT) from None
    try:
        # What was opened, with every link on the way resolved: the rules hold for the real place too.
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # no /proc: the path resolved again, which names the same place unless raced
            real = os.path.realpath(bundle)
        problem = _real_path_problem(real)
    except BaseException:
        os.close(fd)
        raise
    if problem is not None:
        os.close(fd)
        raise FileError(bundle, problem if real == str(bundle) else f"is {real}: {problem}", hint=HINT)
    return fd


def _real_path_problem(real: str) -> str | None:
    problem = capture_path_problem(real)
    if problem is not None:
        return problem
    if real in {user.pw_dir for user in pwd.getpwall()}:
        return f"{real} is a user's home, whose files would be copied into every lab node"
    home = gpuctl_home()
    inside = Path(real).relative_to(home).parts if Path(real).is_relative_to(home) else None
    # A bundle gathered from a node (clusters/<name>/bundles/<node>) may be replayed; the home itself
    # and a cluster's ssh folder (its private key) may not.
    if inside is not None and (not inside or SSH_FOLDER in inside):
        return f"{real} is the gpuctl home or a cluster's ssh folder, which holds the clusters' keys"
    return None


def _kind(path: Path) -> str:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "not a directory"
    return "a regular file" if stat.S_ISREG(mode) else kind_of(mode)


def _entries(fd: int, bundle: Path) -> list[str]:
    """The names of the bundle's files, each checked without following a link; sorted."""
    try:
        return _checked_entries(fd, bundle)
    except OSError as exc:  # an entry that went away while listed, an I/O error
        raise FileError(bundle, f"cannot be listed ({reason(exc)})", hint=HINT) from None


def _checked_entries(fd: int, bundle: Path) -> list[str]:
    names: list[str] = []
    total = 0
    with os.scandir(fd) as listing:
        for entry in listing:
            where = bundle / entry.name
            if len(names) >= MAX_FILES:
                raise FileError(bundle, f"holds more than {MAX_FILES} files; a capture bundle is one host's "
                                "saved outputs", hint=HINT)
            if not entry.name.isprintable() or entry.name in RESERVED_NAMES:
                raise FileError(where, "is a name the lab does not copy into a node (a control character, "
                                f"or one of {', '.join(sorted(RESERVED_NAMES))}, which the replay writes); rename it")
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode):
                raise FileError(where, f"is {kind_of(info.st_mode)}; a capture bundle holds regular files only "
                                "(the lab reads no link, sub-directory, FIFO or device in it)", hint=HINT)
            if info.st_nlink > 1:
                raise FileError(where, f"is a hard link ({info.st_nlink} names): its content lives outside the "
                                "bundle too; copy the file into the bundle instead", hint=HINT)
            if info.st_size > MAX_FILE_BYTES:
                raise FileError(where, f"{size_text(info.st_size)} is far too large for a capture "
                                f"(at most {size_text(MAX_FILE_BYTES)})", hint=HINT)
            total += info.st_size
            if total > MAX_TOTAL_BYTES:
                raise FileError(bundle, f"holds more than {size_text(MAX_TOTAL_BYTES)} of captures, far more than "
                                "one host's outputs", hint=HINT)
            names.append(entry.name)
    return sorted(names)


def _read(fd: int, bundle: Path, name: str) -> CaptureFile:
    where = bundle / name
    try:
        handle = os.open(name, _READ_FLAGS, dir_fd=fd)
    except OSError as exc:
        raise FileError(where, f"cannot be read ({reason(exc)})", hint=HINT) from None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            raise FileError(where, f"changed while it was read (now {kind_of(info.st_mode)}, "
                            f"{size_text(info.st_size)}); a capture bundle holds regular files only", hint=HINT)
        data = read_open(handle, MAX_FILE_BYTES)  # a file that grows while it is read is still cut at the bound
    except OSError as exc:
        raise FileError(where, f"cannot be read ({reason(exc)})", hint=HINT) from None
    finally:
        os.close(handle)
    if len(data) > MAX_FILE_BYTES:
        raise FileError(where, f"grew past {size_text(MAX_FILE_BYTES)} while it was read", hint=HINT)
    return CaptureFile(name=name, data=data, mode=stat.S_IMODE(info.st_mode), source=str(where))
