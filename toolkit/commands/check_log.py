"""`gpuctl check-log FILE [--topology PATH] [--json]`: did an NCCL run use the fabric, and did it
perform as expected?

FILE is an `NCCL_DEBUG=INFO` log, an nccl-tests output, or both interleaved (the usual terminal
capture). The log is checked for socket fallback, a single rail, GPUDirect RDMA per channel and a
VM's emulated PCI bridges; each nccl-tests run has its peak busbw per collective and size printed
and, where the node is known (`--topology`, or the GPU names and NCCL topology print in FILE),
compared with `toolkit.tuning.expected_bw`.

The verdict is `ok` (with the lines that prove it), `problem` or `unknown`. Exit 0 for ok, 8
(`CheckFailed`) for a problem, 9 (`EXIT_UNKNOWN`) when the file does not say enough, 5 when the
file (or the topology capture) cannot be parsed, 2 when it is not a regular file or is larger
than a log gpuctl reads (`toolkit.topology.reading.LOG_LIMIT`, with what to do instead).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolkit.bench.expectation import RunExpectation
    from toolkit.bench.nccl_tests import NcclTestsResult
    from toolkit.topology.log_check import Finding
    from toolkit.topology.nccl_log import Evidence


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("log", metavar="FILE",
                        help="a log of a run with NCCL_DEBUG=INFO, nccl-tests output, or both")
    parser.add_argument(
        "--topology", metavar="PATH",
        help="a gather bundle or capture of the node (as for the detect command): says which RDMA "
             "devices and rails the run could have used, and what busbw to expect",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _size(size: int | None) -> str:
    if size is None:
        return "?"
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size} B ({size // factor} {unit})"
    return f"{size} B"


def _run_findings(result: NcclTestsResult, judged: RunExpectation,
                  log_proves: bool) -> tuple[list[Finding], list[Evidence]]:
    """Findings for one run; `log_proves`: the NCCL log in the file already shows the fabric
    carried the traffic, so a run without an expectation leaves the verdict open no more."""
    from toolkit.topology.log_check import Finding
    from toolkit.topology.nccl_log import Evidence

    name = judged.op or result.op or "nccl-tests"
    peak_row = next((r for r in result.rows if r.size_bytes == result.peak_size_bytes), None)
    lines = [peak_row.line] if peak_row is not None else []
    if judged.verdict == "failed":
        failure_lines = sorted({int(e.split(":", 1)[0].removeprefix("line ")) for e in result.errors
                                if e.startswith("line ")})
        return [Finding(severity="error", code="nccl-tests-failed", message=f"{name}: {judged.message}",
                        lines=failure_lines[:20])], []
    if judged.verdict == "below":
        return [Finding(severity="error", code="busbw-below-expectation",
                        message=f"{name}: {judged.message}; " + "; ".join(judged.reasons), lines=lines)], []
    evidence = [Evidence(line=lines[0], text=f"{name} peak busbw {judged.peak_busbw_gbps:g} GB/s at "
                                             f"{_size(judged.peak_size_bytes)}")] if lines else []
    if judged.verdict == "unknown" and not result.rows:
        return [], []  # said by the nccl-tests-no-result finding
    if judged.verdict == "unknown":
        return [Finding(severity="info" if log_proves else "unknown", code="no-expectation",
                        message=f"{name}: {judged.message}", lines=lines)], evidence
    return [], evidence


def run(args: argparse.Namespace) -> int:
    from toolkit.bench.expectation import judge_run
    from toolkit.bench.nccl_tests import looks_like_nccl_tests, parse_nccl_tests_runs
    from toolkit.commands._inputs import CAPTURES, LOG, require_input
    from toolkit.errors import EXIT_CHECK_FAILED, EXIT_UNKNOWN, CheckFailed
    from toolkit.topology.log_check import LogVerdict, judge_log, order
    from toolkit.topology.model import Topology
    from toolkit.topology.nccl_log import NcclLogSummary, looks_like_nccl_log, parse_nccl_log
    from toolkit.topology.reading import read_log

    path = require_input(args.log, LOG)
    topology_path = require_input(args.topology, CAPTURES, kind="file or directory") if args.topology else None
    text = read_log(path)  # bounded: a FIFO or device refused, at most reading.LOG_LIMIT
    is_log, is_tests = looks_like_nccl_log(text), looks_like_nccl_tests(text)
    summary: NcclLogSummary | None = None
    if is_log or not is_tests:
        summary = parse_nccl_log(text, source=str(path))  # refuses a file that is neither
    results = parse_nccl_tests_runs(text, str(path), allow_truncated=True) if is_tests else []
    topology: Topology | None = None
    if topology_path is not None:
        from toolkit.topology.detect import detect_paths

        topology = detect_paths([topology_path])

    findings: list[Finding] = []
    evidence: list[Evidence] = []
    log_verdict: LogVerdict | None = None
    if summary is not None:
        log_verdict = judge_log(summary, topology)
        if results and log_verdict.verdict == "unknown" and not summary.connections:
            # The log half only carries init/teardown lines; the table decides, and the log's
            # "no transport line" stays as a note.
            log_verdict.findings = [f.model_copy(update={"severity": "info"})
                                    if f.code in ("no-transport", "no-network-connection") else f
                                    for f in log_verdict.findings]
        findings += log_verdict.findings
        evidence += log_verdict.evidence
    runs: list[dict[str, Any]] = []
    for result in results:
        judged = judge_run(result, topology, summary)
        log_proves = log_verdict is not None and log_verdict.verdict == "ok"
        more_findings, more_evidence = _run_findings(result, judged, log_proves)
        if result.truncated:
            failed = summary is not None and bool(summary.error_traces)
            more_findings.append(_truncated(result, failed))
        findings += more_findings
        evidence += more_evidence
        runs.append({"source_line": result.rows[0].line if result.rows else None,
                     **judged.model_dump(mode="json"), "truncated": result.truncated})
    findings = order(findings)
    if any(f.severity == "error" for f in findings):
        verdict = "problem"
    elif any(f.severity == "unknown" for f in findings) or not evidence:
        verdict = "unknown"
    else:
        verdict = "ok"

    if args.json:
        report: dict[str, Any] = {
            "verdict": verdict,
            "findings": [f.model_dump(mode="json") for f in findings],
            "evidence": [e.model_dump(mode="json") for e in evidence],
            "ok": verdict == "ok",
            "log": str(path),
            "runs": runs,
        }
        if summary is not None:
            report["summary"] = summary.model_dump(mode="json", exclude={"connections", "quotes"})
        print(json.dumps(report, indent=2))
        return {"ok": 0, "problem": EXIT_CHECK_FAILED}.get(verdict, EXIT_UNKNOWN)

    for result, shown in zip(results, runs, strict=True):
        name = shown["op"] or result.op or "nccl-tests"
        if shown["verdict"] == "failed":
            print(f"{name}: FAILED, no bandwidth: {shown['message']}")
            continue
        peak = shown["peak_busbw_gbps"]
        if peak is None:
            print(f"{name}: {shown['message']}")
            continue
        print(f"{name}: peak busbw {peak:g} GB/s at {_size(shown['peak_size_bytes'])} "
              f"({result.peak_placement})")
        print(f"  {shown['message']}")
        for reason in shown["reasons"]:
            print(f"    - {reason}")
    for finding in findings:
        where = f" (lines {', '.join(str(n) for n in finding.lines)})" if finding.lines else ""
        print(f"{finding.severity}: [{finding.code}] {finding.message}{where}")
    if verdict == "problem":
        errors = sum(1 for f in findings if f.severity == "error")
        raise CheckFailed(f"{errors} error finding(s) in {path}: the run did not use the fabric or "
                          "perform as it should have")
    if evidence:
        print("evidence:")
        for item in evidence:
            print(f"  line {item.line}: {item.text}")
    if verdict == "unknown":
        print(f"unknown: {path}: not enough in the file to decide"
              + ("" if topology is not None else " (pass --topology with the node's capture)"))
        return EXIT_UNKNOWN
    print(f"ok: {path}: no problem found")
    return 0


def _truncated(result: NcclTestsResult, summary_failed: bool) -> Finding:
    from toolkit.topology.log_check import Finding

    if not result.rows:
        return Finding(severity="error" if summary_failed else "unknown", code="nccl-tests-no-result",
                       message="the nccl-tests output stops after its header, before any result row"
                               + (": the run failed (see the NCCL error)" if summary_failed else ""),
                       lines=[])
    last = result.rows[-1]
    return Finding(severity="warning", code="nccl-tests-truncated",
                   message=f"the nccl-tests table stops at {last.size_bytes} B without its "
                           "`# Avg bus bandwidth` line: the peak is that of the rows present",
                   lines=[last.line])
