"""Paths given on the command line: one rule, one exit code, for every command.

A file or directory named on the command line that does not exist, cannot be opened, or is not
the kind of thing the argument takes (a directory where a file is needed, a device, a FIFO) is a
usage error: exit 2 (`EXIT_USAGE`), one line `PATH: what is wrong; what to give`. Once a path is
open, what is in it has its own code: a spec that does not parse or match the schema exits 3, a
capture or log that cannot be parsed exits 5. Paths named inside a spec (ssh.public_key, capture)
are problems of the spec and are reported with its key path.

`require_input` only looks (stat, open and close); the reader that follows keeps its own checks,
so a path swapped in between is still refused, with the reader's code.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

from toolkit.errors import UsageError
from toolkit.files import kind_of, reason

Kind = Literal["file", "file or directory"]

SPEC = "a cluster spec YAML file, e.g. examples/local-lab.yaml"
CAPTURES = "a bundle directory from the gather command or a capture file"
LOG = "a log file"



def require_input(path: str | Path, give: str, *, kind: Kind = "file") -> Path:
    """`path` as a Path when it names an existing, readable input of `kind`; UsageError otherwise.

    `give` says what the argument takes ("a cluster spec YAML file ..."), for the fix.
    """
    shown = str(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"{shown}: no such file or directory; give {give}") from None
    except NotADirectoryError:
        raise UsageError(f"{shown}: no such file or directory (a part of the path is not a directory); "
                         f"give {give}") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise UsageError(f"{shown}: cannot be read ({reason(exc)}); give {give}") from None
    is_dir = stat.S_ISDIR(info.st_mode)
    if not (stat.S_ISREG(info.st_mode) or (is_dir and kind == "file or directory")):
        what = kind_of(info.st_mode)
        raise UsageError(f"{shown}: is {what}, not a {'regular file' if kind == 'file' else kind}; give {give}")
    try:
        if is_dir:
            with os.scandir(path) as entries:
                next(entries, None)
        else:
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC))
    except OSError as exc:
        raise UsageError(f"{shown}: cannot be read ({reason(exc)}); give {give}") from None
    return Path(path)



