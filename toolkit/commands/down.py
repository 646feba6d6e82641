"""`gpuctl down SPEC`: remove everything the cluster created, then verify nothing is left.

Shared volumes are kept (keep_on_down, the default): `down` says what it kept. Only
`--delete-storage` removes them with their data, after the operator typed the cluster's name (or
gave it as `--yes-delete-storage=NAME` in a script).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from toolkit.commands._driver import add_backend_argument, driver_for
from toolkit.errors import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="cluster spec YAML file")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document (docs/schemas/down.json) on stdout; progress goes to stderr")
    parser.add_argument("--delete-storage", action="store_true",
                        help="also delete the cluster's shared volumes and ALL their data; "
                        "asks for the cluster's name")
    parser.add_argument("--yes-delete-storage", metavar="NAME", default=None,
                        help="--delete-storage confirmed without asking: the cluster's name, for scripts")
    add_backend_argument(parser)


def confirm_delete_storage(cluster: str, given: str | None, ask: Callable[[str], str] | None) -> None:
    """Refuse unless the operator named the cluster: `given` (--yes-delete-storage), else typed at `ask`."""
    if given is not None:
        if given != cluster:
            raise UsageError(f"--yes-delete-storage={given} does not name this cluster ({cluster}); "
                             "nothing was removed",
                             hint=f"pass --yes-delete-storage={cluster} to delete its storage")
        return
    if ask is None:
        raise UsageError("--delete-storage deletes the cluster's volumes and their data, and needs the cluster's "
                         "name to confirm; nothing was removed",
                         hint=f"type it when asked (run it on a terminal), or pass --yes-delete-storage={cluster}")
    typed = ask(f"This deletes every shared volume of {cluster} and all its data. Type the cluster's name: ").strip()
    if typed != cluster:
        raise UsageError(f"{typed!r} is not {cluster}; nothing was removed")


def run(args: argparse.Namespace) -> int:
    from toolkit.commands._spec import load_spec_arg
    from toolkit.lock import cluster_lock
    from toolkit.progress import progress

    # No catalog check: tearing down must work even for a spec the catalog no longer accepts.
    spec = load_spec_arg(args.spec)
    driver = driver_for(spec, args)
    delete_storage = args.delete_storage or args.yes_delete_storage is not None
    if delete_storage:
        # Checked before anything is removed: a refusal leaves the cluster as it was.
        confirm_delete_storage(spec.name, args.yes_delete_storage, input if sys.stdin.isatty() else None)
    with cluster_lock(spec.name, "down"):
        removed = driver.down(spec, progress, delete_storage=delete_storage)
    deleted = list(driver.deleted_storage)
    message = (f"{spec.name}: removed, and nothing named for it is left" if removed
               else f"{spec.name}: nothing to remove (no such cluster)")
    kept = list(driver.kept)
    if delete_storage:
        message += f"; storage deleted ({', '.join(deleted) if deleted else 'none found'})"
    elif kept:
        message += "\n" + "\n".join(f"{spec.name}: {line}" for line in kept)
    if args.json:
        from toolkit.commands._reports import DownReport, dump

        print(dump(DownReport(cluster=spec.name, provider=spec.provider, removed=removed, message=message)), end="")
    else:
        print(message)
    return 0
