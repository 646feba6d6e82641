"""`gpuctl check-log NCCL_LOG [--topology PATH] [--json]`: did an NCCL run use the fabric?

Exit 0 when nothing is wrong, 8 (`CheckFailed`) when a finding of severity "error" exists, 5
when the log (or the topology capture) cannot be parsed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("log", metavar="NCCL_LOG", help="a log of a run with NCCL_DEBUG=INFO")
    parser.add_argument(
        "--topology", metavar="PATH",
        help="a gather bundle or capture of the node (as for `gpuctl detect`): says which RDMA "
             "devices and rails the run could have used",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from toolkit.errors import EXIT_CHECK_FAILED, CheckFailed, UsageError
    from toolkit.topology.log_check import check_log
    from toolkit.topology.model import Topology
    from toolkit.topology.nccl_log import parse_nccl_log

    path = Path(args.log)
    try:
        text = path.read_text(errors="replace")
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror or error}") from None
    summary = parse_nccl_log(text, source=str(path))
    topology: Topology | None = None
    if args.topology:
        from toolkit.topology.detect import detect_paths

        topology = detect_paths([Path(args.topology)])
    findings = check_log(summary, topology)
    errors = [f for f in findings if f.severity == "error"]
    if args.json:
        print(json.dumps({
            "ok": not errors,
            "log": str(path),
            "findings": [f.model_dump(mode="json") for f in findings],
            "summary": summary.model_dump(mode="json", exclude={"connections"}),
        }, indent=2))
        return EXIT_CHECK_FAILED if errors else 0
    for finding in findings:
        where = f" (lines {', '.join(str(n) for n in finding.lines)})" if finding.lines else ""
        print(f"{finding.severity}: [{finding.code}] {finding.message}{where}")
    if errors:
        raise CheckFailed(f"{len(errors)} error finding(s) in {path}: the run did not use the "
                          "fabric as it should have")
    if not findings:
        print(f"ok: {path}: no problem found"
              + ("" if topology is not None else " (pass --topology for the rail and RDMA checks)"))
    return 0
