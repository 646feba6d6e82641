"""`gpuctl configure SPEC`: install the stack and write tuned NCCL settings on every node."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from toolkit.commands._driver import add_backend_argument, driver_for
from toolkit.listing import first

if TYPE_CHECKING:
    from toolkit.commands._reports import ConfigureReport
    from toolkit.configure.ansible_run import NodeResult, RunResult
    from toolkit.errors import CheckFailed
    from toolkit.providers.base import ClusterOutputs, ProviderDriver
    from toolkit.spec.models import ClusterSpec

# Beside the converge records: what the last configure run did on each node, for `gpuctl status`.
LAST_RUN_FILE = "last-configure.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="cluster spec YAML file")
    add_full_argument(parser)
    parser.add_argument("--nodes", nargs="+", metavar="NODE",
                        help="verify and run only these nodes (names as the status command shows them); the "
                        "others are not touched and keep their records")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document (docs/schemas/configure.json) on stdout; the summary goes "
                        "to stderr")
    add_backend_argument(parser)


def add_full_argument(parser: argparse.ArgumentParser) -> None:
    """--full and --node-local: how configure runs, for configure and up alike."""
    parser.add_argument("--full", action="store_true",
                        help="run every role on every node instead of verifying nodes whose inputs are unchanged")
    parser.add_argument("--node-local", action="store_true",
                        help="run the site playbook on each node itself (shipped with ansible-core, every node at "
                        "once) instead of from here: for hundreds of nodes; needs Python 3.10 to 3.12 on the nodes")


def configure_cluster(spec: ClusterSpec, spec_path: str, driver: ProviderDriver,
                      outputs: ClusterOutputs | None = None, *, full: bool = False,
                      out: IO[str] | None = None, check: bool = True,
                      nodes: list[str] | None = None, node_local: bool = False) -> RunResult:
    """Verify the nodes, run the playbooks where something differs (everywhere with `full`), print
    the per-node summary on `out` (stdout by default); with `check`, raise CheckFailed if a node failed."""
    from toolkit.configure import configure
    from toolkit.progress import progress

    # The lab restarts a node whose sshd died, as a reboot would on a real host; clouds revive nothing.
    driver.revive(spec, progress)
    if outputs is None:
        outputs = driver.outputs(spec)
    if nodes is not None:
        check_node_names(nodes, [n.name for n in outputs.nodes])
    result = configure(spec, outputs, progress, full=full, nodes=nodes, node_local=node_local)
    record_last_run(spec.name, result)
    stream = out if out is not None else sys.stdout
    print(f"\nSummary ({result.changed} changed; {ready_count(result)}):", file=stream)
    for node in result.nodes.values():
        print(f"  {node.line()}", file=stream)
        for note in node.notes:
            if ": Note: " in note:  # what a role decided without failing (skips are in the role column)
                print(f"      {note.replace(': Note: ', ': ', 1)}", file=stream)
    if check and not result.ok:
        raise failure(spec_path, result)
    return result


def check_node_names(asked: list[str], known: list[str]) -> None:
    """Refuse a --nodes name the cluster does not have, naming it and the cluster's nodes."""
    from toolkit.errors import UsageError

    unknown = [name for name in asked if name not in known]
    if unknown:
        raise UsageError(f"--nodes: no node named {', '.join(repr(n) for n in unknown)} in this cluster",
                         hint=f"its nodes are {first(known, 8) or 'none'}")


def ready_count(result: RunResult) -> str:
    """`3 of 4 nodes ready, 1 failed`: the line a job hand-off reads first."""
    ready = sum(1 for node in result.nodes.values() if node.ok)
    failed = len(result.nodes) - ready
    return f"{ready} of {len(result.nodes)} nodes ready" + (f", {failed} failed" if failed else "")


def failure(spec_path: str, result: RunResult) -> CheckFailed:
    from toolkit import hints
    from toolkit.errors import CheckFailed

    failed = result.failed
    if not failed:  # the playbook itself stopped before any node said what went wrong
        return CheckFailed("configure failed: the playbook stopped before any node reported",
                           hint=f"fix the cause above and run `{hints.command('configure', spec_path)}` again")
    shown = first(failed, 20)
    which = "just those" if len(failed) <= 20 else f"the first 20 of the {len(failed)}"
    return CheckFailed(
        f"configure failed on {shown}",
        hint=f"fix the cause above and run `{hints.command('configure', spec_path, '--nodes', *failed[:20])}`"
        f" to re-run {which}; the {len(result.nodes) - len(failed)} "
        "that succeeded are ready and are only verified next time",
    )


def node_result(node: NodeResult) -> Literal["verified", "ok", "failed"]:
    return "verified" if node.verified else "ok" if node.ok else "failed"


def report(cluster: str, result: RunResult, finished_at: datetime | None = None) -> ConfigureReport:
    """The --json document of a configure run (also part of `up --json`)."""
    from toolkit.commands._reports import ConfigureReport, NodeConfigure, utc_iso

    nodes = [
        NodeConfigure(name=node.name, result=node_result(node),
                      changed=node.changed, reason=node.reason, failed_task=node.failed_task,
                      message=node.message, roles=dict(node.roles), notes=list(node.notes))
        for node in result.nodes.values()
    ]
    return ConfigureReport(cluster=cluster, ok=result.ok, changed=result.changed,
                           finished_at=utc_iso(finished_at or datetime.now(UTC)), nodes=nodes)


def last_run_path(cluster: str) -> Path:
    from toolkit.state import cluster_dir

    return cluster_dir(cluster) / LAST_RUN_FILE


def record_last_run(cluster: str, result: RunResult, now: datetime | None = None) -> None:
    """Keep, per node, the result of the last configure run and when it ended (nodes the run did
    not reach keep their earlier entry). Written atomically; a failure to write is not an error."""
    from toolkit.commands._reports import utc_iso

    path = last_run_path(cluster)
    at = utc_iso(now or datetime.now(UTC))
    nodes = load_last_run(cluster)
    for node in result.nodes.values():
        nodes[node.name] = {"result": node_result(node), "at": at}
        why = ": ".join(part for part in (node.failed_task, node.message) if part)
        if not node.ok and why:
            nodes[node.name]["reason"] = why
    from toolkit.files import FileError, write_atomic
    from toolkit.state import own_dir

    try:
        own_dir(path.parent)
        write_atomic(path, json.dumps({"nodes": nodes}, indent=2, sort_keys=True) + "\n")
    except FileError:
        pass


def load_last_run(cluster: str) -> dict[str, dict[str, Any]]:
    from toolkit.files import FileError, read_bounded

    try:
        data = json.loads(read_bounded(last_run_path(cluster), limit=16 * 1024 * 1024, what="last-run record",
                                       follow=False))
    except (FileError, ValueError, RecursionError):
        return {}
    nodes = data.get("nodes") if isinstance(data, dict) else None
    if not isinstance(nodes, dict):
        return {}
    return {str(k): v for k, v in nodes.items() if isinstance(v, dict)}


def run(args: argparse.Namespace) -> int:
    from toolkit.commands._reports import dump
    from toolkit.commands._spec import load_spec_arg
    from toolkit.lock import cluster_lock

    spec = load_spec_arg(args.spec)
    with cluster_lock(spec.name, "configure"):
        result = configure_cluster(spec, args.spec, driver_for(spec, args), full=args.full,
                                   out=sys.stderr if args.json else None, check=not args.json, nodes=args.nodes,
                                   node_local=args.node_local)
    if args.json:
        print(dump(report(spec.name, result)), end="")
        if not result.ok:
            raise failure(args.spec, result)
    sys.stdout.flush()
    return 0
