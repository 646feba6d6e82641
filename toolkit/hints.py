"""Hints print commands the user can paste: the gpuctl they actually ran, with the same spec path.

`gpuctl` may be `.venv/bin/gpuctl`, `python -m toolkit`, or a `gpuctl` on PATH, and lab commands
run under sudo; a hint that says plain `gpuctl` where none is on PATH does not work when pasted.

Code that only has the ClusterSpec (the providers) names the spec file and backend the command was
given through `spec_command`: the command layer records them with `remember_spec` when it picks
the driver. "Did you mean" suggestions for typed names (NCCL variables, spec keys) live here too.
"""

from __future__ import annotations

import difflib
import os
import shlex
import shutil
import sys
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

SPEC_PLACEHOLDER = "SPEC"  # a hint for a cluster whose spec path this process was not given

# cluster name -> the words after the subcommand that select it: the spec path, then --backend URL
_SPECS: dict[str, tuple[str, ...]] = {}


def _invoked_as_gpuctl() -> bool:
    argv0 = sys.argv[0] if sys.argv else ""
    return Path(argv0).name == "gpuctl"


def gpuctl_command() -> str:
    """The command line prefix that runs this gpuctl again, as the user invoked it."""
    argv0 = sys.argv[0] if sys.argv else ""
    if not argv0 or argv0.endswith(("__main__.py", "-c")) or not _invoked_as_gpuctl():
        command = f"{shlex.quote(sys.executable)} -m toolkit"
    elif "/" not in argv0 or shutil.which("gpuctl") == str(Path(argv0).resolve()):
        command = "gpuctl"
    else:
        command = shlex.quote(argv0)
    # Run through sudo (the lab needs root): the pasted command needs it too.
    return f"sudo {command}" if os.geteuid() == 0 and os.environ.get("SUDO_USER") else command


def command(*words: str | Path) -> str:
    """`gpuctl WORDS...` as this user would type it, each word quoted for the shell."""
    return " ".join([gpuctl_command(), *(shlex.quote(str(w)) for w in words)])


def remember_spec(cluster: str, path: str | Path, backend: str | None = None) -> None:
    """Record how this run named the cluster's spec (and backend), for `spec_command`."""
    _SPECS[cluster] = (str(path), *(("--backend", backend) if backend else ()))


def spec_path(cluster: str) -> str:
    """The spec path this run was given for `cluster`, or the placeholder SPEC."""
    return _SPECS.get(cluster, (SPEC_PLACEHOLDER,))[0]


def spec_command(cluster: str, subcommand: str, *words: str) -> str:
    """`gpuctl SUBCOMMAND SPEC [--backend URL] WORDS...` for `cluster`, as this run was given it."""
    return command(subcommand, *_SPECS.get(cluster, (SPEC_PLACEHOLDER,)), *words)


def as_root() -> str:
    """This very command line again under sudo (for "needs root" errors).

    sudo resets PATH, so a `gpuctl` found on PATH is named by its full path.
    """
    prefix = gpuctl_command()
    if prefix == "gpuctl":
        prefix = shlex.quote(shutil.which("gpuctl") or "gpuctl")
    if not prefix.startswith("sudo "):
        prefix = f"sudo {prefix}"
    invoked = _invoked_as_gpuctl() or (sys.argv[0] if sys.argv else "").endswith("__main__.py")
    words = sys.argv[1:] if invoked else ["up", SPEC_PLACEHOLDER]
    return " ".join([prefix, *(shlex.quote(w) for w in words)])


# --- did you mean ---------------------------------------------------------------------------------


def close_names(word: str, known: Iterable[str], *, prefix: str = "", cutoff: float = 0.75, n: int = 3) -> list[str]:
    """The known names closest to `word` (difflib), best first; empty when none is close.

    A `prefix` every name shares ("NCCL_") is left out of the comparison, where it would make
    any two names look alike.
    """
    names = {name.removeprefix(prefix): name for name in known if name != word}
    return [names[c] for c in difflib.get_close_matches(word.removeprefix(prefix), list(names), n=n, cutoff=cutoff)]


def nearest(word: str, known: Iterable[str], *, prefix: str = "", cutoff: float = 0.75) -> str | None:
    """The known name closest to `word`, or None when none is close."""
    close = close_names(word, known, prefix=prefix, cutoff=cutoff, n=1)
    return close[0] if close else None


@lru_cache(maxsize=1)
def known_nccl_variables() -> frozenset[str]:
    """The NCCL variables gpuctl knows: every one NCCL reads (toolkit/tuning/data/nccl_variables.yaml),
    those of its tuning data (NCCL's defaults, the vendor profiles' published and observed values)
    and those its topology rules write."""
    import ast
    import inspect

    from toolkit.tuning import rules, tables, variables

    names = set(variables.table().variables) | {row.name for row in tables.nccl_default_rows()}
    for profile in tables.vendor_profiles():
        names.update(p.name for p in profile.published)
        names.update(o.name for o in profile.observed)
    # The rules write each setting through `_rule("NCCL_NAME", value, reason, source)`.
    for node in ast.walk(ast.parse(inspect.getsource(rules))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "_rule"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return frozenset(name for name in names if name.startswith("NCCL_"))


def typo_distance(a: str, b: str) -> int:
    """Edits between `a` and `b`, counting an insertion, deletion, substitution or swap of two
    neighbouring characters as one (optimal string alignment distance)."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(rows[i - 1][j] + 1, row[j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[i - 2][j - 2] + 1)
        rows.append(row)
    return rows[len(a)][len(b)]


def unknown_nccl_variable(name: str) -> str | None:
    """For a name gpuctl does not know but that is one typo away from one it does: "NAME is not an
    NCCL variable gpuctl knows; did you mean X?". None otherwise.

    NCCL has many more variables than gpuctl tunes, so a name merely like a known one is not a
    typo: NCCL_P2P_DISABLE is not NCCL_IB_DISABLE misspelt, nor NCCL_MAX_NCHANNELS
    NCCL_MIN_NCHANNELS. difflib ranks the candidates; one typo (a letter added, dropped, changed
    or two swapped) is what counts as a misspelling.
    """
    known = known_nccl_variables()
    if name in known:
        return None
    typos = [c for c in close_names(name, known, prefix="NCCL_", cutoff=0.6, n=5) if typo_distance(name, c) <= 1]
    if not typos:
        return None
    close = typos[0]
    return f"{name} is not an NCCL variable gpuctl knows; did you mean {close}?"
