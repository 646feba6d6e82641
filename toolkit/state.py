"""Where gpuctl keeps per-cluster state: `$GPUCTL_HOME` (default `~/.gpuctl`)/clusters/<name>/.

State is written before anything is created, so `down` can clean up after a crash of `up`.

The home is checked before it is used: an empty GPUCTL_HOME means the default (never the current
directory), `~user` must name a user, a relative path is made absolute, and a path with a character
that a tool gpuctl hands it to would read as syntax is refused: control characters (they would end a
line of ansible.cfg), `%` (ssh expands it in UserKnownHostsFile, IdentityFile and ControlPath), `$`
(Ansible expands it in path settings) and quotes or backslashes (Ansible quotes ControlPath with `"`).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from toolkit.characters import first_control
from toolkit.errors import UsageError
from toolkit.files import FileError, expand_user
from toolkit.vocabulary import CLUSTER_NAME_PATTERN

CLUSTER_NAME = re.compile(CLUSTER_NAME_PATTERN)
_SYNTAX = re.compile(r"[%$\"'`\\]")


def gpuctl_home() -> Path:
    """The gpuctl home, absolute and checked (UsageError, exit 2, naming the variable otherwise)."""
    raw = os.environ.get("GPUCTL_HOME", "")
    source = "GPUCTL_HOME"
    if not raw:
        raw, source = os.path.join(os.environ.get("HOME") or "~", ".gpuctl"), "the default home (HOME)"
    if first_control(raw) is not None:
        raise UsageError(f"{source} holds a control character ({raw!r}): gpuctl writes its home into ansible.cfg "
                         "and ssh options, where it would end the line",
                         hint="set GPUCTL_HOME to a plain directory path")
    try:
        expanded = str(expand_user(raw, where=source))
    except FileError:
        user = raw.split("/", 1)[0]
        raise UsageError(f"{source}={raw}: {user} names no user on this machine",
                         hint="write the directory out, e.g. GPUCTL_HOME=/home/me/.gpuctl") from None
    found = _SYNTAX.search(expanded)
    if found:
        raise UsageError(f"{source}={raw}: {found.group()!r} in the path would be read as syntax by ssh or Ansible",
                         hint="choose a directory whose path has no % $ quote or backslash")
    home = Path(os.path.abspath(expanded))
    try:
        info = os.stat(home)
    except FileNotFoundError:
        return home  # made by the first command that writes
    except NotADirectoryError:
        raise UsageError(f"{source}={raw}: a part of the path is a file, not a directory",
                         hint="point GPUCTL_HOME at a directory, or unset it for ~/.gpuctl") from None
    except OSError as exc:
        raise UsageError(f"{source}={raw}: cannot be used ({exc.strerror})") from None
    if not stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{source}={raw}: is not a directory; gpuctl keeps its files in a directory there",
                         hint="point GPUCTL_HOME at a directory, or unset it for ~/.gpuctl")
    return home


def check_cluster_name(name: str, *, where: str) -> str:
    """`name` when it is a cluster name gpuctl could have made; UsageError naming `where` otherwise."""
    if not isinstance(name, str) or not CLUSTER_NAME.fullmatch(name):
        raise UsageError(f"{where}: {name!r} is not a cluster name gpuctl makes "
                         "(a DNS label: lowercase, digits, hyphens, at most 32)")
    return name


def cluster_dir(name: str, *, create: bool = False) -> Path:
    from toolkit.files import private_dir

    check_cluster_name(name, where="cluster")
    home = gpuctl_home()
    path = home / "clusters" / name
    if create:
        private_dir(path, root=home)
    return path


def home_dir(*parts: str) -> Path:
    """A directory of gpuctl's own under the home (`locks`, `damaged` ...), created 0700 and checked."""
    from toolkit.files import private_dir

    home = gpuctl_home()
    return private_dir(home.joinpath(*parts), root=home)


def own_dir(directory: Path) -> Path:
    """`directory` ready to write into: inside the gpuctl home, checked level by level and created 0700
    (`toolkit.files.private_dir`); elsewhere (a path the operator gave) created as it is asked for."""
    from toolkit.files import FileError, private_dir, reason

    home = gpuctl_home()
    if directory == home or home in directory.parents:
        return private_dir(directory, root=home)
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    except (OSError, ValueError) as exc:
        raise FileError(directory, f"cannot be created ({reason(exc)})") from None
    return directory
