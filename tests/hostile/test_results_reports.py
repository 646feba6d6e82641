"""Hostile results.json through `gpuctl report` (surface "results and reports").

The base document is what `gpuctl bench` writes for a real capture (two series, tuned and default,
of the XE9680 all_reduce output, parsed by the real parser), and every case changes it in one way
that a run directory from somewhere else could: wrong types, missing keys, deep nesting, huge
integers, +-1e308, NaN and Infinity, mathtext, NUL, Markdown/HTML/script/terminal injection in
every string field, huge arrays, a date of year 9999, bytes that are not UTF-8, and a results.json
that is a link, a FIFO, a device, a directory or a 5 GiB sparse file. Each case runs the real CLI
(`run_case`) and is counted: 0 internal errors, 0 hangs, 0 leaks, 0 actions, where an action is a
write anywhere but inside the case's `-o` directory, or through a link planted there.

A written page must also be safe to open: the HTML (and the Markdown, rendered by markdown-it:
CommonMark with tables and raw HTML on) may hold only the elements and attributes the report
itself writes, images only its own PNGs, and no character that steers a terminal.

matplotlib costs about 0.15 s a plot, so most cases use a base whose series all failed (nothing to
plot: no PNG); the cases whose values reach a plot (run names, numbers at the edge of the range)
use the base with its curves.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from tests.conftest import REPO
from tests.hostile.harness import CANARIES, Outcome, run_case, tally
from toolkit.bench.expectation import judge_run
from toolkit.bench.nccl_tests import parse_nccl_tests
from toolkit.bench.results import (
    LaunchCheck,
    LogCheck,
    Price,
    RankPlacement,
    Results,
    RunMeta,
    Setting,
    dump,
    series_from_result,
)

SURFACE = "results and reports"
CAPTURE = (REPO / "tests" / "captures" / "nccl_tests"
           / "h100-xe9680-2node-16gpu-8x400g-ib-allreduce-mpi-warning-in-devlist.txt")

# A credential in a well-known form (not the environment's): the page must not carry it either.
PLAIN_SECRET = "plainSecretInResults"
# What can reach a page from a string field.
PAYLOADS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "[click](javascript:alert(1)) ![x](http://evil.example/x.png) <http://evil.example>",
    "| injected | cells |\n# heading\n---",
    "$\\frac{}$ and $x^$",
    "a\x00b \x1b[2J\x1b]0;retitled\x07\u202eevil\u2028next",
    "**bold** `code` ~~gone~~ &amp; &#60;b&#62; <!-- x",
    f"{CANARIES['ALICLOUD_ACCESS_KEY']} TENCENTCLOUD_SECRET_KEY={PLAIN_SECRET}",
]
# Run names (directory names: no NUL, no /) whose text reaches a plot's legend.
LABELS = ["$\\frac{}$", "_hidden", "<script>x</script>", "a\x1b[31mred", "\u202eevil", "$a$b$", "x" * 200]
# Elements and attributes the report writes (markdown-it adds thead/tbody); img src only its PNGs.
TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "table", "thead", "tbody",
        "tr", "th", "td", "img", "ul", "li"}
ATTRIBUTES = {("html", "lang"), ("meta", "charset"), ("p", "class"), ("img", "src"), ("img", "alt")}
PNG = re.compile(r"busbw-[A-Za-z0-9_]+\.png")
STEERING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
PAGES = {"report.html", "report.md"}


def _base() -> dict[str, Any]:
    result = parse_nccl_tests(CAPTURE.read_text(), CAPTURE.name)
    log_check = LogCheck(verdict="ok", messages=["fabric used: NET/IB on 8 rails"],
                         rails={"node-a": ["NET/IB/0 (mlx5_0)"], "node-b": ["NET/IB/0 (mlx5_0)"]})
    launch = LaunchCheck(ok=True, problems=[], ranks=[RankPlacement(host="node-a", rank=0, gpu=0, numa="0",
                                                                    bind="numa0:cpus=0-47:numactl")])
    series = [series_from_result(result, variant=variant, repeat=0, source=CAPTURE.name,
                                 expectation=judge_run(result), log_check=log_check)
              for variant in ("tuned", "default")]
    for s in series:
        s.command = "mpirun -np 16 all_reduce_perf -b 8 -e 16G -f 2"
        s.launch = launch
        s.errors = ["line 60: Test NCCL failure"]
    meta = RunMeta(cluster="c", provider="alicloud", region="cn-wulanchabu", instance_type="ecs.ebmgn8v.48xlarge",
                   nodes=2, gpus_per_node=8, nccl_version="2.26.2+cuda12.8", started_at="2026-12-01T08:00:00Z",
                   settings=[Setting(key="NCCL_IB_GID_INDEX", value="3", default=None, source="vendor profile")],
                   price=Price(cny_per_hour=100.0, usd_per_hour=14.0, source="test value, not a real price"),
                   replayed=None)
    data: dict[str, Any] = json.loads(dump(Results(meta=meta, series=series)))
    return data


BASE = _base()


def _no_plot(doc: dict[str, Any]) -> dict[str, Any]:
    """The same document with every series failed: nothing to plot, so no PNG (and no matplotlib)."""
    doc = copy.deepcopy(doc)
    for s in doc["series"]:
        s["failed"] = True
    return doc


QUIET = _no_plot(BASE)
# For the cases about strings: two points a series are enough, and copy in a fraction of the time.
SMALL = copy.deepcopy(QUIET)
for _series in SMALL["series"]:
    _series["points"] = _series["points"][-2:]


def _leaves(node: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, value) of every leaf, the first element of each list only (the rest are alike)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*at, key))
    elif isinstance(node, list):
        if node:
            yield from _leaves(node[0], (*at, 0))
    else:
        yield at, node


def _nodes(node: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    if isinstance(node, dict):
        yield at, node
        for key, value in node.items():
            yield from _nodes(value, (*at, key))
    elif isinstance(node, list) and node:
        yield from _nodes(node[0], (*at, 0))


def _set(doc: dict[str, Any], at: tuple[Any, ...], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    target: Any = doc
    for key in at[:-1]:
        target = target[key]
    target[at[-1]] = value
    return doc


def _string_fields(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    found = [at for at, value in _leaves(doc) if isinstance(value, str) and at[-1] not in ("variant", "collective",
                                                                                          "verdict")]
    return [*found, ("series", 0, "log_check", "rails", "<key>")]


def _with_string(doc: dict[str, Any], at: tuple[Any, ...], payload: str) -> dict[str, Any]:
    if at[-1] == "<key>":  # a host name is a key of rails
        doc = copy.deepcopy(doc)
        for s in doc["series"]:
            s["log_check"]["rails"] = {payload: ["NET/IB/0 (mlx5_0)", payload]}
        return doc
    return _set(doc, at, payload)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in TAGS:
            self.problems.append(f"element <{tag}>")
        for name, value in attrs:
            if (tag, name) not in ATTRIBUTES:
                self.problems.append(f"attribute {name} on <{tag}>")
            if (tag, name) == ("img", "src") and not PNG.fullmatch(value or ""):
                self.problems.append(f"image {value!r}")

    def handle_comment(self, data: str) -> None:
        self.problems.append("a comment")


def _page_problems(out: Path) -> list[str]:
    """What makes a written page unsafe to open or to cat."""
    problems: list[str] = []
    for page in sorted(p for p in out.iterdir() if p.name in PAGES):
        text = page.read_text(encoding="utf-8")
        if STEERING.search(text):
            problems.append(f"{page.name}: a terminal control character")
        if PLAIN_SECRET in text:
            problems.append(f"{page.name}: a credential")
        if page.suffix == ".md":
            if re.search(r"(?<!\\)[$~]", text):
                problems.append(f"{page.name}: an unescaped $ or ~ (GitHub maths, strikethrough)")
            text = MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
        parser = _Tags()
        parser.feed(text)
        problems += [f"{page.name}: {p}" for p in parser.problems]
    return problems


class Corpus:
    """Runs cases in their own directories under `root` and keeps what went wrong."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.count = 0
        self.failures: list[str] = []
        self.codes: list[int | None] = []

    def report(self, label: str, content: dict[str, Any] | bytes | None, *, fmt: str = "html",
               run_name: str = "run", prepare: Any = None, out_name: str = "out") -> Outcome:
        self.count += 1
        case = self.root / f"case{self.count}"
        run = case / run_name
        run.mkdir(parents=True)
        if content is not None:
            raw = content if isinstance(content, bytes) else json.dumps(content).encode()
            (run / "results.json").write_bytes(raw)
        outside = case / "outside"
        outside.mkdir()
        (outside / "victim.txt").write_text("untouched\n")
        out = case / out_name
        if prepare is not None:
            prepare(case, run, out)
        before = _snapshot(case, skip=out)
        outcome = run_case(label, ["report", str(run), "-o", str(out), "--format", fmt], home=case / "home",
                           scan=[out])
        actions = _actions(case, out, before, page=f"report.{fmt}" if outcome.code == 0 else None)
        tally(SURFACE).record(outcome, actions=actions)
        self.codes.append(outcome.code)
        problems = outcome.problems() + [f"acted on {a}" for a in actions]
        if outcome.code == 0 and out.is_dir():
            problems += _page_problems(out)
        if problems:
            self.failures.append(f"{label}: " + "; ".join(problems))
        return outcome


def _snapshot(case: Path, *, skip: Path) -> dict[str, tuple[int, int, str]]:
    """Every path under `case` but the output directory: (mode, size, link target or content hash)."""
    found: dict[str, tuple[int, int, str]] = {}
    for root, dirs, files in os.walk(case, followlinks=False):
        if Path(root) == skip or skip in Path(root).parents:
            dirs[:] = []
            continue
        for name in dirs + files:
            path = Path(root) / name
            if path == skip:
                continue
            info = os.lstat(path)
            detail = os.readlink(path) if path.is_symlink() else (
                path.read_bytes()[:4096].hex() if path.is_file() and info.st_size < 1 << 20 else "")
            found[str(path.relative_to(case))] = (info.st_mode, info.st_size, detail)
    return found


def _actions(case: Path, out: Path, before: dict[str, tuple[int, int, str]], *, page: str | None) -> list[str]:
    """Writes outside `out` (anything under the case changed but the home), or through a link in it:
    the page written (`page`, on success) must be a regular file, and so must every PNG."""
    after = _snapshot(case, skip=out)
    changed = [name for name in sorted(set(before) | set(after))
               if before.get(name) != after.get(name) and not name.startswith("home")]
    actions = [f"{name} outside the output directory" for name in changed]
    if out.is_dir() and not out.is_symlink():
        for entry in out.iterdir():
            written = entry.name == page or PNG.fullmatch(entry.name)
            if written and (entry.is_symlink() or not entry.is_file()):
                actions.append(f"{entry} left as a link or not a file")
            elif not written and entry.name not in PAGES and not entry.name.startswith("planted"):
                actions.append(f"{entry}: a file the report does not write")
    return actions


# ------------------------------------------------------------------------------------------ cases


def test_wrong_types_and_missing_keys(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path)
    for at, value in _leaves(SMALL):
        wrong = ([1, {"a": 1}] if isinstance(value, str) else
                 ["many", []] if isinstance(value, (int, float)) and not isinstance(value, bool) else
                 ["yes", 2] if isinstance(value, bool) else ["x", [1]])
        for bad in wrong:
            corpus.report(f"type {at}={bad!r}", _set(SMALL, at, bad), fmt="md" if corpus.count % 2 else "html")
    for at, node in _nodes(SMALL):
        for key in node:
            doc = copy.deepcopy(SMALL)
            target: Any = doc
            for part in at:
                target = target[part]
            del target[key]
            corpus.report(f"missing {(*at, key)}", doc)
    assert corpus.count >= 180
    assert not corpus.failures, "\n".join(corpus.failures[:20])


def test_numbers_at_and_past_the_edge(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path)
    numeric = [at for at, value in _leaves(SMALL) if isinstance(value, (int, float)) and not isinstance(value, bool)]
    # As JSON text: what json.dumps cannot write (NaN, Infinity, 1e999) and integers of any size;
    # every value on the fields a page computes with, three on every other number.
    computed = {"busbw_gbps", "size_bytes", "cny_per_hour", "expected_busbw_gbps", "nodes", "peak_busbw_gbps"}
    refused = ("1e308", "-1e308", "1e999", "NaN", "Infinity", "-Infinity", str(2**64), str(-(2**63) - 1),
               "9" * 400, "9" * 5000)
    for at in numeric:
        for text in ((*refused, "5e-324", "-0.0") if at[-1] in computed else ("1e999", "NaN", "9" * 5000)):
            marker = "__NUMBER__"
            raw = json.dumps(_set(SMALL, at, marker)).replace(f'"{marker}"', text).encode()
            code = corpus.report(f"number {at}={text[:20]}", raw).code
            if text in refused:
                assert code == 5, f"{at}={text[:20]}: exit {code}, expected a refusal (exit 5)"
    # In range but extreme, on a document with curves: the plot, the ratios and the formats.
    point = ("series", 0, "points", 31, "out_of_place", "busbw_gbps")
    size = ("series", 0, "points", 31, "size_bytes")
    edges = ((point, 1e15), (point, -1e15), (point, 5e-324), (size, 2**63 - 1), (size, -5),
             (("series", 0, "expectation", "expected_busbw_gbps"), 1e-300), (("meta", "price", "cny_per_hour"), 1e15),
             (("series", 0, "peak_busbw_gbps"), 1e-300))
    for at, value in edges:
        assert corpus.report(f"edge {at}={value}", _set(BASE, at, value)).code == 0
    assert corpus.count >= 100
    assert not corpus.failures, "\n".join(corpus.failures[:20])


def test_injection_in_every_string_field(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path)
    fields = _string_fields(SMALL)
    assert len(fields) >= 25
    for number, at in enumerate(fields):
        for which, payload in enumerate(PAYLOADS):
            fmt = ("html", "md")[(number + which) % 2]  # each field sees each payload, in both formats over all
            corpus.report(f"{fmt} {at}={payload[:30]!r}", _with_string(SMALL, at, payload), fmt=fmt)
    # Every field with a payload at once, on curves (the plot path), and run names in the legend.
    loaded = copy.deepcopy(BASE)
    for number, at in enumerate(fields):
        loaded = _with_string(loaded, at, PAYLOADS[number % len(PAYLOADS)])
    for fmt in ("html", "md"):
        assert corpus.report(f"{fmt} every field", loaded, fmt=fmt).code == 0
    for label in LABELS:
        assert corpus.report(f"run name {label!r}", BASE, run_name=label, fmt="md").code == 0
    assert corpus.count >= 200
    assert not corpus.failures, "\n".join(corpus.failures[:20])


def test_structure_encoding_and_size(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path)
    text = json.dumps(SMALL)
    for depth in (17, 1000, 100_000):
        corpus.report(f"nested lists {depth}", ("[" * depth + "]" * depth).encode())
        corpus.report(f"nested in a field {depth}", text.replace('"c"', "[" * depth + "]" * depth, 1).encode())
        corpus.report(f"nested objects {depth}", ('{"a":' * depth + "1" + "}" * depth).encode())
    for raw in (b"", b"null", b"[]", b"{}", b'"text"', b"\xff\xfe{\x00}\x00", b"\xef\xbb\xbf" + text.encode(),
                text.encode("utf-16"), text.encode().replace(b'"c"', b'"\xc3\x28"'), os.urandom(4096),
                text.encode().replace(b'"c"', b'"\\ud800"')):
        corpus.report(f"bytes {raw[:12]!r}", raw)
    for cut in range(1, len(text), len(text) // 25):
        corpus.report(f"cut at {cut}", text[:cut].encode())
    for value in ("9999-12-31T23:59:59Z", "9999", "", "yesterday", "0000-00-00T00:00:00Z"):
        assert corpus.report(f"started_at {value!r}", _set(SMALL, ("meta", "started_at"), value)).code == 0
    # Huge arrays: many points, many series, many collectives (no plot for each: refused past 16).
    many_points = _set(QUIET, ("series", 0, "points"), QUIET["series"][0]["points"] * 250)
    assert corpus.report("8000 points", many_points).code == 0
    many_series = _set(SMALL, ("series",), SMALL["series"] * 200)
    assert corpus.report("400 series", many_series, fmt="md").code == 0
    long_string = _set(SMALL, ("meta", "cluster"), "x" * 5_000_000)
    assert corpus.report("a 5 MB string", long_string).code == 0
    collectives = copy.deepcopy(BASE)
    collectives["series"] = [dict(BASE["series"][0], collective=f"c{n}") for n in range(40)]
    assert corpus.report("40 collectives with curves", collectives).code == 2
    path_name = _set(BASE, ("series", 0, "collective"), "../../outside/x")
    assert corpus.report("a collective that is a path", path_name).code == 5
    assert corpus.count >= 50
    assert not corpus.failures, "\n".join(corpus.failures[:20])


def test_files_that_are_not_results_and_outputs_that_are_traps(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path)

    def link_to(target: str | Path) -> Callable[[Path, Path], None]:
        return lambda path, case: path.symlink_to(case / target if target != "/dev/zero" else target)

    def fifo_beside(path: Path, case: Path) -> None:
        os.mkfifo(case / "outside" / "fifo")
        path.symlink_to(case / "outside" / "fifo")

    def sparse(path: Path, case: Path) -> None:
        path.write_bytes(b"{")
        os.truncate(path, 5 << 30)

    def real_elsewhere(path: Path, case: Path) -> None:
        (case / "outside" / "r.json").write_text(json.dumps(QUIET))
        path.symlink_to(case / "outside" / "r.json")

    traps: dict[str, Callable[[Path, Path], None]] = {
        "a FIFO": lambda path, case: os.mkfifo(path),
        "a link to /dev/zero": link_to("/dev/zero"),
        "a link to a FIFO": fifo_beside,
        "a directory": lambda path, case: path.mkdir(),
        "a link loop": link_to("run/results.json"),
        "a dangling link": link_to("nowhere"),
        "a 5 GiB sparse file": sparse,
        "a link to a real results.json": real_elsewhere,
    }
    for name, make in traps.items():
        def prepare(case: Path, run: Path, out: Path, make: Callable[[Path, Path], None] = make) -> None:
            make(run / "results.json", case)
        code = corpus.report(f"results.json is {name}", None, prepare=prepare).code
        assert code == (0 if name == "a link to a real results.json" else 2), f"{name}: exit {code}"

    # The run directory itself is not one.
    def run_dir_fifo(case: Path, run: Path, out: Path) -> None:
        run.rmdir()
        os.mkfifo(run)

    def run_dir_file(case: Path, run: Path, out: Path) -> None:
        run.rmdir()
        run.write_text("{}")

    corpus.report("run dir is a FIFO", None, prepare=run_dir_fifo)
    corpus.report("run dir is a file", None, prepare=run_dir_file)

    # Links planted in the output directory: each is replaced by the report's own file, never written through.
    def plant(*names: str) -> Any:
        def prepare(case: Path, run: Path, out: Path) -> None:
            out.mkdir()
            for n in names:
                (out / n).symlink_to(case / "outside" / "victim.txt")
            (out / "planted-dir").mkdir()
        return prepare

    for fmt in ("html", "md"):
        assert corpus.report(f"{fmt}: links planted", BASE, fmt=fmt,
                             prepare=plant("report.html", "report.md", "busbw-all_reduce.png")).code == 0
    def page_is_a_directory(case: Path, run: Path, out: Path) -> None:
        (out / "report.html").mkdir(parents=True)

    corpus.report("report.html is a directory", BASE, prepare=page_is_a_directory)
    corpus.report("-o is a file", QUIET, prepare=lambda case, run, out: out.write_text("a file"))
    corpus.report("-o under a file", QUIET, out_name="outside/victim.txt/out")
    corpus.report("-o is a dangling link", QUIET, prepare=lambda case, run, out: out.symlink_to(case / "nowhere"))
    corpus.report("-o is a FIFO", QUIET, prepare=lambda case, run, out: os.mkfifo(out))
    assert corpus.count >= 17
    assert not corpus.failures, "\n".join(corpus.failures[:20])


def test_the_surface_is_clean() -> None:
    """The whole surface's counts (the tests above fed it; alone, this checks what ran)."""
    counts = tally(SURFACE)
    assert counts.internal == counts.hangs == counts.leaks == counts.actions == 0, counts.line()
