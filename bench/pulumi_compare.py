"""The harness both Pulumi benchmarks share (bench/pulumi_bench.py for Alibaba,
bench/pulumi_bench_tencent.py for Tencent): time a cloud's component program against a bare
program that creates the same resources flat, under the cloud's mocks, and print the ratio."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import pulumi

Program = Callable[[], pulumi.Output[Any]]


def timed(mocks: Callable[[], pulumi.runtime.Mocks], program: Program) -> float:
    pulumi.runtime.set_mocks(mocks(), project="bench", stack="bench", preview=False)
    decorate: Callable[[Program], Callable[[], None]] = pulumi.runtime.test
    start = time.perf_counter()
    decorate(program)()
    return time.perf_counter() - start


def compare(
    *,
    description: str,
    mocks: Callable[[], pulumi.runtime.Mocks],
    cluster_args: Callable[[int], Any],
    component_program: Callable[[Any], Program],
    bare_program: Callable[[Any], Program],
    resources: Callable[[int], int],
) -> int:
    """Parse --repeat/--nodes, print the best of the repeats per size and the worst ratio."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--nodes", type=int, nargs="+", default=[10, 100, 1000])
    options = parser.parse_args()
    print(f"{'nodes':>6} {'resources':>9} {'component s':>12} {'bare s':>8} {'ratio':>6}")
    worst = 0.0
    # One untimed run of each first: the first program in a process pays for lazy imports and
    # Pulumi's runtime set-up, which would otherwise land on whichever program runs first.
    timed(mocks, component_program(cluster_args(2)))
    timed(mocks, bare_program(cluster_args(2)))
    for nodes in options.nodes:
        args = cluster_args(nodes)
        # Interleave the two so that drift (caches, CPU frequency) hits both alike.
        component_times, bare_times = [], []
        for _ in range(options.repeat):
            component_times.append(timed(mocks, component_program(args)))
            bare_times.append(timed(mocks, bare_program(args)))
        component, bare = min(component_times), min(bare_times)
        ratio = component / bare
        worst = max(worst, ratio)
        print(f"{nodes:>6} {resources(nodes):>9} {component:>12.3f} {bare:>8.3f} {ratio:>6.2f}")
    print(f"worst ratio {worst:.2f} (target <= 1.20)")
    return 0
