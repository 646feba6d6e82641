"""`gpuctl reap [SPEC...]`: every cluster this user or team has, from local state and from the
clouds' tags in every region, each expired, live, orphaned or unknown; `--yes` destroys the expired
ones through the normal `down`. See toolkit/reap/ and docs/reap.md.

Exit codes: 0 when every cloud and region answered and everything `--yes` tried was done; 7 when a
cloud had no usable credentials (the variables to export are named); 6 when a region could not be
searched or a `down` / release failed. The table (or the JSON document) is printed first in every case.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from toolkit.commands._driver import add_backend_argument

if TYPE_CHECKING:
    from toolkit.commands._reports import ReapCluster, ReapReport
    from toolkit.reap.act import Outcome
    from toolkit.reap.classify import Cluster
    from toolkit.reap.cloud import SearchResult
    from toolkit.spec.models import ClusterSpec


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", nargs="*",
                        help="cluster specs reap may use: a lab's TTL, and the spec `down` is given (optional for "
                        "cloud clusters: their state says enough)")
    parser.add_argument("--yes", action="store_true",
                        help="destroy the expired clusters (default: a dry run that changes nothing)")
    parser.add_argument("--include-orphaned", action="store_true",
                        help="with --yes, also release the instances of orphaned clusters past their expiry that "
                        "carry gpuctl's cluster-id tag, through the cloud API")
    parser.add_argument("--provider", choices=("alicloud", "tencentcloud"), default=None,
                        help="search one cloud only (default: both; each must have credentials)")
    parser.add_argument("--region", action="append", default=[], metavar="REGION",
                        help="search only this region (repeatable; default: every region the account sees)")
    parser.add_argument("--owner", default=None, help="only clusters whose gpuctl:owner is this")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document (docs/schemas/reap.json) on stdout")
    add_backend_argument(parser)


def run(args: argparse.Namespace) -> int:
    from toolkit import hints
    from toolkit.commands._reports import dump
    from toolkit.commands._spec import load_spec_arg
    from toolkit.errors import EXIT_MISSING_TOOL, EXIT_OK, EXIT_PROVIDER, UsageError
    from toolkit.progress import progress
    from toolkit.providers.cloud_api import Budget, check_region
    from toolkit.reap import act, local
    from toolkit.reap.classify import classify
    from toolkit.reap.cloud import CLOUDS, search

    if args.include_orphaned and not args.yes:
        progress("--include-orphaned without --yes: a dry run, nothing is released")
    specs: dict[str, tuple[ClusterSpec, str]] = {}
    for path in args.spec:
        spec = load_spec_arg(path)
        if spec.name in specs:
            raise UsageError(f"{path}: cluster {spec.name} is given twice ({specs[spec.name][1]} too)")
        specs[spec.name] = (spec, path)
        hints.remember_spec(spec.name, path, args.backend)
    now = datetime.now(UTC)
    providers = (args.provider,) if args.provider else CLOUDS
    regions = {check_region(region, "--region") for region in args.region}
    states = [s for s in local.scan() if s.provider not in CLOUDS or s.provider in providers]
    known = {p: {s.region for s in states if s.provider == p and s.region} for p in providers}
    found = search(providers, regions=regions, known=known, budget=Budget())
    # A lab records no TTL: its spec, where given, says when it expires.
    lab_expiry = {s.name: s.created_at + specs[s.name][0].lifecycle.ttl_delta for s in states
                  if s.provider == "local" and s.created_at is not None and s.name in specs}
    clusters = [c for c in classify(states, found.instances, now, lab_expiry=lab_expiry)
                if (not regions or c.region in regions or c.provider == "local")
                and (args.owner is None or c.owner == args.owner)]
    outcome = act.Outcome()
    if args.yes:
        for cluster in clusters:
            given = specs.get(cluster.name, (None, ""))[0]
            if cluster.status == "expired" and cluster.state is not None and cluster.provider in (*CLOUDS, "local"):
                if cluster.provider == "local" and given is None:
                    continue
                progress(f"{cluster.name}: expired; removing it through `down`")
                act.destroy(cluster, given or act.teardown_spec(cluster.state), args.backend, progress, outcome)
            elif cluster.status == "orphaned" and args.include_orphaned and cluster.provider in found.searches:
                act.release(cluster, found.searches[cluster.provider], progress, outcome, now)
    report = build_report(clusters, found, outcome, specs, now, yes=args.yes, include_orphaned=args.include_orphaned)
    print(dump(report) if args.json else render(report), end="")
    missing = [gap for gap in report.unreachable if gap.credentials]
    if missing or outcome.credentials_failed:
        clouds = sorted({gap.provider for gap in missing})
        reasons = [f"{gap.provider}: {gap.reason}" for gap in missing] or ["a `down` or release was refused them; "
                                                                          "see the failures above"]
        print(f"gpuctl reap: error: no usable credentials for {', '.join(clouds) or 'a cloud'}: "
              + "; ".join(reasons) + " (or limit the search with --provider)", file=sys.stderr)
    if outcome.missing_tool:
        print("gpuctl reap: error: a tool `down` needs is missing, not a credential: see the failures above",
              file=sys.stderr)
    if missing or outcome.credentials_failed or outcome.missing_tool:
        return EXIT_MISSING_TOOL
    if report.unreachable or report.failures:
        print(f"gpuctl reap: error: {len(report.unreachable)} region(s) could not be searched and "
              f"{len(report.failures)} action(s) failed; see above", file=sys.stderr)
        return EXIT_PROVIDER
    return EXIT_OK


def build_report(clusters: list[Cluster], found: SearchResult, outcome: Outcome,
                 specs: dict[str, tuple[ClusterSpec, str]], now: datetime, *, yes: bool,
                 include_orphaned: bool) -> ReapReport:
    from toolkit.commands._reports import ReapCluster, ReapGap, ReapReport, utc_iso
    from toolkit.reap import act
    from toolkit.reap.cost import cluster_cost

    rows = []
    for cluster in clusters:
        spec, path = specs.get(cluster.name, (None, None))
        action = act.intent(cluster, yes=yes, include_orphaned=include_orphaned, spec=spec, now=now)
        if cluster.name in outcome.destroyed:
            action = "destroyed through `down`"
        elif any(i.id in outcome.released for i in cluster.instances):
            action = f"released {sum(i.id in outcome.released for i in cluster.instances)} instance(s)"
        elif yes and any(f.startswith(f"{cluster.name} (") for f in outcome.failures):
            action = "failed: see failures"
        rows.append(ReapCluster(
            cluster=cluster.name, provider=cluster.provider, region=cluster.region, cluster_id=cluster.cluster_id,
            owner=cluster.owner, status=cluster.status, expired=cluster.expired, in_state=cluster.state is not None,
            instances=[i.id for i in cluster.instances],
            created_at=utc_iso(cluster.created_at) if cluster.created_at else None,
            expires_at=utc_iso(cluster.expires_at) if cluster.expires_at else None,
            cost_so_far=cluster_cost(cluster, now, spec if spec is not None and spec.provider == cluster.provider
                                     else None),
            action=action, commands=act.commands(cluster, found.searches.get(cluster.provider), path),
            notes=list(cluster.state.notes) if cluster.state is not None else [],
        ))
    return ReapReport(
        dry_run=not yes, checked_at=utc_iso(now), searched=[f"{p}/{r}" for p, r in found.searched], clusters=rows,
        unreachable=[ReapGap(provider=g.provider, region=g.region, reason=g.reason, credentials=g.credentials)
                     for g in found.gaps],
        destroyed=outcome.destroyed, released=outcome.released, failures=outcome.failures,
    )


HEADER = ("cluster", "provider", "region", "instances", "created", "expires", "status", "cost so far")


def render(report: ReapReport) -> str:
    def when(value: str | None) -> str:
        return value.replace("T", " ").removesuffix("Z") if value else "unknown"

    def cost(row: ReapCluster) -> str:
        spent = row.cost_so_far
        if spent.amount is None:
            return "unknown"
        return f"{spent.amount:,.2f} {spent.currency}" if spent.currency else "none (lab)"

    table = [HEADER] + [(r.cluster, r.provider, r.region or "-", str(len(r.instances)), when(r.created_at),
                         when(r.expires_at), r.status, cost(r)) for r in report.clusters]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
             for line in table]
    if not report.clusters:
        lines.append("(no cluster found)")
    for row in report.clusters:
        lines.append(f"\n{row.cluster} ({row.provider}{' ' + row.region if row.region else ''}): {row.action}")
        lines += [f"  $ {command}" for command in row.commands]
        lines += [f"  note: {note}" for note in row.notes]
        if row.cost_so_far.amount is not None or row.cost_so_far.basis.startswith("unknown"):
            lines.append(f"  cost: {row.cost_so_far.basis}")
    if report.unreachable:
        lines.append("\nnot searched (never skipped silently):")
        lines += [f"  {g.provider} {g.region}: {g.reason}" for g in report.unreachable]
    if report.failures:
        lines.append("\nfailed:")
        lines += [f"  {failure}" for failure in report.failures]
    lines.append(f"\n{'dry run: nothing was changed' if report.dry_run else 'done'}; searched "
                 f"{len(report.searched)} region(s) at {when(report.checked_at)} UTC")
    return "\n".join(lines) + "\n"
