"""nccl-tests result output (`all_reduce_perf`, `alltoall_perf`, ...) into a `NcclTestsResult`.

A run that failed must read as failed, never as a run with zero bandwidth: nccl-tests prints the
error in the middle of a result row and stops without its `Avg bus bandwidth` line. A result with
neither that line nor an error was cut off, and is refused rather than half-read, unless the caller
asks for what is there (`allow_truncated`: `check-log` does, and says the table was cut). Every
busbw 0 while algbw is not (1-rank runs: nccl-tests built without MPI=1 under mpirun) is a failure
too, never a bandwidth of 0.

The output is often interleaved with an `NCCL_DEBUG=INFO` log (both go to the same terminal):
NCCL's lines (`host:pid:tid [dev] NCCL INFO ...`) are skipped here and read by
`topology.nccl_log`. One file may hold several runs (all_reduce_perf then all_gather_perf):
`parse_nccl_tests_runs` cuts it at each run's header.

Formats seen: output pasted outside a markdown code block, every leading "#" gone; the header of
nccl-tests < 2.17 (`# nThread 1 nGpus 8 minBytes ...`) and of 2.17+ (`# nccl-tests version 2.17.6
nccl-headers=22807 ...`, `# Collective test starting: ...`); the `NCCL version` line before or
after the device list; a time column printed with fewer decimals as it grows (`33.66`, `125.8`,
`1125.1`, `15797`); `#wrong` as a count or `N/A`.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.errors import ParseError


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Measurement(_Model):
    """One half (out-of-place or in-place) of a result row."""

    time_us: float
    algbw_gbps: float  # GB/s as nccl-tests prints it (10^9 bytes per second)
    busbw_gbps: float
    wrong: int | None = None  # `#wrong`; None where nccl-tests printed N/A (validation off)


class NcclTestsRow(_Model):
    line: int
    size_bytes: int
    count: int
    type: str
    redop: str | None = None
    root: int | None = None
    out_of_place: Measurement
    in_place: Measurement | None = None


class RankDevice(_Model):
    rank: int
    host: str
    pid: int
    device: int
    bus_id: str  # as printed: "0x04" or "0000:04:00"
    name: str


class NcclTestsResult(_Model):
    source: str
    op: str | None = None  # "alltoall_perf" where the output names it, else None
    nccl_tests_version: str | None = None
    nccl_version: str | None = None
    nccl_headers: str | None = None  # 2.17+: the NCCL version compiled against, "22807"
    nccl_library: str | None = None  # 2.17+: the NCCL library loaded at run time
    parameters: dict[str, str] = Field(default_factory=dict)  # nThread, nGpus, minBytes, ...
    devices: list[RankDevice] = Field(default_factory=list)
    ranks: int = 0
    hosts: list[str] = Field(default_factory=list)
    dtypes: list[str] = Field(default_factory=list)
    redops: list[str] = Field(default_factory=list)
    rows: list[NcclTestsRow] = Field(default_factory=list)
    avg_busbw_gbps: float | None = None
    out_of_bounds: int | None = None
    peak_busbw_gbps: float | None = None
    peak_algbw_gbps: float | None = None
    peak_size_bytes: int | None = None
    peak_placement: Literal["out-of-place", "in-place"] | None = None
    truncated: bool = False  # no summary line and no error, read anyway (`allow_truncated`)
    cut_row_line: int | None = None  # the last line: a result row cut part-way (output stopped mid-line)
    failed: bool = False
    failed_at_size_bytes: int | None = None  # the message size whose row an error cut short
    errors: list[str] = Field(default_factory=list)  # "line N: text" of each failure line
    notes: list[str] = Field(default_factory=list)  # what was left out of the read, and why


_PARAMS = re.compile(r"^#?\s*nThread\s+\d")
_PARAM_PAIR = re.compile(r"([A-Za-z][A-Za-z ]*?):?\s+(\S+)(?=\s+[A-Za-z]|\s*$)")
_TESTS_VERSION = re.compile(r"^#?\s*nccl-tests version (\S+)")
_COLLECTIVE = re.compile(r"^#?\s*Collective test starting:\s*(\S+)")
_COMMAND_OP = re.compile(r"\b(\w+_perf)\b")
_NCCL_VERSION = re.compile(r"NCCL version (\S+)")
_RANK = re.compile(
    r"^#?\s*Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+"
    r"\[([^\]]+)\]\s+(.+?)\s*$"
)
_COLUMNS = re.compile(r"^#?\s*size\s+count\s+type\b")
_AVG = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*(\S+)")
_OOB = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\d+)\s*(\w+)?")
# nccl-tests failure lines: "host: Test CUDA failure file.cu:389 '...'", " .. host pid N: Test
# failure file.cu:519", "Test NCCL failure ...". They may start in the middle of a result row.
_FAILURE = re.compile(r"Test (?:CUDA |NCCL |NVML )?failure|Test failure")
_ROW_START = re.compile(r"^\s*\d+\s+\d+\s")
# An NCCL log line (read by topology.nccl_log, skipped here); searched, as it may follow output.
# Its `host:pid:tid [dev] ` prefix is looked for before the words (`_nccl_log_start`).
_NCCL_LOG_WORDS = re.compile(r"NCCL (?:INFO|WARN|TRACE|ABORT)\b")
# The first header line of a run: where a second run in the same file starts.
_RUN_HEADER = re.compile(r"^#?\s*(?:nccl-tests version |Collective test starting:|nThread\s+\d)")


# What launchers put in front of each line of output: Open MPI's --tag-output ("[1,0]<stdout>:"),
# Slurm's srun --label (" 0: "), torchrun's tee ("[rank0]:", "[default0]:") and MPI's
# -prepend-rank ("[0]", which also lands in the middle of a row that was written in pieces).
_LAUNCHER = re.compile(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|\s*\d+: |\[(?:rank|default)\d+\]:)")
_PREPEND_RANK = re.compile(r"\[\d+\]")


def strip_launcher(line: str) -> str:
    """`line` without a launcher's per-line prefix (see _LAUNCHER); lines without one are unchanged."""
    if (match := _LAUNCHER.match(line)) is not None:
        return line[match.end():]
    if line.startswith("[") and (head := _PREPEND_RANK.match(line)) is not None and head.end() < len(line) \
            and line[head.end()] in " \t#":
        rest = line[head.end():]
        if rest.lstrip(" \t").startswith("#"):
            return rest.lstrip(" \t")  # "[0] # nThread ...": the header line as nccl-tests wrote it
        if _ROW_START.match(rest):
            # a result row written in pieces, each with its prefix: "[0]  1048576 ... -1[0]  1626.5 ..."
            return _PREPEND_RANK.sub(" ", rest)
        return rest
    return line


def looks_like_nccl_tests(text: str) -> bool:
    """nccl-tests output, alone or interleaved with an NCCL log or other program output."""
    # "#" optional: output pasted outside a code block loses it (a markdown heading). A launcher's
    # prefix may come first.
    # [ \t] only, never \s: one that also matches newlines makes runs of blank lines quadratic.
    return bool(re.search(r"^(?:\[\d+,\d+\]<std(?:out|err)>:|[ \t]*\d+: |\[\w+\]:?)?[ \t]*(?:#[ \t]*)?"
                          r"(nThread \d+ nGpus|Avg bus bandwidth|Using devices|"
                          r"nccl-tests version |Collective test starting:|size[ \t]+count[ \t]+type\b)",
                          text, re.M))


def collective(result: NcclTestsResult) -> str | None:
    """The collective a run measured (see `collective_basis`), or None where it cannot tell."""
    return collective_basis(result)[0]


def collective_basis(result: NcclTestsResult) -> tuple[str | None, str]:
    """The collective a run measured and how that is known: named by the output (`all_reduce_perf`
    in the header or the command line), else inferred from the table by nccl-tests' busbw definition
    (doc/PERFORMANCE.md), busbw/algbw over n ranks: 2(n-1)/n with a reduction is an all-reduce,
    (n-1)/n with one a reduce-scatter; (n-1)/n without one is an all-gather or an alltoall, and 1 is
    a broadcast, reduce or sendrecv, which the table alone cannot tell apart."""
    if result.op is not None:
        return result.op.removesuffix("_mpi").removesuffix("_perf"), f"named by the output ({result.op})"
    n = result.ranks
    ratios = {round(m.busbw_gbps / m.algbw_gbps, 2) for r in result.rows
              for m in (r.out_of_place, r.in_place) if m is not None and m.algbw_gbps >= 1.0}
    if n < 2 or not ratios or not result.redops:
        return None, "not named by the output, and the table cannot tell (too few ranks or rows)"

    def all_at(factor: float) -> bool:
        return all(abs(ratio - factor) <= 0.02 for ratio in ratios)

    reduces = "none" not in result.redops
    shown = ", ".join(f"{r:g}" for r in sorted(ratios))
    how = f"inferred: busbw/algbw = {shown} over {n} ranks"
    # n = 2: 2(n-1)/n = 1, the ratio of broadcast, reduce and sendrecv too
    if n >= 3 and reduces and all_at(2 * (n - 1) / n):
        return "all_reduce", f"{how} = 2(n-1)/n with a reduction: an all-reduce"
    if n >= 3 and reduces and all_at((n - 1) / n):
        return "reduce_scatter", f"{how} = (n-1)/n with a reduction: a reduce-scatter"
    if n >= 2 and not reduces and all_at((n - 1) / n):
        return None, f"{how} = (n-1)/n without a reduction: an all-gather or an alltoall, the table cannot tell"
    return None, f"{how}: not named by the output, and no collective's ratio alone"


def _parse_params(line: str) -> dict[str, str]:
    # "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 ..."
    return {key.strip(): value for key, value in _PARAM_PAIR.findall(line.lstrip("#").strip())}


def _measurement(cells: list[str], source: str, line: int) -> Measurement:
    time_us, algbw, busbw, wrong = cells
    try:
        return Measurement(
            time_us=float(time_us), algbw_gbps=float(algbw), busbw_gbps=float(busbw),
            wrong=None if wrong == "N/A" else int(float(wrong)),
        )
    except ValueError:
        raise ParseError(f"cannot read result cells {' '.join(cells)!r}", source=source,
                         line=line) from None


def _row(line: str, prefix: list[str], source: str, number: int) -> NcclTestsRow:
    cells = line.split()
    width = len(prefix)
    # Rows carry the prefix columns and then one or two (time, algbw, busbw, #wrong) groups.
    if len(cells) not in (width + 4, width + 8):
        raise ParseError(f"result row has {len(cells)} cells, expected {width + 8}: "
                         f"{line.strip()!r}", source=source, line=number)
    head = dict(zip(prefix, cells[:width], strict=True))
    try:
        size, count = int(head["size"]), int(head["count"])
        root = int(head["root"]) if "root" in head else None
    except (KeyError, ValueError):
        raise ParseError(f"cannot read result row {line.strip()!r}", source=source,
                         line=number) from None
    rest = cells[width:]
    return NcclTestsRow(
        line=number, size_bytes=size, count=count, type=head.get("type", "?"),
        redop=head.get("redop"), root=root,
        out_of_place=_measurement(rest[:4], source, number),
        in_place=_measurement(rest[4:], source, number) if len(rest) == 8 else None,
    )


def _column_prefix(line: str) -> list[str]:
    # "#  size  count  type  redop  root  time  algbw ...": the names before the first "time".
    names = line.lstrip("#").split()
    return names[: names.index("time")] if "time" in names else names


def parse_nccl_tests_runs(text: str, source: str = "<input>", *,
                          allow_truncated: bool = False) -> list[NcclTestsResult]:
    """Every run in `text`, in order: a new run starts at a header line (`# nThread ...`,
    `# nccl-tests version ...`, `# Collective test starting: ...`) that follows a result table.
    Line numbers stay the file's."""
    lines = text.splitlines()
    starts = [0]
    seen_table = False
    seen_params = False  # the current run printed its `# nThread ...` line
    seen_rank0 = False  # the current run listed its rank 0
    after_summary: int | None = None  # the line after the last run's `# Avg bus bandwidth`
    for index, raw in enumerate(lines):
        line = strip_launcher(raw.rstrip())
        rank = _RANK.match(line)
        new_header = _RUN_HEADER.match(line) and (seen_table or (seen_params and _PARAMS.match(line)))
        # Runs pasted one after another without their `# nThread` line (a README's three tables) start
        # at their device list or column header; two `Rank 0` lines are two runs (two hosts' own,
        # from a build without MPI), never one run of both.
        new_list = (rank is not None and rank.group(1) == "0" and (seen_rank0 or after_summary is not None)) or (
            _COLUMNS.match(line) and after_summary is not None)
        if new_header or new_list:
            # What follows the previous summary (the next command line) belongs to the next run.
            starts.append(after_summary if after_summary is not None and after_summary <= index else index)
            seen_table = seen_params = seen_rank0 = False
            after_summary = None
        if _COLUMNS.match(line):
            seen_table = True
        elif _AVG.match(line):
            seen_table, after_summary = True, index + 1
        elif _PARAMS.match(line):
            seen_params = True
        if rank is not None and rank.group(1) == "0":
            seen_rank0 = True
    ends = [*starts[1:], len(lines)]
    cut_end = bool(text) and not text.endswith(("\n", "\r"))

    def piece(start: int, end: int) -> str:
        # each run's text ends in a newline unless it is the file's own cut end
        body = "\n".join(lines[start:end])
        return "\n" * start + body + ("" if end == len(lines) and cut_end else "\n")

    return [parse_nccl_tests(piece(start, end), source, allow_truncated=allow_truncated)
            for start, end in zip(starts, ends, strict=True)]


def parse_nccl_tests(text: str, source: str = "<input>", *,
                     allow_truncated: bool = False) -> NcclTestsResult:
    """Read one nccl-tests run. Raises `ParseError` for a table it cannot read or an output that
    stops before its summary without saying why (unless `allow_truncated`: then the rows present
    are kept and `truncated` is set)."""
    result = NcclTestsResult(source=source)
    prefix: list[str] | None = None
    last_line = 0
    final = _last_content_line(text)
    for number, raw in enumerate(text.splitlines(), 1):
        line = strip_launcher(raw.rstrip())
        if (log := _nccl_log_start(line)) is not None:
            if result.nccl_version is None and (match := _NCCL_VERSION.search(line, log)):
                result.nccl_version = match.group(1)  # `host:pid:tid [0] NCCL INFO NCCL version 2.26.5+...`
            line = line[:log].rstrip()  # an NCCL log line, or one glued to output
        if not line.strip():
            continue
        last_line = number
        if line.startswith("# source:"):
            continue
        if _RUN_HEADER.match(line) and (prefix is not None or result.rows
                                        or result.avg_busbw_gbps is not None):
            # A log of alltoall_perf then sendrecv_perf would otherwise read as one run with the
            # ranks and rows of both and the name of the last.
            raise ParseError("a second nccl-tests run starts here: read the file with "
                             "parse_nccl_tests_runs", source=source, line=number)
        if _FAILURE.search(line):
            result.failed = True
            result.errors.append(f"line {number}: {line.strip()}")
            if _ROW_START.match(line) and result.failed_at_size_bytes is None:
                result.failed_at_size_bytes = int(line.split()[0])  # the row the error cut
            continue
        if match := _TESTS_VERSION.match(line):
            result.nccl_tests_version = match.group(1)
            for key, value in re.findall(r"nccl-(headers|library)=(\S+)", line):
                setattr(result, f"nccl_{key}", value)
        elif match := _COLLECTIVE.match(line):
            result.op = match.group(1)
        elif _PARAMS.match(line):
            result.parameters = _parse_params(line)
        elif (match := _RANK.match(line)) and number == final and not text.endswith(("\n", "\r")):
            result.notes.append(f"line {number}: the device line is cut ({line.strip()[-40:]!r}): left out")
        elif match := _RANK.match(line):
            rank, pid, host, device, bus_id, name = match.groups()
            result.devices.append(RankDevice(rank=int(rank), host=host, pid=int(pid),
                                             device=int(device), bus_id=bus_id, name=name))
        elif _COLUMNS.match(line):
            prefix = _column_prefix(line)
        elif match := _AVG.match(line):
            try:
                result.avg_busbw_gbps = float(match.group(1))
            except ValueError:
                raise ParseError(f"cannot read average bus bandwidth {match.group(1)!r}",
                                 source=source, line=number) from None
        elif match := _OOB.match(line):
            result.out_of_bounds = int(match.group(1))
            if result.out_of_bounds or (match.group(2) or "OK") != "OK":
                result.failed = True
                result.errors.append(f"line {number}: {line.lstrip('# ').strip()}")
        elif _ROW_START.match(line) and number == final and _cut_row(line, prefix):
            result.cut_row_line = number  # output stopped in the middle of this row: not a value
        elif prefix is not None and _ROW_START.match(line):
            result.rows.append(_row(line, prefix, source, number))
        elif _ROW_START.match(line) and (default := _default_prefix(line)) is not None:
            result.rows.append(_row(line, default, source, number))  # rows posted without header
        elif match := _NCCL_VERSION.search(line):
            result.nccl_version = result.nccl_version or match.group(1)
        elif result.op is None and not line.startswith("#") and (match := _COMMAND_OP.search(line)):
            result.op = match.group(1)  # the command line, where the user pasted it
    _finish(result, prefix, source, last_line, allow_truncated)
    return result


def _nccl_log_start(line: str) -> int | None:
    """Where an NCCL log line starts in `line`: its `host:pid:tid [dev] ` prefix, else `NCCL INFO`
    (WARN, TRACE, ABORT); None when there is none.

    The words are found first and the prefix looked for before them: a regex that puts the
    optional prefix first retries `\\S*` from every character of a long line (quadratic time: a
    1 MB line of output took minutes)."""
    found = _NCCL_LOG_WORDS.search(line)
    if found is None:
        return None
    start = found.start()
    head = line[:start]
    if not head.endswith("] "):
        return start
    bracket = head.rfind("[")
    before = head[:bracket - 1] if bracket > 0 and head[bracket - 1] == " " else ""
    if not before or before[-1].isspace() or "]" in head[bracket:-2]:
        return start
    token = before.rsplit(None, 1)[-1]
    parts = token.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdecimal() and parts[2].isdecimal():
        return len(before) - len(token)
    return start


def _last_content_line(text: str) -> int:
    """The number of the last line holding nccl-tests output (not blank, not an NCCL log line)."""
    last = 0
    for number, raw in enumerate(text.splitlines(), 1):
        raw = strip_launcher(raw)
        line = raw if (log := _nccl_log_start(raw)) is None else raw[:log]
        if line.strip():
            last = number
    return last


def _cut_row(line: str, prefix: list[str] | None) -> bool:
    """A row with fewer cells than a complete one: the output (or the paste of it) stopped
    part-way through the line. Only the file's last line can be that; elsewhere a short row is an
    unreadable table and `_row` says so."""
    width = len(prefix) if prefix is not None else None
    cells = len(line.split())
    if width is None:
        return cells not in _DEFAULT_PREFIXES or not line.split()[2:3] or not line.split()[2].isalpha()
    return cells < width + 8 and cells != width + 4


def _default_prefix(line: str) -> list[str] | None:
    """The columns before the measurements of a row posted without its header: 2.x tables
    (`size count type redop root`, 13 cells) and older ones without `root` (12 cells)."""
    cells = line.split()
    if len(cells) > 2 and cells[2].isalpha():
        return _DEFAULT_PREFIXES.get(len(cells))
    return None


def _interleaved(rows: list[NcclTestsRow]) -> NcclTestsRow | None:
    first: dict[tuple[str, str | None, int | None], int] = {}
    last: dict[tuple[str, str | None, int | None], int] = {}
    for row in rows:
        key = (row.type, row.redop, row.root)
        first.setdefault(key, row.size_bytes)
        if key in last and row.size_bytes < last[key] and row.size_bytes != first[key]:
            return row
        last[key] = row.size_bytes
    return None


_DEFAULT_PREFIXES = {13: ["size", "count", "type", "redop", "root"], 12: ["size", "count", "type", "redop"]}


def _finish(result: NcclTestsResult, prefix: list[str] | None, source: str, last_line: int,
            allow_truncated: bool) -> None:
    header = bool(result.parameters or result.devices)
    if prefix is None and not result.rows and not result.failed and not (allow_truncated and header):
        raise ParseError("no `#  size  count  type ...` column header: not nccl-tests output",
                         source=source, line=1)
    if result.avg_busbw_gbps is None and not result.failed:
        if not (allow_truncated and (result.rows or header)):
            cut = (f" (the last row, line {result.cut_row_line}, stops part-way)"
                   if result.cut_row_line is not None else "")
            raise ParseError(f"no `# Avg bus bandwidth` line and no error: output truncated?{cut}",
                             source=source, line=last_line)
        result.truncated = True
    measured = [m for r in result.rows for m in (r.out_of_place, r.in_place) if m is not None]
    if measured and all(m.busbw_gbps == 0 for m in measured) and any(m.algbw_gbps > 0 for m in measured):
        result.failed = True
        result.errors.append(
            f"busbw is 0 in every row while algbw reaches {max(m.algbw_gbps for m in measured):g} GB/s: "
            "each process ran as a 1-rank communicator, which measures no link (an nccl-tests "
            "binary built without MPI=1 started by mpirun runs one such test per process)")
    back = _interleaved(result.rows)
    if back is not None:
        # One run's sizes only grow; a sweep over types, ops or roots, and a repeat (-N / run_cycles),
        # starts over at its first size. Sizes that go back to anything else under the same type, op
        # and root are two runs' rows interleaved, not one table.
        result.failed = True
        result.errors.append(f"line {back.line}: the size goes back to {back.size_bytes} under the same type, op and "
                             "root, and not to the sweep's first size: rows of more than one run are interleaved, "
                             "so no figure here is one run's")
    if any(m.wrong for r in result.rows for m in (r.out_of_place, r.in_place) if m is not None):
        result.failed = True
        result.errors.append("result rows report #wrong > 0: the collective returned wrong data")
    # A device list may show only its last line (a README's excerpt): rank numbers are a lower bound.
    result.ranks = max(len(result.devices), max((d.rank + 1 for d in result.devices), default=0))
    result.hosts = list(dict.fromkeys(d.host for d in result.devices))
    result.dtypes = list(dict.fromkeys(r.type for r in result.rows))
    result.redops = list(dict.fromkeys(r.redop for r in result.rows if r.redop is not None))
    peak: tuple[float, int, str, float] | None = None
    for row in result.rows:
        for placement, m in (("out-of-place", row.out_of_place), ("in-place", row.in_place)):
            # strictly greater: on a tie the out-of-place figure (listed first) stands
            if m is not None and (peak is None or m.busbw_gbps > peak[0]):
                peak = (m.busbw_gbps, row.size_bytes, placement, m.algbw_gbps)
    if peak is not None:
        result.peak_busbw_gbps, result.peak_size_bytes = peak[0], peak[1]
        result.peak_placement = peak[2]  # type: ignore[assignment]
        result.peak_algbw_gbps = peak[3]
