"""`results.json`: what one bench run measured, in one document that `gpuctl report` reads.

A run directory holds the raw nccl-tests outputs and this file. The file is built from parsed
outputs (`series_from_result`), never typed by hand, so every number in it can be traced back to a
line of a log (`Series.source`, `Point.line`). A value gpuctl does not know is `null`, never a made-up
number: a run without a price has `price: null`, and no cost per bandwidth is computed for it.

`docs/schemas/results.schema.json` is generated from these models (`write_schema`, run by
`GPUCTL_UPDATE_GOLDEN=1 pytest tests/bench/test_report.py`); docs/bench.md describes the fields.

`load` trusts nothing in the file (a run directory can come from anywhere): it reads a regular file
of at most `RESULTS_LIMIT` bytes, refuses what strict JSON refuses (NaN, Infinity, bytes that are not
UTF-8), and before the schema looks at it, any nesting deeper than `MAX_DEPTH` and any number a
measurement can never be (not finite, beyond `MAX_FLOAT`, an integer beyond 64 bits), so that no
arithmetic, format or plot downstream overflows. Each refusal names the file and the field.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolkit.bench.expectation import RunExpectation
from toolkit.bench.nccl_tests import Measurement, NcclTestsResult, collective
from toolkit.errors import ParseError, UsageError
from toolkit.files import MIB, FileError, read_bounded

SCHEMA_VERSION: Literal[1] = 1
FILE_NAME = "results.json"
# gpuctl bench writes about 16 KB per series (32 sizes) plus 150 bytes per rank when it checked the
# launch: 5 collectives x 2 variants x 10 repeats on 1,024 GPUs is about 17 MB. A larger file was
# not written by gpuctl bench.
RESULTS_LIMIT = 64 * MIB
# results.json nests 6 deep (series[].launch.ranks[].host); anything far deeper is not one.
MAX_DEPTH = 16
# No measurement, count or price is larger (busbw in GB/s, time in us, yuan per hour); 1e15 leaves
# every ratio and format gpuctl computes from these finite.
MAX_FLOAT = 1e15
MAX_INT = 2**63 - 1  # sizes in bytes are 64-bit in nccl-tests
# What a series' collective may be called: the name of an nccl-tests binary less `_perf`; it becomes
# a file name in the report (busbw-<collective>.png).
COLLECTIVE_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "schemas" / "results.schema.json"

Variant = Literal["tuned", "default"]


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Setting(_Doc):
    key: str = Field(description="an NCCL environment variable, e.g. NCCL_IB_GID_INDEX")
    value: str = Field(description="the value the run used")
    default: str | None = Field(description="NCCL's own default; null where NCCL picks it at run time")
    source: str = Field(description="which layer set it: vendor profile, topology rule, user override")


class Price(_Doc):
    cny_per_hour: float | None = Field(description="the whole cluster per hour in CNY (¥); null when unknown")
    usd_per_hour: float | None = Field(description="the whole cluster per hour in USD ($); null when unknown")
    source: str = Field(description="where the price comes from (catalog row, price API) and its date")


class RunMeta(_Doc):
    cluster: str
    provider: str = Field(description="alicloud, tencentcloud or local")
    region: str | None
    instance_type: str | None
    nodes: int
    gpus_per_node: int
    nccl_version: str | None = Field(description="as nccl-tests printed it, e.g. 2.26.5+cuda12.2")
    started_at: str | None = Field(description="UTC, ISO 8601 with Z")
    settings: list[Setting] = Field(
        description="the NCCL settings of the tuned variant that differ from NCCL's defaults")
    price: Price | None = Field(description="null when no price is known: no cost figure is computed")
    replayed: str | None = Field(
        default=None,
        description="set when the outputs were replayed by lab stand-ins from real captures of other "
                    "machines: says so; nothing in the run was measured on this cluster")


class Point(_Doc):
    """One message size of one run: nccl-tests' row."""

    line: int = Field(description="the row's line in Series.source")
    size_bytes: int
    count: int
    type: str
    redop: str | None
    out_of_place: Measurement
    in_place: Measurement | None


class LogCheck(_Doc):
    verdict: Literal["ok", "problem", "unknown"] = Field(description="the check-log verdict on this output")
    messages: list[str] = Field(description="its findings, one line each: fabric used, rails, GPUDirect RDMA")
    rails: dict[str, list[str]] = Field(
        default_factory=dict,
        description="per host, the network devices NCCL's connections went through (NET/IB/0 (mlx5_0)); "
                    "hosts without a network connection are left out")


class RankPlacement(_Doc):
    """Where one rank ran, as the rank wrapper reported it."""

    host: str
    rank: int
    gpu: int
    numa: str = Field(description="the GPU's NUMA node from the detected topology; '-' where it names none")
    bind: str = Field(description="numa<N>:cpus=<list>:<tool>, or none:<why>")


class LaunchCheck(_Doc):
    ok: bool = Field(description="every rank started where asked, bound and set as its variant says")
    problems: list[str]
    ranks: list[RankPlacement]


class Series(_Doc):
    """One nccl-tests run: one collective, one variant, one repeat."""

    collective: str = Field(pattern=f"^{COLLECTIVE_NAME.pattern}$",
                            description="all_reduce, all_gather, alltoall, ... (the binary without _perf)")
    variant: Variant = Field(description="tuned: gpuctl's settings; default: NCCL's defaults")
    repeat: int = Field(description="0, 1, ...: the order of interleaved repeats")
    source: str = Field(description="the output file, relative to the run directory")
    ranks: int
    points: list[Point]
    avg_busbw_gbps: float | None = Field(description="nccl-tests' `Avg bus bandwidth`; null when cut or failed")
    peak_busbw_gbps: float | None
    peak_size_bytes: int | None
    truncated: bool = Field(description="the output stopped before its summary line")
    failed: bool = Field(description="the run failed: its numbers are not a bandwidth")
    errors: list[str]
    expectation: RunExpectation | None = Field(description="the busbw model's verdict; null when not judged")
    log_check: LogCheck | None = Field(description="null when the output had no NCCL log to check")
    command: str | None = Field(default=None, description="the command run on the launch node")
    launch: LaunchCheck | None = Field(default=None, description="the rank reports' check; null outside gpuctl bench")


class Results(_Doc):
    schema_version: Literal[1] = SCHEMA_VERSION
    meta: RunMeta
    series: list[Series]


def series_from_result(result: NcclTestsResult, *, variant: Variant, repeat: int, source: str,
                       expectation: RunExpectation | None = None,
                       log_check: LogCheck | None = None, launched: str | None = None) -> Series:
    """A parsed nccl-tests run as a results.json series. The collective must be known: from the
    output (`# Collective test starting`, the command line) or its table, else the one gpuctl
    launched (`launched`); else refused."""
    name = collective(result) or launched
    if name is None:
        raise ParseError("the output does not name its collective (no `*_perf` command or "
                         "`Collective test starting` line), so its series cannot be labelled", source=source)
    if not COLLECTIVE_NAME.fullmatch(name):
        raise ParseError(f"the output names its collective {_shown(name)!r}, which is not the name of an "
                         "nccl-tests binary (letters, digits and _)", source=source)
    return Series(
        collective=name, variant=variant, repeat=repeat, source=source, ranks=result.ranks,
        points=[Point(line=r.line, size_bytes=r.size_bytes, count=r.count, type=r.type, redop=r.redop,
                      out_of_place=r.out_of_place, in_place=r.in_place) for r in result.rows],
        avg_busbw_gbps=result.avg_busbw_gbps, peak_busbw_gbps=result.peak_busbw_gbps,
        peak_size_bytes=result.peak_size_bytes, truncated=result.truncated, failed=result.failed,
        errors=result.errors, expectation=expectation, log_check=log_check,
    )


def dump(results: Results) -> str:
    return results.model_dump_json(indent=2) + "\n"


def load(run_dir: Path) -> Results:
    """The results.json of a run directory. A missing directory or file, or one that is not a regular
    file of at most RESULTS_LIMIT bytes, is a usage error (exit 2); a file that is not strict JSON,
    holds a value out of range or does not match the schema is a parse error (exit 5) naming it."""
    path = run_dir / FILE_NAME
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: not a directory; give a bench run directory holding {FILE_NAME}")
    try:
        raw = read_bounded(path, limit=RESULTS_LIMIT, what=FILE_NAME)
    except FileError as error:
        raise FileError(error.path, error.reason,
                        hint=f"give a bench run directory holding the {FILE_NAME} gpuctl bench wrote") from None
    data = _parse_json(raw, str(path))
    _check_values(data, str(path))
    try:
        return Results.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = _where(first["loc"])
        raise ParseError(f"does not match the results.json schema: {where}: {first['msg']}"
                         + (f" (+{error.error_count() - 1} more)" if error.error_count() > 1 else ""),
                         source=str(path), hint="docs/schemas/results.schema.json describes the file") from None


class _NotJsonError(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotJsonError(f"{name} is not a JSON number")


def _parse_json(raw: bytes, source: str) -> Any:
    """Strict JSON: UTF-8, no NaN or Infinity; an error names the line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ParseError(f"not JSON: byte {error.start} is not UTF-8", source=source) from None
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise ParseError(f"not JSON: {error.msg}", source=source, line=error.lineno) from None
    except RecursionError:
        raise ParseError(f"not a results.json: nested far deeper than its {MAX_DEPTH} levels", source=source) from None
    except ValueError as error:  # _NotJsonError, or an integer of more digits than Python converts
        reason = str(error) if isinstance(error, _NotJsonError) else "a number with thousands of digits"
        raise ParseError(f"not JSON gpuctl reads: {reason}", source=source) from None


def _check_values(data: Any, source: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH and numbers no measurement has, naming the field."""
    if _in_range(data, 0):
        return  # the common case, at a fraction of the cost of keeping every field's path
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, at = stack.pop()
        if len(at) > MAX_DEPTH:
            raise ParseError(f"{_where(at[:MAX_DEPTH])}...: nested deeper than {MAX_DEPTH} levels; "
                             "not a results.json", source=source)
        if isinstance(value, dict):
            stack.extend((item, (*at, key)) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((item, (*at, index)) for index, item in enumerate(value))
        elif isinstance(value, float) and not (math.isfinite(value) and abs(value) <= MAX_FLOAT):
            raise ParseError(f"{_where(at)}: {value:g} is not a measurement (a number in {FILE_NAME} is "
                             f"finite and at most {MAX_FLOAT:g} in size)", source=source)
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            raise ParseError(f"{_where(at)}: an integer of {len(str(abs(value)))} digits is out of range "
                             "(at most 64 bits)", source=source)


def _in_range(value: Any, depth: int) -> bool:
    """Whether `value` nests at most MAX_DEPTH deep and holds only numbers in range (NaN is not)."""
    if depth > MAX_DEPTH:
        return False
    kind = type(value)
    if kind is dict:
        value = value.values()
    elif kind is float:
        return bool(-MAX_FLOAT <= value <= MAX_FLOAT)
    elif kind is int:
        return bool(-MAX_INT <= value <= MAX_INT)
    elif kind is not list:
        return True
    return all(_in_range(item, depth + 1) for item in value)


def _where(loc: tuple[str | int, ...] | list[str | int]) -> str:
    """A field path for an error (`series.0.points.3.size_bytes`), each key cut short."""
    return ".".join(_shown(str(part), 40) for part in loc) or "(top level)"


def _shown(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def schema() -> dict[str, Any]:
    body = Results.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "results.json: one gpuctl bench run (metadata, per-collective series, verdicts)",
            **{k: v for k, v in body.items() if k != "title"}}


def schema_text() -> str:
    return json.dumps(schema(), indent=2) + "\n"


def write_schema(path: Path = SCHEMA_PATH) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(schema_text())
    return path
