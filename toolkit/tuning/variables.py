"""What an NCCL variable does with its value, and which user settings gpuctl writes into nccl.conf.

A user setting (spec `nccl_overrides`, `gpuctl tune --set`) ends up in /etc/nccl.conf on every node,
where every NCCL process reads it, root's jobs included. Most NCCL variables are plain values, but
some name a file NCCL reads, a file NCCL creates or truncates, or a shared library NCCL loads
(`data/nccl_variables.yaml` lists all of them, each with the line of NCCL's source that reads it).
So a setting is written only when its kind allows its value:

- value: written as given (after the spec's text rules: one line, no template markers);
- plugin (NCCL_NET_PLUGIN, NCCL_TUNER_PLUGIN, NCCL_IBVERBS_LIB ...): only `none`, which NCCL reads
  as "load no plugin". A spec cannot declare plugin software for gpuctl to install (`software:`
  pins driver, CUDA, NCCL and nccl-tests), so any other name would load whatever library of that
  name happens to be on the node;
- read-path (NCCL_TOPO_FILE, NCCL_GRAPH_FILE, NCCL_CONF_FILE ...): refused. No gpuctl role installs
  such a file, so the path would name a file nobody vouches for;
- write-path (NCCL_DEBUG_FILE, NCCL_TOPO_DUMP_FILE ...): only a file name directly inside LOG_DIR,
  the directory the nccl_conf role creates for them; NCCL_DEBUG_FILE must also carry %p (NCCL puts
  the process id there), so that two processes never write, or truncate, the same file;
- a variable the table does not list (a newer NCCL, a vendor's build): written as a plain value
  unless its name or value looks like a path or a library, which is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Literal

import yaml

Kind = Literal["value", "read-path", "write-path", "plugin"]
KINDS: tuple[Kind, ...] = ("value", "read-path", "write-path", "plugin")

# The directory the nccl_conf role creates on every node for the files NCCL writes (mode 1777, as
# /tmp: any job may write there, and the kernel's fs.protected_symlinks keeps one user's link from
# redirecting another user's, or root's, writes).
LOG_DIR = "/var/log/gpuctl/nccl"
# A file name in LOG_DIR: no '/', nothing a shell or NCCL's % expansion could read otherwise.
_LOG_NAME = re.compile(r"[A-Za-z0-9._-]+")
# NCCL_DEBUG_FILE's expansions (src/debug.cc, ncclDebugInit): %h host, %p pid, %% a '%'.
_DEBUG_NAME = re.compile(r"(?:[A-Za-z0-9._-]|%[hp%])+")
# An unknown variable whose name has one of these words names a file, a directory or a library.
_PATHLIKE_WORDS = frozenset({"FILE", "FILES", "PATH", "DIR", "PLUGIN", "LIB", "LIBS", "LIBRARY", "SO", "CONF",
                             "CONFIG", "SCRIPT", "CMD", "COMMAND", "EXEC"})
_LIBRARY_VALUE = re.compile(r"\.so(\.[0-9]+)*$|\.so\.")
NONE = "none"
# What a spec may declare as software, for the plugin message (toolkit.spec.models.Software).
SOFTWARE_FIELDS = "driver, cuda, nccl and nccl_tests"


@dataclass(frozen=True)
class Variable:
    name: str
    kind: Kind
    read: str | None  # file:line in NCCL's source (see the data file's header)
    doc: int | None  # line of env.rst
    none_disables: bool = False
    note: str | None = None


@dataclass(frozen=True)
class Table:
    version: str  # the NCCL release the table was read from
    also: str  # the older release read for variables it no longer has
    variables: dict[str, Variable]


@lru_cache(maxsize=1)
def table() -> Table:
    text = resources.files("toolkit.tuning").joinpath("data", "nccl_variables.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    rows = {}
    for name, entry in data["variables"].items():
        kind = entry["kind"]
        if kind not in KINDS:
            raise ValueError(f"nccl_variables.yaml: {name}: unknown kind {kind!r}")
        rows[name] = Variable(name=name, kind=kind, read=entry.get("read"), doc=entry.get("doc"),
                              none_disables=bool(entry.get("none_disables")), note=entry.get("note"))
    return Table(version=str(data["nccl"]["version"]), also=str(data["nccl"]["also"]), variables=rows)


def known(name: str) -> bool:
    return name in table().variables


def _where(variable: Variable) -> str:
    version = table().version
    read = variable.read or ""
    if read.startswith("v"):
        version, read = read[1:].split(" ", 1)
    return f"NCCL {version} {read}" if read else f"NCCL {version}"


def setting_problem(name: str, value: str) -> str | None:
    """Why `name=value` must not go into nccl.conf, or None when it may. `value` is the text NCCL
    would read (a spec's true/false already 1/0)."""
    variable = table().variables.get(name)
    if variable is None:
        return _unknown_problem(name, value)
    if variable.kind == "plugin":
        if variable.none_disables and value.lower() == NONE:
            return None
        fix = "write none (no plugin) or leave it out" if variable.none_disables else "leave it out"
        return (f"{name} loads a shared library into every NCCL process ({_where(variable)}); a spec cannot "
                f"declare plugin software for gpuctl to install (software: pins {SOFTWARE_FIELDS} only), so "
                f"{value!r} would load whatever library of that name is on the node; {fix}, and load a plugin "
                "from the environment of a job that ships it")
    if variable.kind == "read-path":
        return (f"{name} names a file NCCL reads ({_where(variable)}); no gpuctl role installs one on the "
                f"nodes, so {value!r} would be a file nobody vouches for; leave it out, and set it in the "
                "environment of a job that ships the file")
    if variable.kind == "write-path":
        return _write_path_problem(variable, value)
    return None


def _write_path_problem(variable: Variable, value: str) -> str | None:
    name = variable.name
    directory, _, file_name = value.rpartition("/")
    debug = name == "NCCL_DEBUG_FILE"
    shape = _DEBUG_NAME if debug else _LOG_NAME
    example = f"{LOG_DIR}/nccl.%h.%p.log" if debug else f"{LOG_DIR}/{name.lower().removeprefix('nccl_')}.xml"
    if directory != LOG_DIR or not shape.fullmatch(file_name) or file_name in (".", ".."):
        allowed = "letters, digits, '.', '_', '-'" + (", %h (host) and %p (process id)" if debug else "")
        return (f"{name} names a file NCCL creates or truncates ({_where(variable)}), as root in a root job, "
                f"so {value!r} could overwrite any file; gpuctl writes it only as a file name directly in "
                f"{LOG_DIR}, the directory the nccl_conf role makes for NCCL's files ({allowed}), e.g. {example}")
    if debug and "%p" not in file_name:
        return (f"{name} {value!r} has no %p: every NCCL process on the node would open the same file and "
                f"truncate what the others wrote; put the process id in the name, e.g. {example}")
    return None


def _unknown_problem(name: str, value: str) -> str | None:
    words = set(name.removeprefix("NCCL_").split("_"))
    pathlike = sorted(words & _PATHLIKE_WORDS)
    if pathlike:
        why = f"its name has {pathlike[0]}, so it may name a file or a library"
    elif "/" in value or "\\" in value or value.startswith("~") or _LIBRARY_VALUE.search(value):
        why = f"its value {value!r} looks like a path or a library"
    else:
        return None
    data = table()
    return (f"{name} is not a variable NCCL {data.version} or {data.also} reads (toolkit/tuning/data/"
            f"nccl_variables.yaml lists them), and {why}; gpuctl writes an unknown variable only as a plain "
            "value, never as a path or a library")


def unknown_note(name: str) -> str | None:
    """For a variable the table does not list: what gpuctl does with it (None for a known one)."""
    if known(name):
        return None
    data = table()
    return (f"{name} is not a variable NCCL {data.version} or {data.also} reads; written as a plain value "
            "(NCCL ignores a variable it does not know)")
