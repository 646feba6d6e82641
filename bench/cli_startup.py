"""How long `gpuctl --help` and `gpuctl plan` take to start, as a user runs them.

Each figure is the median of several fresh processes (imports included), so it shows what a
person waits for. Target: `gpuctl --help` well under a second.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUNS = 7


def median_seconds(argv: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "toolkit", *argv],
            cwd=REPO,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    baseline = median_seconds_python()
    print(f"python -c pass (interpreter floor): {baseline * 1000:7.1f} ms")
    for argv in (["--help"], ["validate", "examples/local-lab.yaml"], ["plan", "examples/alicloud-erdma-2x8.yaml"]):
        print(f"gpuctl {' '.join(argv):<42} {median_seconds(argv) * 1000:7.1f} ms (median of {RUNS})")
    heavy = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "toolkit", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    for module in ("pulumi", "pulumi_alicloud", "tencentcloud", "ansible_runner", "ansible"):
        loaded = any(line.split("|")[-1].strip() == module for line in heavy.splitlines())
        print(f"  {module:<16} imported by --help: {'YES' if loaded else 'no'}")


def median_seconds_python() -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


if __name__ == "__main__":
    main()
