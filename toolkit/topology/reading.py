"""Capture and log files read from disk: bounded, regular files only, decoded one way.

`detect`, `tune` and `check-log` read the files a user names, and the files a gather bundle holds,
through here (`toolkit.files.read_bounded` underneath). A FIFO, a device, a socket or a directory
is refused before a read can block; a file is read only up to its cap; inside a bundle a symbolic
link is refused, never followed: gather.sh writes none, so a link there leads away from the
node's captures (to /etc/shadow or /dev/zero on the machine that reads them).

The caps, and what to do above them (each refusal is a `FileError`, exit 2, with this advice):

- `LOG_LIMIT`, 256 MiB: one log given to check-log. NCCL's INFO lines of the real 8-rank capture in
  ../shared/fixtures (h100-2node-roce-pxn-ranks8-15) take 3 KB a rank at 4 channels, so at 32
  channels a job of several thousand ranks fits. gpuctl reads about 7 MB/s of log with about 8
  times its size in memory (measured: 100 MB in 15 s, 780 MB resident): 256 MiB is some 40 s and
  2 GB. Above it, check one node's lines at a time.
- `CAPTURE_LIMIT`, 32 MiB: one capture file or bundle file for detect and tune. The real captures
  in tests/captures and ../shared/fixtures are at most 25 KB each; an NCCL log given to detect is
  read for the devices NCCL used, which one node's lines say.
- `READ_LIMIT`, 64 MiB: everything one detect reads together (all its paths, every bundle file).
- `FOLDER_LIMIT`, 256 files: a folder of pasted captures (a bundle has about 15).
- A run of more than 4,300 digits (Python's own bound for turning digits into a number) is refused
  with its line: no tool prints such a number, and every parser's `int()` would fail on it.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from toolkit.errors import ParseError
from toolkit.files import MIB, FileError, kind_of, read_bounded, size_text
from toolkit.topology.text import decode_capture

LOG_LIMIT = 256 * MIB
CAPTURE_LIMIT = 32 * MIB
READ_LIMIT = 64 * MIB
FOLDER_LIMIT = 256
# Python refuses int() of more digits than this (sys.int_info.default_max_str_digits).
MAX_DIGITS = 4300
# Only where a run starts (the look-behind), so a long run is tried once, never once per digit.
_LONG_NUMBER = re.compile(rf"(?<!\d)\d{{{MAX_DIGITS + 1}}}")
_DIGITS = re.compile(r"\d*")

LOG_ADVICE = ("check one node's lines at a time: NCCL starts each line with host:pid:tid, so "
              "`grep '^HOST:' LOG > HOST.log` keeps the lines of HOST")
CAPTURE_ADVICE = ("a node's captures are kilobytes; for an NCCL log give detect one node's lines "
                  "(`grep '^HOST:' LOG > HOST.log`)")


@dataclass
class Reads:
    """What one detect may still read: READ_LIMIT bytes over all its files."""

    left: int = field(default_factory=lambda: READ_LIMIT)


def read_log(path: Path) -> str:
    """A log for check-log: UTF-8, a byte that is not becomes U+FFFD (logs mix in binary output)."""
    return _checked(_bounded(path, limit=LOG_LIMIT, what="log", follow=True, advice=LOG_ADVICE)
                    .decode("utf-8", errors="replace"), path)


def read_capture_file(path: Path, reads: Reads, *, follow: bool) -> tuple[str, str | None]:
    """A capture's text and a note naming its encoding when it is not UTF-8 (`decode_capture`).

    `follow=False` inside a bundle: a link there is refused. The file counts against `reads`.
    """
    if reads.left < CAPTURE_LIMIT:
        size = _size(path, follow=follow)
        if size is not None and size > reads.left:
            raise FileError(path, f"{size_text(size)} more would pass the {size_text(READ_LIMIT)} detect reads "
                                  f"in all (the files before it took {size_text(READ_LIMIT - reads.left)})",
                            hint="give detect the captures of one node")
    data = _bounded(path, limit=min(CAPTURE_LIMIT, reads.left), what="capture", follow=follow, advice=CAPTURE_ADVICE)
    reads.left -= len(data)
    text, note = decode_capture(data)
    return _checked(text, path), note


def folder_files(directory: Path) -> list[Path]:
    """The regular files of a folder of pasted captures, sorted; a link among them is refused."""
    found: list[Path] = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_symlink():
                    raise FileError(entry.path, "is a symbolic link; gpuctl does not follow links inside a "
                                                "folder of captures", hint="copy the file into the folder")
                if entry.is_file(follow_symlinks=False):
                    found.append(Path(entry.path))
                    if len(found) > FOLDER_LIMIT:
                        raise FileError(directory, f"holds more than {FOLDER_LIMIT} files; a folder of one node's "
                                                   "captures holds a few dozen at most",
                                        hint="give detect the folder of one node's captures")
    except OSError as error:
        raise FileError(directory, f"cannot be listed ({error.strerror or type(error).__name__})") from None
    return sorted(found)


def regular_or_absent(path: Path) -> bool:
    """Whether a bundle's `path` is a regular file (False: nothing there); anything else is refused."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    except (OSError, ValueError) as error:
        raise FileError(path, f"cannot be read ({error})") from None
    if not stat.S_ISREG(info.st_mode):
        raise FileError(path, f"is {kind_of(info.st_mode)}, where a gather bundle holds a regular file "
                              "(gpuctl does not follow links inside a bundle)")
    return True


def _bounded(path: Path, *, limit: int, what: str, follow: bool, advice: str) -> bytes:
    # Said before the read, with the advice: a file over the cap is a usage matter, not damage.
    size = _size(path, follow=follow)
    if size is not None and size > limit:
        raise FileError(path, f"{size_text(size)} is more than gpuctl reads for a {what} "
                              f"(at most {size_text(limit)})", hint=advice)
    return read_bounded(path, limit=limit, what=what, follow=follow)


def _size(path: Path, *, follow: bool) -> int | None:
    """The size of the regular file at `path`; None for anything else (read_bounded says what)."""
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except (OSError, ValueError):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _checked(text: str, path: Path) -> str:
    found = _LONG_NUMBER.search(text)
    if found is not None:
        end = _DIGITS.match(text, found.end()).end()  # type: ignore[union-attr]  # \d* always matches
        raise ParseError(f"a number of {end - found.start():,} digits: no tool prints one that long "
                         "(a damaged file?)", source=str(path), line=text.count("\n", 0, found.start()) + 1)
    return text
