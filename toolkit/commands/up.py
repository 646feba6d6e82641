"""`gpuctl up SPEC`: create the cluster and configure it; print the MTU check and a tuned nccl.conf.

With --json the text goes to stderr and stdout carries one document (docs/schemas/up.json)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from toolkit.commands._driver import add_backend_argument, driver_for
from toolkit.commands.configure import add_full_argument

if TYPE_CHECKING:
    from typing import TextIO

    from toolkit.catalog.result import CheckResult
    from toolkit.configure.ansible_run import RunResult
    from toolkit.providers.base import ClusterOutputs, NodeOutput, ProviderDriver
    from toolkit.spec.models import ClusterSpec


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="cluster spec YAML file")
    parser.add_argument("--no-configure", action="store_true", help="create the nodes only")
    parser.add_argument("--down-after", action="store_true",
                        help="bring up, configure, show the results, then remove everything (a demo)")
    add_full_argument(parser)
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document (docs/schemas/up.json) on stdout; the text goes to stderr")
    parser.add_argument("--yes", action="store_true",
                        help="confirm the cost in advance: create a cluster whose cost for its TTL is above "
                             "GPUCTL_CONFIRM_ABOVE_CNY (default 1000) or unknown without asking (scripts, CI)")
    add_backend_argument(parser)


def run(args: argparse.Namespace) -> int:
    from toolkit import hints
    from toolkit.commands._spec import load_checked_spec
    from toolkit.commands.configure import configure_cluster
    from toolkit.errors import UsageError
    from toolkit.lock import cluster_lock
    from toolkit.progress import progress

    # With --json every line of text goes to stderr: stdout carries the document alone.
    out = sys.stderr if args.json else sys.stdout
    quiet = bool(getattr(args, "quiet", False))
    spec, check = load_checked_spec(args.spec)
    driver = driver_for(spec, args)
    # Before the lock and before anything exists: a refusal here leaves nothing behind.
    _confirm_cost(spec, check, yes=args.yes, out=out)
    backend = ["--backend", args.backend] if args.backend else []
    remove = hints.command("down", args.spec, *backend)
    with cluster_lock(spec.name, "up"):
        existed = driver.exists(spec)
        if existed and args.down_after:
            raise UsageError(
                f"cluster {spec.name} already exists and was not created by this run; --down-after would remove it",
                hint=f"remove it with `{remove}`, or keep using it with "
                f"`{hints.command('configure', args.spec, *backend)}`",
            )
        progress(f"{spec.name}: already up; checking" if existed else f"{spec.name}: creating")
        result: RunResult | None = None
        try:
            outputs = driver.up(spec, progress)
            if not args.no_configure:
                result = configure_cluster(spec, args.spec, driver, outputs, full=args.full, out=out,
                                           check=not args.json, node_local=args.node_local)
                print(_mtu_report(spec, result), file=out)
                if not quiet:  # the tuned file and its reasons: long, and not a summary
                    print(_nccl_report(spec, outputs.nodes[0]), file=out)
        except KeyboardInterrupt:
            if not args.down_after:
                print(_interrupted(spec, driver, hints.command("up", args.spec, *backend), remove), file=sys.stderr)
            raise
        finally:
            if args.down_after:
                print(f"\n--down-after: removing {spec.name}", file=out)
                driver.down(spec, progress)
    if not args.down_after:
        print(f"\nCluster {spec.name} is up. Remove it with:  {remove}", file=out)
    if args.json:
        print(_json_report(spec, existed, outputs, result, removed=True if args.down_after else None), end="")
        if result is not None and not result.ok:
            from toolkit.commands.configure import failure

            raise failure(args.spec, result)
    return 0


def _confirm_cost(spec: ClusterSpec, check: CheckResult, *, yes: bool, out: TextIO) -> None:
    """Say what the cluster costs for its TTL; above the threshold (or unknown), go on only when the
    user confirms: --yes, or "yes" typed at a terminal. A provider that bills nothing says nothing."""
    from toolkit.cost_confirm import ENV, confirmation_reason, threshold, ttl_line
    from toolkit.errors import UsageError
    from toolkit.plan import build_plan
    from toolkit.prices.cache import PriceCache, load_cache, utc_now

    try:
        prices = load_cache()
    except UsageError as problem:  # a damaged cache must not stop `up`: the catalog's prices remain
        print(f"warning: {problem.message}; the cost below uses the catalog's prices only", file=sys.stderr)
        prices = PriceCache()
    plan = build_plan(spec, check, prices, utc_now())
    if plan.cost.currency is None:
        return
    print(f"{spec.name}: {plan.nodes:,} node(s), {'unknown' if plan.gpus is None else f'{plan.gpus:,}'} GPU(s). "
          f"{ttl_line(plan)}", file=out)
    reason = confirmation_reason(plan, threshold())
    if reason is None:
        return
    if yes:
        print(f"--yes: going on although {reason}", file=out)
        return
    if not sys.stdin.isatty():
        raise UsageError(f"{reason}: nothing was created (up asks for confirmation, and there is no terminal to "
                         "ask at)", hint=f"confirm in advance with `up --yes`, or set {ENV} above this cluster's cost")
    print(f"{reason}.\nCreate {spec.name}? Type yes to go on: ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("yes", "y"):
        raise UsageError(f"not confirmed ({'no answer' if not answer else repr(answer[:20])}): {spec.name} was not "
                         "created", hint="`up --yes` confirms in advance")


def _json_report(spec: ClusterSpec, existed: bool, outputs: ClusterOutputs, result: RunResult | None,
                 *, removed: bool | None) -> str:
    from toolkit.commands._reports import MtuCheck, UpReport, dump
    from toolkit.commands.configure import report
    from toolkit.paths import Paths

    nccl = Paths.of(spec.name).nccl
    return dump(UpReport(
        cluster=spec.name, provider=spec.provider, already_existed=existed, outputs=outputs,
        configure=report(spec.name, result) if result is not None else None,
        mtu_check=[MtuCheck(node=node, verdict=verdict) for node, verdict in _mtu_verdicts(spec, result)]
        if result is not None else [],
        nccl_conf={node.name: str(nccl / node.name / "nccl.conf") for node in outputs.nodes
                   if result is not None and (nccl / node.name / "nccl.conf").exists()},
        removed=removed,
    ))


def _interrupted(spec: ClusterSpec, driver: ProviderDriver, resume: str, remove: str) -> str:
    """What exists after an interrupted `up`, and the two commands that go on from there."""
    try:
        status = driver.status(spec)
        listed = status.get("nodes")
        nodes = [str(n.get("name")) for n in listed if isinstance(n, dict)] if isinstance(listed, list) else []
        what = f"phase {status.get('phase', 'unknown')}, nodes: {', '.join(nodes) or 'none yet'}"
    except Exception as exc:  # reporting after an interrupt must never raise in its turn
        what = f"state unreadable ({exc})"
    return (f"\ninterrupted: {spec.name} was not finished ({what}).\n"
            f"  resume (picks up where it stopped):  {resume}\n"
            f"  remove everything it made:           {remove}")


def _mtu_report(spec: ClusterSpec, result: RunResult) -> str:
    mtu = spec.network.mtu
    lines = [f"\nMTU check: each node pinged its peers (ring neighbour and power-of-two strides, which together "
             f"cover every node) over the fabric with `ping -M do -s {mtu - 28}` (MTU {mtu}, no fragmentation "
             "allowed):"]
    lines += [f"  {node}: {verdict}" for node, verdict in _mtu_verdicts(spec, result)]
    return "\n".join(lines)


def _mtu_verdicts(spec: ClusterSpec, result: RunResult) -> list[tuple[str, str]]:
    from toolkit.configure.peers import peers_of

    mtu = spec.network.mtu
    verdicts = []
    for index, node in enumerate(result.nodes.values()):
        peers = len(peers_of(index, len(result.nodes)))
        state = node.roles.get("mtu", "not run")
        verdict = f"MTU {mtu} set and verified to {peers} peer(s)" if state in ("ok", "changed") else state
        if node.verified:
            verdict = f"MTU {mtu} verified to {peers} peer(s) (configured by an earlier run)"
        verdicts.append((node.name, verdict))
    return verdicts


def _nccl_report(spec: ClusterSpec, node: NodeOutput) -> str:
    """The node's installed nccl.conf and the reasons behind it, from the explain.json configure
    wrote beside it (what was delivered, not a second tuning). A lab node also shows what the host
    it replays would get on that host's own fabric: the rails, HCA list, GID and GDR level the
    tuning is for, which the lab's TCP fabric cannot show."""
    from toolkit.commands.tune import explain
    from toolkit.configure.decide import MAX_NODE_FILE_BYTES, load_explained
    from toolkit.files import FileError, read_text_bounded
    from toolkit.paths import Paths

    paths = Paths.of(spec.name)
    files = paths.nccl / node.name
    config = load_explained(files)
    if config is None or not (files / "nccl.conf").exists():
        return f"\nNo tuned nccl.conf for {node.name} (topology gathering was skipped)."
    try:
        nccl_conf = read_text_bounded(files / "nccl.conf", limit=MAX_NODE_FILE_BYTES, what="nccl.conf", follow=False)
    except FileError as exc:
        return f"\nThe tuned nccl.conf of {node.name} cannot be shown: {exc.message}"
    fabric = node.fabric_interfaces[0].name if node.fabric_interfaces else "its fabric interface"
    lines = [
        f"\n== What {node.name} really uses: /etc/nccl.conf for the {spec.network.fabric} fabric of this "
        f"cluster ({fabric}), tuned from its gathered bundle ==",
        nccl_conf,
        "Why (gpuctl tune --explain):\n" + explain(config),
    ]
    if node.replay_capture:
        lines.append(_replayed_host_report(spec, node.replay_capture))
    return "\n".join(lines)


def _replayed_host_report(spec: ClusterSpec, capture: str) -> str:
    """What the real host behind a lab node's capture would get on its own (RDMA) fabric: tuned
    from the capture itself, whose interfaces are that host's (the lab node's are its own)."""
    from toolkit.commands.tune import explain
    from toolkit.topology.detect import detect_paths
    from toolkit.tuning.engine import tune

    topology = detect_paths([Path(capture)])
    config = tune(topology, fabric=None, mtu=spec.network.mtu, nccl_version=spec.software.nccl, overrides={})
    fabric = config.fabric  # inferred by tune from the capture
    pinned = [s for s in config.settings.values() if s.pinned]
    return "\n".join([
        f"\n== What the replayed host would get on its own fabric: {fabric}, inferred from the capture "
        f"{capture} (not this lab's tcp) ==",
        *(f"{s.name}={s.value}" for s in pinned),
        "",
        "Why:\n" + explain(config),
    ])
