"""Reading captures and logs from disk (toolkit/topology/reading.py): caps, links, FIFOs, numbers.

Each test is one fix (they fail on the commit before it); the generated corpus is in
tests/hostile/test_logs_captures.py.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.hostile.harness import run_case
from toolkit.bench.nccl_tests import parse_nccl_tests_runs
from toolkit.errors import EXIT_PARSE, EXIT_USAGE
from toolkit.files import FileError
from toolkit.topology import rdma
from toolkit.topology.detect import nccl_version_from
from toolkit.topology.nvsmi_query import parse_query_gpu_csv

CAPTURES = REPO / "tests" / "captures"
TOPO = CAPTURES / "topo" / "h20-8gpu-8nic-pix-nic-legend-starts-mlx5_1-sglang-env.txt"
IBSTAT = CAPTURES / "rdma" / "ibstat-cx4lx-25g-eth-plus-cx6-200g-ib-2-ports-down.txt"
MIXED = CAPTURES / "mixed" / "h20-vm-2node-2gpu-alltoall-tencent-plugin-roce-bond-nccl2.26.5.txt"


def _bundle(tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "MANIFEST").write_text(
        "# gpuctl gather manifest\nformat: 1\nnvidia-smi-topo-m.txt\t0\tnvidia-smi topo -m\n"
        "sys-class-infiniband\t0\tcopy non-zero /sys/class/infiniband/*/ports/*/gids (1)\n")
    (bundle / "nvidia-smi-topo-m.txt").write_text(TOPO.read_text())
    gids = bundle / "sys-class-infiniband" / "mlx5_0" / "ports" / "1" / "gids"
    gids.mkdir(parents=True)
    (gids / "3").write_text("0000:0000:0000:0000:0000:ffff:0a63:5b27\n")
    return bundle


def test_a_log_larger_than_check_log_reads_is_refused_with_what_to_do(tmp_path: Path) -> None:
    log = tmp_path / "huge.log"
    log.write_bytes(b"x")
    os.truncate(log, 5 << 30)
    outcome = run_case("5 GiB log", ["check-log", str(log)], home=tmp_path / "home", timeout=5)
    assert outcome.code == EXIT_USAGE
    assert outcome.err == (
        f"gpuctl check-log: error: {log}: 5.0 GiB is more than gpuctl reads for a log (at most 256.0 MiB)\n"
        "  hint: check one node's lines at a time: NCCL starts each line with host:pid:tid, so "
        "`grep '^HOST:' LOG > HOST.log` keeps the lines of HOST\n")


def test_the_readers_refuse_a_fifo_before_reading(tmp_path: Path) -> None:
    from toolkit.topology import reading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(FileError, match=r"fifo: is a named pipe \(FIFO\), not a regular file; give the path of a log"):
        reading.read_log(fifo)
    with pytest.raises(FileError, match=r"is a named pipe \(FIFO\), not a regular file; give the path of a capture"):
        reading.read_capture_file(fifo, reading.Reads(), follow=True)


def test_a_number_of_thousands_of_digits_is_refused_with_its_line(tmp_path: Path) -> None:
    text = MIXED.read_text().splitlines(keepends=True)
    log = tmp_path / "digits.log"
    log.write_text("".join(text[:9]) + "node:1:1 [0] NCCL INFO NET/IB : Using [" + "9" * 5000 + "]mlx5_0:1/RoCE\n")
    for command in ("check-log", "detect"):
        outcome = run_case(command, [command, str(log)], home=tmp_path / "home")
        assert outcome.code == EXIT_PARSE
        assert f"{log}:10: a number of 5,000 digits: no tool prints one that long (a damaged file?)" in outcome.err


def test_a_link_in_a_bundle_is_refused_not_followed(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("host-from-outside\n")
    (bundle / "hostname.txt").symlink_to(secret)
    outcome = run_case("link", ["detect", str(bundle)], home=tmp_path / "home")
    assert outcome.code == EXIT_USAGE
    assert outcome.err == (f"gpuctl detect: error: {bundle / 'hostname.txt'}: is a symbolic link, where a gather "
                           "bundle holds a regular file (gpuctl does not follow links inside a bundle)\n")
    assert "host-from-outside" not in outcome.out


def test_a_fifo_in_a_gid_table_copy_is_refused_not_read(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    gid = bundle / "sys-class-infiniband" / "mlx5_0" / "ports" / "1" / "gids" / "3"
    gid.unlink()
    os.mkfifo(gid)
    outcome = run_case("fifo gid", ["detect", str(bundle)], home=tmp_path / "home", timeout=5)
    assert (outcome.hang, outcome.code) == (False, EXIT_USAGE)
    assert outcome.err == (f"gpuctl detect: error: {gid}: is a named pipe (FIFO), where a gather bundle holds a "
                           "regular file (gpuctl does not follow links inside a bundle)\n")


def test_a_link_in_a_gid_table_copy_is_refused(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    attrs = bundle / "sys-class-infiniband" / "mlx5_0" / "ports" / "1" / "gid_attrs"
    attrs.symlink_to(tmp_path)
    outcome = run_case("link attrs", ["detect", str(bundle)], home=tmp_path / "home")
    assert outcome.code == EXIT_USAGE
    assert f"{attrs}: is a symbolic link; gpuctl does not follow links inside a bundle" in outcome.err


def test_a_gid_table_copy_far_larger_than_a_nodes_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rdma, "SYSFS_ENTRY_LIMIT", 10)
    bundle = _bundle(tmp_path)
    ports = bundle / "sys-class-infiniband" / "mlx5_0" / "ports"
    for n in range(2, 20):
        (ports / str(n)).mkdir()
    outcome = run_case("many ports", ["detect", str(bundle)], home=tmp_path / "home")
    assert outcome.code == EXIT_USAGE
    assert outcome.err == (f"gpuctl detect: error: {ports}: the copy of /sys/class/infiniband holds more than 10 "
                           "entries, far more than a node's GID tables\n")


def test_a_folder_of_thousands_of_files_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    for n in range(300):
        (folder / f"{n}.txt").write_text(TOPO.read_text())
    outcome = run_case("many", ["detect", str(folder)], home=tmp_path / "home")
    assert outcome.code == EXIT_USAGE
    assert outcome.err == (f"gpuctl detect: error: {folder}: holds more than 256 files; a folder of one node's "
                           "captures holds a few dozen at most\n"
                           "  hint: give detect the folder of one node's captures\n")


def test_a_capture_larger_than_detect_reads_is_refused(tmp_path: Path) -> None:
    capture = tmp_path / "topo.txt"
    capture.write_text(TOPO.read_text())
    os.truncate(capture, 40 << 20)
    outcome = run_case("40 MiB", ["tune", str(capture)], home=tmp_path / "home", timeout=5)
    assert outcome.code == EXIT_USAGE
    assert outcome.err.startswith(f"gpuctl tune: error: {capture}: 40.0 MiB is more than gpuctl reads for a "
                                  "capture (at most 32.0 MiB)\n  hint: a node's captures are kilobytes")


def test_what_one_detect_reads_together_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolkit.topology import reading

    monkeypatch.setattr(reading, "READ_LIMIT", 5000)
    outcome = run_case("budget", ["detect", str(TOPO), str(IBSTAT)], home=tmp_path / "home")
    assert outcome.code == EXIT_USAGE
    assert outcome.err == (f"gpuctl detect: error: {IBSTAT}: 2357 bytes more would pass the 5000 bytes detect reads "
                           "in all (the files before it took 3637 bytes)\n"
                           "  hint: give detect the captures of one node\n")


def test_a_long_line_in_nccl_tests_output_is_read_in_linear_time() -> None:
    # The NCCL-log search used to retry from every character of a line: 100 KB took about a minute.
    text = MIXED.read_text().replace("\n", "\n" + "x" * 100_000 + "\n", 1)
    started = time.monotonic()
    runs = parse_nccl_tests_runs(text, MIXED.name, allow_truncated=True)
    assert time.monotonic() - started < 2.0
    assert [(len(run.rows), run.peak_busbw_gbps) for run in runs] == [(13, 50.37)]


def test_long_words_in_captures_are_read_in_linear_time(shared_fixtures: Path) -> None:
    # A query-gpu header's unit and a package's NCCL version were searched with patterns that start
    # over from every character: 100 KB took minutes.
    csv = (shared_fixtures / "gpu_query" / "h200-vm-query-gpu-214-fields.csv.txt").read_text()
    csv = csv.replace("timestamp,", "timestamp" + "[a" * 50_000 + ",", 1)
    started = time.monotonic()
    assert [gpu.model for gpu in parse_query_gpu_csv(csv, "csv").gpus] == ["NVIDIA H200"]
    assert nccl_version_from("nccl" * 25_000 + " libnccl.so.2.21.5") == "2.21.5"
    assert time.monotonic() - started < 2.0
