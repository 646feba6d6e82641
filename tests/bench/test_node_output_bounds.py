"""What bench reads of a run's output, and the short log tails in error messages, stay bounded.

The output is what the launch node sent through ssh: a node that floods it must not make bench read
(or hold) without end, and a log tail must never block on a FIFO or follow a link.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from toolkit.bench import run as bench_run
from toolkit.configure import converge
from toolkit.files import FileError, log_tail

pytestmark = pytest.mark.unit


def test_a_flooding_output_is_cut_at_the_bound_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_run, "OUTPUT_LIMIT", 16)
    out = tmp_path / "run.txt"
    out.write_bytes(b"#  size count type\n" * 4)
    assert bench_run.node_output(out) == ("#  size count ty", True)
    out.write_bytes(b"short\n")
    assert bench_run.node_output(out) == ("short\n", False)
    assert bench_run.node_output(tmp_path / "missing.txt") == ("", False)


def test_the_tail_of_a_large_output_is_read_from_its_end(tmp_path: Path) -> None:
    err = tmp_path / "run.err"
    with err.open("wb") as handle:
        handle.write(b"".join(b"noise %d\n" % n for n in range(100_000)))  # ~1 MB, 15 times the tail
        handle.write(b"gpuctl-rank 0 host=a\nmpirun: node b refused\nthe last line\n")
    assert bench_run._tail(err) == ["noise 99997", "noise 99998", "noise 99999", "mpirun: node b refused",
                                    "the last line"]


def test_a_log_tail_neither_blocks_on_a_fifo_nor_follows_a_link(tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("not gpuctl's log\n")
    (tmp_path / "sshd.log").symlink_to(secret)
    assert log_tail(tmp_path / "sshd.log") == ""
    os.mkfifo(tmp_path / "store.log")
    done: list[str] = []
    reader = threading.Thread(target=lambda: done.append(log_tail(tmp_path / "store.log")), daemon=True)
    reader.start()
    reader.join(5)
    assert done == [""]
    (tmp_path / "real.log").write_text("a" * 1000 + "\nsshd: bind failed\n")
    assert log_tail(tmp_path / "real.log", size=18) == "sshd: bind failed"


def test_a_link_among_the_files_gpuctl_fingerprints_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "outside.conf"
    target.write_text("NCCL_DEBUG=INFO\n")
    (tmp_path / "site.yml").symlink_to(target)
    with pytest.raises(FileError, match="is a symbolic link"):
        converge._own_sha(tmp_path / "site.yml")
    assert converge._own_sha(tmp_path / "deliver.yml") == "-"
