"""Reading and writing files without trusting what stands at the path.

gpuctl runs as root for the lab and holds cloud credentials, so a path must never lead it somewhere
it did not mean to go. Two rules, each implemented here once:

- **Reading is bounded.** `read_bounded` opens non-blocking and checks the opened descriptor: a
  regular file only (a FIFO, a device, a socket or a directory is refused before any read can block
  or run forever), at most `limit` bytes, and with `follow=False` never through a symbolic link.
  `gunzip_bounded` inflates at most `limit` bytes, so a small gzip bomb stays small.
- **Writing in the gpuctl home never follows a link.** `private_dir` creates every directory from the
  home down with mode 0700, and refuses one that already stands there as a link, a file, or a
  directory of another user. `write_atomic` writes a new temporary file (O_EXCL | O_NOFOLLOW) and
  renames it over the target: a rename replaces a link, it never writes through it.
  `open_private` opens a file in place (the lock, an appended known_hosts) with O_NOFOLLOW and
  refuses anything but a regular file this user owns.

Every refusal is a `FileError` (exit 2) whose message starts with the path and says what stands
there; an `OSError` on the way (no space left, read-only, permission) is one too, never a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import zlib
from pathlib import Path

from toolkit.errors import UsageError

# What stands at a path, in the words an error uses.
FILE_KINDS = (
    (stat.S_ISREG, "a regular file"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
MIB = 1024 * 1024


class FileError(UsageError):
    """A path gpuctl will not read or write, or an OS error on the way; `reason` without the path."""

    def __init__(self, path: str | Path, reason: str, *, hint: str | None = None) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}", hint=hint)


def kind_of(mode: int) -> str:
    return next((name for test, name in FILE_KINDS if test(mode)), "not a regular file")


def reason(exc: OSError | ValueError) -> str:
    """An OS error in words (`No space left on device`); a ValueError is a NUL byte in a path."""
    if isinstance(exc, OSError):
        if exc.errno == errno.ELOOP:
            return "a symbolic link: gpuctl does not follow links here"
        return exc.strerror or type(exc).__name__
    return str(exc)


def size_text(count: int) -> str:
    """`512 bytes`, `3.5 MiB`, `5.0 GiB`."""
    if count >= 1024 * MIB:
        return f"{count / (1024 * MIB):.1f} GiB"
    return f"{count / MIB:.1f} MiB" if count >= MIB else f"{count} bytes"


def expand_user(path: str | Path, *, where: str) -> Path:
    """`path` with a leading `~` or `~user` expanded; FileError naming `where` when no such home exists
    (pathlib raises RuntimeError there, os.path leaves the `~` in place: neither is an answer)."""
    text = os.path.expanduser(str(path))
    if text.startswith("~"):
        user = text.split("/", 1)[0]
        raise FileError(path, f"{where}: {user} names no user with a home directory on this machine",
                        hint="write the path out in full")
    return Path(text)


def user_home() -> Path:
    """This user's home; FileError when HOME is unset and the account has none."""
    return expand_user("~", where="the home directory (HOME)")


# ------------------------------------------------------------------------------------------ reading


def read_bounded(path: str | Path, *, limit: int, what: str, follow: bool = True) -> bytes:
    """The bytes of the regular file at `path`; FileError when it is not one, or holds more than `limit`.

    `what` names the file in the refusal ("NCCL log", "price cache"). `follow=False` for files in the
    gpuctl home: a link there is refused, not read.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        # Looked at before it is opened (a device is never opened), and again once open (a swap between is caught).
        _require_regular(os.stat(path) if follow else os.lstat(path), path, limit=limit, what=what, follow=follow)
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise FileError(path, "no such file") from None
    except NotADirectoryError:
        raise FileError(path, "no such file (a part of the path is not a directory)") from None
    except (OSError, ValueError) as exc:
        raise FileError(path, f"cannot be read ({reason(exc)})") from None
    try:
        _require_regular(os.fstat(fd), path, limit=limit, what=what, follow=follow)
        data = read_open(fd, limit)
    except OSError as exc:
        raise FileError(path, f"cannot be read ({reason(exc)})") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise FileError(path, f"more than {size_text(limit)} is far too large for a {what}")
    return data


def read_open(fd: int, limit: int) -> bytes:
    """At most `limit` + 1 bytes from the open descriptor `fd`: one more than the bound, so a file that
    grew while it was read is seen to be over it (the caller refuses it); OSError as the OS raises it."""
    chunks: list[bytes] = []
    remaining = limit + 1
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _require_regular(info: os.stat_result, path: str | Path, *, limit: int, what: str, follow: bool) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise FileError(path, "is a symbolic link; gpuctl does not follow links here")
    if not stat.S_ISREG(info.st_mode):
        fix = f"; give the path of a {what}" if follow else f" (gpuctl keeps its {what} in a regular file)"
        raise FileError(path, f"is {kind_of(info.st_mode)}, not a regular file{fix}")
    if info.st_size > limit:
        raise FileError(path, f"{size_text(info.st_size)} is far too large for a {what} (at most {size_text(limit)})")


def log_tail(path: str | Path, *, size: int = 600) -> str:
    """The last `size` bytes of a log gpuctl's own child wrote (sshd's, the object store's), as text,
    for an error message; "" when it cannot be read. A link or anything but a regular file is not read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (OSError, ValueError):
        return ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ""
        return os.pread(fd, size, max(0, info.st_size - size)).decode(errors="replace").strip()
    except OSError:
        return ""
    finally:
        os.close(fd)


def read_text_bounded(path: str | Path, *, limit: int, what: str, follow: bool = True) -> str:
    """`read_bounded` as UTF-8 text; a file that is not UTF-8 is refused with the offset of the first bad byte."""
    data = read_bounded(path, limit=limit, what=what, follow=follow)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileError(path, f"is not UTF-8 text (byte {exc.start}); a {what} is UTF-8") from None


def gunzip_bounded(data: bytes, *, limit: int, source: str | Path, what: str) -> bytes:
    """`data` inflated (gzip), at most `limit` bytes of output; FileError past it or when damaged."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise FileError(source, f"is not a readable gzip file ({exc})") from None
    if len(out) > limit:
        raise FileError(source, f"inflates to more than {size_text(limit)}, more than gpuctl reads for a {what}")
    return out


# ------------------------------------------------------------------------------------------ writing


def private_dir(path: Path, *, root: Path) -> Path:
    """`path` (inside `root`) as a directory of this user's, each level below `root` created 0700.

    `root` (the gpuctl home) is taken as the operator set it, links included; below it a level that
    already exists must be a real directory owned by this user: a link or another user's directory
    there is refused, so nothing written below can be redirected.
    """
    try:
        relative = path.relative_to(root)
    except ValueError:
        raise FileError(path, f"is outside {root}, where gpuctl keeps its files") from None
    _make_root(root)
    current = root
    for part in relative.parts:
        current = current / part
        try:
            os.mkdir(current, 0o700)
            continue
        except FileExistsError:
            pass
        except (OSError, ValueError) as exc:
            raise FileError(current, f"cannot be created ({reason(exc)})") from None
        try:
            info = os.lstat(current)
        except OSError as exc:
            raise FileError(current, f"cannot be read ({reason(exc)})") from None
        if not stat.S_ISDIR(info.st_mode):
            raise FileError(current, f"is {kind_of(info.st_mode)}, where gpuctl keeps a directory of its own",
                              hint="move it away; gpuctl never writes through a link or over another file")
        if info.st_uid != os.geteuid():
            raise FileError(current, f"belongs to uid {info.st_uid}, not to this user (uid {os.geteuid()})",
                              hint="gpuctl writes only into directories of the user it runs as")
    return path


def _make_root(root: Path) -> None:
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
    except FileExistsError:
        raise FileError(root, "is not a directory; gpuctl keeps its files in a directory there",
                          hint="point GPUCTL_HOME at a directory, or unset it for ~/.gpuctl") from None
    except (OSError, ValueError) as exc:
        raise FileError(root, f"cannot be created ({reason(exc)})",
                          hint="point GPUCTL_HOME at a directory you can write") from None
    if not os.path.isdir(root):
        raise FileError(root, "is not a directory; gpuctl keeps its files in a directory there",
                          hint="point GPUCTL_HOME at a directory, or unset it for ~/.gpuctl")


def write_atomic(path: Path, data: bytes | str, *, mode: int = 0o600) -> None:
    """Write `data` to `path` whole or not at all, never through a link.

    A new file beside it (O_CREAT | O_EXCL | O_NOFOLLOW) takes the bytes and is synced, then renamed
    over `path`: a crash leaves the old file or the new one, and a link at `path` is replaced, never
    followed. The directory must exist (`private_dir` in the home).
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except (OSError, ValueError) as exc:
        raise FileError(path, f"cannot be written ({reason(exc)})") from None
    try:
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if os.path.isdir(path) and not os.path.islink(path):
            raise FileError(path, "is a directory, where gpuctl writes a file")
        os.replace(temporary, path)
    except OSError as exc:
        _unlink_quietly(temporary)
        raise FileError(path, f"cannot be written ({reason(exc)})") from None
    except BaseException:
        _unlink_quietly(temporary)
        raise


def open_private(path: Path, flags: int, *, mode: int = 0o600) -> int:
    """A descriptor of the regular file at `path`, owned by this user, opened without following a link.

    `flags` are os.open's (O_RDWR | O_CREAT, O_WRONLY | O_APPEND ...); O_TRUNC is refused here, as
    truncating must wait until the file is known to be ours (use os.ftruncate on the descriptor).
    """
    if flags & os.O_TRUNC:
        raise ValueError("open_private: truncate after the checks, not with O_TRUNC")
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, mode)
    except (OSError, ValueError) as exc:
        standing = _what_stands(path)
        if standing is not None and standing != "a regular file":
            raise FileError(path, f"is {standing}, where gpuctl keeps a regular file of its own") from None
        raise FileError(path, f"cannot be opened ({reason(exc)})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileError(path, f"is {kind_of(info.st_mode)}, where gpuctl keeps a regular file of its own")
        if info.st_uid != os.geteuid():
            raise FileError(path, f"belongs to uid {info.st_uid}, not to this user (uid {os.geteuid()})",
                              hint="gpuctl writes only into files of the user it runs as")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _what_stands(path: Path) -> str | None:
    try:
        return kind_of(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return None


def append_private(path: Path, text: str) -> None:
    """Append `text` to the regular file at `path` (created 0600), never through a link."""
    fd = open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data):]
    except OSError as exc:
        raise FileError(path, f"cannot be written ({reason(exc)})") from None
    finally:
        os.close(fd)


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
