"""results.json and `gpuctl report`, built from real captures through the parser."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from PIL import Image

from tests.conftest import REPO
from toolkit.bench.expectation import judge_run
from toolkit.bench.nccl_tests import parse_nccl_tests
from toolkit.bench.results import SCHEMA_PATH, Price, Results, RunMeta, Setting, dump, schema_text, series_from_result
from toolkit.cli import main
from toolkit.errors import EXIT_PARSE, EXIT_USAGE

CAPTURES = REPO / "tests" / "captures" / "nccl_tests"
XE9680 = CAPTURES / "h100-xe9680-2node-16gpu-8x400g-ib-allreduce-mpi-warning-in-devlist.txt"
VMWARE = CAPTURES / "h100-vmware-4vm-32gpu-topo-file-allreduce.txt"
UPDATE = os.environ.get("GPUCTL_UPDATE_GOLDEN") == "1"


def _run_dir(tmp: Path, name: str, capture: Path, meta: RunMeta) -> Path:
    result = parse_nccl_tests(capture.read_text(), capture.name)
    series = series_from_result(result, variant="tuned", repeat=0, source=capture.name, expectation=judge_run(result))
    directory = tmp / name
    directory.mkdir()
    (directory / "results.json").write_text(dump(Results(meta=meta, series=[series])))
    return directory


def _meta(nodes: int, price: Price | None) -> RunMeta:
    # Run metadata is what the bench would record; the numbers all come from the captures.
    return RunMeta(cluster="c", provider="alicloud", region="cn-wulanchabu", instance_type="ecs.ebmgn8v.48xlarge",
                   nodes=nodes, gpus_per_node=8, nccl_version="2.26.2+cuda12.8", started_at=None,
                   settings=[Setting(key="NCCL_IB_GID_INDEX", value="3", default=None, source="vendor profile")],
                   price=price)


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    priced = Price(cny_per_hour=100.0, usd_per_hour=None, source="test value, not a real price")
    return (_run_dir(tmp_path, "xe9680", XE9680, _meta(2, priced)),
            _run_dir(tmp_path, "vmware", VMWARE, _meta(4, None)))


def test_schema_file_matches_the_model() -> None:
    if UPDATE:
        SCHEMA_PATH.write_text(schema_text())
    assert SCHEMA_PATH.read_text() == schema_text(), "run with GPUCTL_UPDATE_GOLDEN=1 and review the diff"


def test_results_round_trip_from_a_real_capture(two_runs: tuple[Path, Path]) -> None:
    data = json.loads((two_runs[0] / "results.json").read_text())
    assert data["schema_version"] == 1
    series = data["series"][0]
    assert (series["collective"], series["ranks"], len(series["points"])) == ("all_reduce", 16, 32)
    assert (series["peak_busbw_gbps"], series["peak_size_bytes"]) == (469.21, 17179869184)
    assert series["avg_busbw_gbps"] == 139.56
    assert series["points"][-1]["out_of_place"]["busbw_gbps"] == 469.21
    assert Results.model_validate(data).meta.price is not None


def _png_ok(path: Path) -> None:
    raw = path.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    assert raw[12:16] == b"IHDR"
    width, height = int.from_bytes(raw[16:20], "big"), int.from_bytes(raw[20:24], "big")
    assert (width, height) == (800, 450)
    with Image.open(path) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None
    assert len(colours) > 50


def test_html_report_of_two_runs(two_runs: tuple[Path, Path], tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    assert main(["report", str(two_runs[0]), str(two_runs[1]), "-o", str(out)]) == 0
    page = out / "report.html"
    assert capsys.readouterr().out.strip() == str(page)
    text = page.read_text()
    images = re.findall(r'<img src="([^"]+)"', text)
    assert images == ["busbw-all_reduce.png"]
    _png_ok(out / images[0])
    assert not re.search(r"(?:https?:)?//", text.replace("<!DOCTYPE html>", ""))  # opens offline
    header = re.search(r"<tr><th></th>(.*?)</tr>", text)
    assert header is not None
    assert header.group(1) == "<th>xe9680</th><th>vmware</th>"
    assert "<tr><th>peak busbw</th><td>469.21 GB/s (all_reduce, 17179869184 B)</td>" \
           "<td>365.84 GB/s (all_reduce, 17179869184 B)</td></tr>" in text
    assert "<tr><th>nodes x GPUs</th><td>2 x 8</td><td>4 x 8</td></tr>" in text
    assert "<tr><th>¥/h</th><td>¥100.00</td><td>unknown</td></tr>" in text
    assert "<tr><th>cost per busbw</th><td>¥0.213/h per GB/s</td><td>unknown</td></tr>" in text
    assert "NCCL_IB_GID_INDEX=3" in text


def test_markdown_report(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "md"
    assert main(["report", "--format", "md", str(two_runs[0]), str(two_runs[1]), "-o", str(out)]) == 0
    text = (out / "report.md").read_text()
    assert "| | xe9680 | vmware |" in text
    assert "| peak busbw | 469.21 GB/s (all_reduce, 17179869184 B) | 365.84 GB/s (all_reduce, 17179869184 B) |" in text
    assert "![busbw by message size, all_reduce](busbw-all_reduce.png)" in text
    _png_ok(out / "busbw-all_reduce.png")


def test_missing_run_dir_and_damaged_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "nope"), "-o", str(tmp_path / "o")]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "nope: not a directory; give a bench run directory holding results.json" in err
    assert "Traceback" not in err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", str(empty), "-o", str(tmp_path / "o")]) == EXIT_USAGE
    assert "results.json: no such file" in capsys.readouterr().err
    (empty / "results.json").write_text('{"schema_version": 1, "meta": ')
    assert main(["report", str(empty), "-o", str(tmp_path / "o")]) == EXIT_PARSE
    assert "results.json:1: not JSON" in capsys.readouterr().err
    (empty / "results.json").write_text('{"schema_version": 1, "meta": {}, "series": []}')
    assert main(["report", str(empty), "-o", str(tmp_path / "o")]) == EXIT_PARSE
    err = capsys.readouterr().err
    assert "does not match the results.json schema: meta.cluster: Field required" in err
    assert "Traceback" not in err
