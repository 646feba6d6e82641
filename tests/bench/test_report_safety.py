"""What `gpuctl report` refuses in a results.json, and what it writes: escaped pages, files only in -o.

Each test is one fix (they fail on the commit before it); the generated corpus is in
tests/hostile/test_results_reports.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import REPO
from toolkit.bench.expectation import judge_run
from toolkit.bench.nccl_tests import parse_nccl_tests
from toolkit.bench.results import Results, RunMeta, dump, series_from_result
from toolkit.cli import main
from toolkit.errors import EXIT_PARSE, EXIT_USAGE, ParseError

CAPTURE = REPO / "tests" / "captures" / "nccl_tests" / "h100-vmware-4vm-32gpu-topo-file-allreduce.txt"


def _doc() -> dict[str, object]:
    result = parse_nccl_tests(CAPTURE.read_text(), CAPTURE.name)
    series = series_from_result(result, variant="tuned", repeat=0, source=CAPTURE.name, expectation=judge_run(result))
    meta = RunMeta(cluster="c", provider="alicloud", region="cn-wulanchabu", instance_type="ecs.gn7i-c32g1.32xlarge",
                   nodes=4, gpus_per_node=8, nccl_version="2.26.2", started_at=None, settings=[], price=None)
    data: dict[str, object] = json.loads(dump(Results(meta=meta, series=[series])))
    return data


def _run(tmp_path: Path, raw: str | bytes, name: str = "run") -> Path:
    directory = tmp_path / name
    directory.mkdir()
    (directory / "results.json").write_bytes(raw.encode() if isinstance(raw, str) else raw)
    return directory


def _report(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["report", *argv])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.err


def test_numbers_no_measurement_has_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = json.dumps(_doc())
    busbw = '"busbw_gbps": 0.0'
    cases: dict[str, tuple[str | bytes, str]] = {
        "nan": (text.replace(busbw, '"busbw_gbps": NaN', 1), "not JSON gpuctl reads: NaN is not a JSON number"),
        "inf": (text.replace(busbw, '"busbw_gbps": 1e999', 1),
                "series.0.points.0.out_of_place.busbw_gbps: inf is not a measurement (a number in results.json is "
                "finite and at most 1e+15 in size)"),
        "big": (text.replace(busbw, '"busbw_gbps": -1e308', 1),
                "series.0.points.0.out_of_place.busbw_gbps: -1e+308 is not a measurement"),
        "int": (text.replace('"nodes": 4', '"nodes": 1' + "0" * 30, 1),
                "meta.nodes: an integer of 31 digits is out of range (at most 64 bits)"),
        "digits": (text.replace('"nodes": 4', '"nodes": 1' + "0" * 5000, 1),
                   "not JSON gpuctl reads: a number with thousands of digits"),
        "deep": ("[" * 100_000 + "]" * 100_000, "not a results.json: nested far deeper than its 16 levels"),
        "nested": (text.replace('"cluster": "c"', '"cluster": ' + "[" * 40 + "]" * 40, 1),
                   "meta.cluster.0.0.0.0.0.0.0.0.0.0.0.0.0.0...: nested deeper than 16 levels; not a results.json"),
        "utf8": (text.replace('"c"', '"\udcff"', 1).encode("utf-8", "surrogateescape"),
                 "not JSON: byte 43 is not UTF-8"),
        "path": (text.replace('"collective": "all_reduce"', '"collective": "../../x"', 1),
                 "does not match the results.json schema: series.0.collective: String should match pattern"),
    }
    for name, (raw, message) in cases.items():
        run = _run(tmp_path, raw, name)
        code, err = _report(capsys, str(run), "-o", str(tmp_path / "out"))
        assert (code, f"{run / 'results.json'}: {message}" in err) == (EXIT_PARSE, True), f"{name}: {code} {err}"
    assert not (tmp_path / "out").exists()


def test_a_results_json_that_is_not_a_regular_file_is_refused_at_once(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "results.json")
    sparse = _run(tmp_path, "{", "sparse")
    os.truncate(sparse / "results.json", 5 << 30)
    zero = tmp_path / "zero"
    zero.mkdir()
    (zero / "results.json").symlink_to("/dev/zero")
    expected = {
        fifo: "is a named pipe (FIFO), not a regular file; give the path of a results.json",
        sparse: "5.0 GiB is far too large for a results.json (at most 64.0 MiB)",
        zero: "is a character device, not a regular file; give the path of a results.json",
    }
    for run, message in expected.items():
        code, err = _report(capsys, str(run), "-o", str(tmp_path / "out"))
        assert code == EXIT_USAGE
        assert f"{run / 'results.json'}: {message}\n  hint: give a bench run directory holding the results.json " \
               "gpuctl bench wrote" in err


def test_a_link_planted_in_the_output_directory_is_replaced_not_written_through(tmp_path: Path) -> None:
    run = _run(tmp_path, json.dumps(_doc()))
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched\n")
    out = tmp_path / "out"
    out.mkdir()
    for name in ("report.html", "busbw-all_reduce.png"):
        (out / name).symlink_to(victim)
    assert main(["report", str(run), "-o", str(out)]) == 0
    assert victim.read_text() == "untouched\n"
    for name in ("report.html", "busbw-all_reduce.png"):
        assert not (out / name).is_symlink()
        assert (out / name).is_file()
    assert (out / "busbw-all_reduce.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_mathtext_and_nul_in_names_draw_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from toolkit.bench.escape import plot_text

    run = _run(tmp_path, json.dumps(_doc()), "$\\frac{}$")
    code, err = _report(capsys, str(run), "-o", str(tmp_path / "out"))
    assert (code, err) == (0, "")
    assert plot_text("$\\frac{}$ tuned") == "\\$\\frac{}\\$ tuned"
    assert plot_text("a\x00b") == "a\\u0000b"
    assert plot_text("_hidden") == " _hidden"  # matplotlib leaves a label starting with _ out of the legend


def test_markdown_escapes_every_string(tmp_path: Path) -> None:
    from toolkit.bench.escape import markdown_text

    doc = _doc()
    meta = doc["meta"]
    assert isinstance(meta, dict)
    meta["provider"] = "<img src=x onerror=alert(1)>|[x](javascript:y)"
    meta["instance_type"] = "$\\frac{}$ **b** `c` ~~s~~ a_b _c_"
    meta["nccl_version"] = "2.26\n# heading\x1b[2J"
    run = _run(tmp_path, json.dumps(doc))
    out = tmp_path / "out"
    assert main(["report", "--format", "md", str(run), "-o", str(out)]) == 0
    text = (out / "report.md").read_text()
    assert "| provider | \\<img src=x onerror=alert(1)\\>\\|\\[x\\](javascript:y) |" in text
    assert "| instance type | \\$\\\\frac{}\\$ \\*\\*b\\*\\* \\`c\\` \\~\\~s\\~\\~ a_b \\_c\\_ |" in text
    assert "| NCCL version | 2.26 \\# heading\\\\u001b\\[2J |" in text
    assert markdown_text("all_reduce NCCL_IB_HCA") == "all_reduce NCCL_IB_HCA"


def test_html_escapes_and_neutralises_every_string(tmp_path: Path) -> None:
    from toolkit.bench.escape import html_text

    doc = _doc()
    meta = doc["meta"]
    assert isinstance(meta, dict)
    meta["provider"] = '"><script>x</script>\x1b]0;t\x07\u202e'
    run = _run(tmp_path, json.dumps(doc), 'a"b<c>')
    out = tmp_path / "out"
    assert main(["report", str(run), "-o", str(out)]) == 0
    text = (out / "report.html").read_text()
    assert ("<tr><th>provider</th><td>&quot;&gt;&lt;script&gt;x&lt;/script&gt;\\u001b]0;t\\u0007\\u202e</td></tr>"
            in text)
    assert "<tr><th></th><th>a&quot;b&lt;c&gt;</th></tr>" in text
    assert html_text("x\x00y") == "x\\u0000y"


def test_a_credential_in_a_results_json_is_not_written_into_the_report(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", "envSecretValue42")
    doc = _doc()
    meta = doc["meta"]
    assert isinstance(meta, dict)
    meta["provider"] = "envSecretValue42 LTAI5tAbCdEfGhIjKlMnOp"
    run = _run(tmp_path, json.dumps(doc))
    out = tmp_path / "out"
    assert main(["report", "--format", "md", str(run), "-o", str(out)]) == 0
    text = (out / "report.md").read_text()
    assert "| provider | \\<TENCENTCLOUD_SECRET_KEY\\> \\<Alibaba AccessKey id\\> |" in text


def test_more_collectives_than_a_report_draws_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _doc()
    series = doc["series"]
    assert isinstance(series, list)
    doc["series"] = [dict(series[0], collective=f"c{n}") for n in range(17)]
    run = _run(tmp_path, json.dumps(doc))
    code, err = _report(capsys, str(run), "-o", str(tmp_path / "out"))
    assert code == EXIT_USAGE
    assert "the runs hold 17 collectives with results; a report draws one plot per collective, at most 16 " \
           "(nccl-tests has 10): report fewer runs at once" in err


def test_a_collective_named_like_a_path_is_refused_by_the_parser() -> None:
    # A node prints its outputs, so their collective name is input: it must not become a path.
    capture = CAPTURE.parent / "h100-1node-8gpu-g8-allgather-ring-8-8g-four-zero-size-rows-nccl2.26.2.txt"
    text = capture.read_text().replace("starting: all_gather_perf", "starting: ../../x_perf")
    result = parse_nccl_tests(text, capture.name)
    with pytest.raises(ParseError, match=r"names its collective '\.\./\.\./x', which is not the name of an nccl"):
        series_from_result(result, variant="tuned", repeat=0, source=capture.name)
