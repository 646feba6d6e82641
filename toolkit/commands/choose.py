"""`gpuctl choose --gpu MODEL|--gpu-memory GB [...]`: rank the offers of both clouds for a job.

Reads the catalog, the dated price cache (`gpuctl prices refresh`) and any `--bench` run
directories; contacts nothing. Prints the ranked offers with their prices, sources and a one-line
why each, then the types that cannot meet the needs with the reasons; `--write-spec` writes the
winner as a cluster spec to start from (docs/choose.md).
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    what = parser.add_argument_group("the GPU (one of these is required)")
    what.add_argument("--gpu", metavar="MODEL", help="GPU model, a whole word of the catalog's name: A10, A100, L20")
    what.add_argument("--gpu-memory", metavar="GB", type=int, help="least memory per GPU, GiB (e.g. 80)")
    parser.add_argument("--gpus-per-node", metavar="N", type=int, help="least GPUs on one node (default 1)")
    parser.add_argument("--gpus", metavar="N", type=int, help="GPUs in total over all nodes (default: --gpus-per-node)")
    parser.add_argument("--fabric", choices=["required", "no"], default="no",
                        help="required: only types with RDMA NICs, ranked by cost per GB/s of busbw (default no)")
    parser.add_argument("--hours", metavar="H", type=float, help="how long the job runs: the total is price x H")
    parser.add_argument("--budget", metavar="AMOUNT", type=float, help="most the run may cost, CNY (needs --hours)")
    parser.add_argument("--spot", action="store_true", help="spot is acceptable: use a cached spot price")
    parser.add_argument("--region", metavar="R", action="append", help="consider this region (repeatable)")
    parser.add_argument("--zone", metavar="Z", action="append",
                        help="zone for --write-spec where the price cache names none (repeatable, one per region)")
    parser.add_argument("--bench", metavar="RUN_DIR", action="append",
                        help="a gpuctl bench run directory: its measured busbw wins over the model for its type")
    parser.add_argument("--write-spec", metavar="PATH", help="write the winner as a cluster spec (never over a file)")
    parser.add_argument("--json", action="store_true", help="print one JSON document (docs/schemas/choose.json)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from toolkit import hints
    from toolkit.choose import offers as offer_rows
    from toolkit.choose.busbw import load_measured
    from toolkit.choose.needs import build_needs, text_value
    from toolkit.choose.rank import rank, winner
    from toolkit.choose.report import ChooseReport
    from toolkit.choose.spec_writer import write_spec
    from toolkit.commands._reports import dump
    from toolkit.prices.cache import load_cache, utc_now

    needs = build_needs(gpu=args.gpu, gpu_memory=args.gpu_memory, gpus_per_node=args.gpus_per_node,
                        gpus=args.gpus, fabric=args.fabric, hours=args.hours, budget=args.budget,
                        spot=args.spot, regions=args.region, zones=args.zone)
    run_dirs = [Path(text_value("--bench", d, max_length=1024)) for d in args.bench or []]
    if args.write_spec is not None:
        text_value("--write-spec", args.write_spec, max_length=1024)
    measured, notes = load_measured(run_dirs)
    cache = load_cache()
    now = utc_now()
    built = offer_rows.build(needs, cache, now, measured)
    ranked = rank(built.offers, needs)
    best = winner(ranked)
    if not cache.entries:
        notes.append("the price cache is empty: prices are the catalog's dated public ones, where it has any; "
                     f"`{hints.command('prices', 'refresh', '--provider', 'P', '--region', 'R')}` reads the "
                     "clouds' own")
    written = None
    if args.write_spec is not None:
        if best is None:
            from toolkit.errors import UsageError

            raise UsageError("--write-spec: no offer gpuctl can create meets the needs; nothing written")
        row = next(r.row for r in offer_rows.catalog_rows()
                   if (r.provider, r.row.name) == (best.provider, best.instance_type))
        written = str(write_spec(args.write_spec, best, needs, cache, row.rdma.kind if row.rdma else None,
                                 row.max_mtu))
    report = ChooseReport(needs=needs, offers=ranked, unmet=built.unmet,
                          winner=f"{best.provider}/{best.instance_type}" if best else None,
                          spec_written=written, notes=notes)
    if args.json:
        print(dump(report), end="")
    else:
        print(render(report))
    if written:
        print(f"wrote {written}: replace ssh.public_key and network.admin_cidr, then gpuctl validate {written}",
              file=sys.stderr if args.json else sys.stdout)
    return 0


def render(report: object) -> str:
    from toolkit.choose.report import ChooseReport

    assert isinstance(report, ChooseReport)
    needs = report.needs
    gpu = needs.gpu or f">= {needs.gpu_memory_gib} GiB"
    lines = [f"needs: {needs.gpus} GPU(s) {gpu}, >= {needs.gpus_per_node} per node, fabric {needs.fabric}"
             + (f", {needs.hours:g} h" if needs.hours else "") + (f", budget {needs.budget:,.2f} CNY" if needs.budget
                                                                  else "")
             + (", spot ok" if needs.spot else "") + (f", regions {' '.join(needs.regions)}" if needs.regions else "")]
    lines.append("")
    lines.append(f"{len(report.offers)} offer(s), best first:" if report.offers else "no offer meets the needs.")
    for o in report.offers:
        where = o.region + (f" {o.zone}" if o.zone else "") if o.region else "(no region)"
        lines.append(f"{o.rank:>3}. {o.provider} {o.instance_type}  {where}  {o.nodes} x {o.gpus_per_node} "
                     f"{o.gpu_model}" + (f" {o.gpu_memory_gib} GiB" if o.gpu_memory_gib else "")
                     + ("  [compare only]" if o.compare_only else ""))
        money = (f"{o.per_hour:,.2f} {o.currency}/h, {o.per_gpu_hour:,.2f}/GPU-h ({o.billing})"
                 if o.per_hour is not None else "no price")
        rdma = f"RDMA {o.rdma_gbps_per_gpu:g} Gbit/s per GPU ({o.rdma_kind})" if o.rdma_gbps_per_gpu else (
            f"RDMA {o.rdma_kind}, bandwidth unknown" if o.rdma_kind else "no RDMA")
        bw = f"busbw {o.busbw_gbps:g} GB/s ({o.busbw_from})" if o.busbw_gbps is not None else "busbw unknown"
        per = f", {o.per_busbw:,.2f}/h per GB/s" if o.per_busbw is not None else ""
        lines.append(f"     {money}; {rdma}; {bw}{per}")
        if o.hours is not None:
            total = f"{o.total:,.2f} {o.currency}" if o.total is not None else "unknown"
            budget = "" if o.within_budget is None else (", within budget" if o.within_budget else ", over budget")
            lines.append(f"     {o.hours:g} h: {total}{budget}")
        lines.append(f"     price: {o.price_note}" + (f" <{o.price_source}>" if o.price_source
                                                       and o.price_source.startswith("http") else ""))
        lines.append(f"     busbw: {o.busbw_basis}")
        lines.append(f"     why: {o.why}")
    if report.unmet:
        lines.append("")
        lines.append(f"{len(report.unmet)} type(s) cannot meet the needs:")
        for u in report.unmet:
            where = f" ({u.region})" if u.region else ""
            only = " [compare only]" if u.compare_only else ""
            lines.append(f"  - {u.provider} {u.instance_type}{where}{only}: {'; '.join(u.reasons)}")
    if report.winner:
        lines.append("")
        lines.append(f"winner: {report.winner}")
    for note in report.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)
