"""`gpuctl configure SPEC`: install the stack and write tuned NCCL settings on every node."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from toolkit.commands._driver import add_backend_argument, driver_for

if TYPE_CHECKING:
    from toolkit.configure.ansible_run import RunResult
    from toolkit.providers.base import ClusterOutputs, ProviderDriver
    from toolkit.spec.models import ClusterSpec


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="cluster spec YAML file")
    add_full_argument(parser)
    add_backend_argument(parser)


def add_full_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--full", action="store_true",
                        help="run every role on every node instead of verifying nodes whose inputs are unchanged")


def configure_cluster(spec: ClusterSpec, spec_path: str, driver: ProviderDriver,
                      outputs: ClusterOutputs | None = None, *, full: bool = False) -> RunResult:
    """Verify the nodes, run the playbooks where something differs (everywhere with `full`), print
    the per-node summary; raise CheckFailed if a node failed."""
    from toolkit import hints
    from toolkit.configure import configure
    from toolkit.errors import CheckFailed
    from toolkit.progress import progress

    # The lab restarts a node whose sshd died, as a reboot would on a real host; clouds cannot.
    revive = getattr(driver, "revive", None)
    if callable(revive):
        revive(spec, progress)
    if outputs is None:
        outputs = driver.outputs(spec)
    result = configure(spec, outputs, progress, full=full)
    print(f"\nSummary ({result.changed} changed):")
    for node in result.nodes.values():
        print(f"  {node.line()}")
    if not result.ok:
        raise CheckFailed(
            f"configure failed on {', '.join(result.failed) or 'the playbook'}",
            hint=f"fix the cause above and run `{hints.command('configure', spec_path)}` again; nodes that "
            "succeeded are only verified next time",
        )
    return result


def run(args: argparse.Namespace) -> int:
    from toolkit.lock import cluster_lock
    from toolkit.spec.loader import load_spec

    spec = load_spec(args.spec)
    with cluster_lock(spec.name, "configure"):
        configure_cluster(spec, args.spec, driver_for(spec, args), full=args.full)
    sys.stdout.flush()
    return 0
