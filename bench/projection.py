"""A first configure of N cloud nodes (1,250 by default: 10,000 GPUs), projected from measured figures.

    python bench/projection.py [--nodes 1250]

Computes the table docs/scale.md shows: each way of configuring (from the controller or node-local,
on the install path or from a baked image) as the sum of its phases, each phase from an input below.
Every input says where its figure comes from: a bench under bench/ and the run it was read from,
or "paper only" where no machine here could measure it (no cloud GPU node was reachable). Change an
input when a bench is run again; the model is in project().
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Input:
    value: float
    unit: str
    source: str


INPUTS = {
    "host_task_s": Input(53.14 / 1250, "s", "bench/controller_bench.py, 2026-12-02 evening: one task over 1,250 "
                         "hosts took 53.14 s of ansible-playbook (its strategy process, serial, per host-task)"),
    "own_work_s": Input(12.02, "s", "bench/controller_bench.py, the same run, at 1,250 nodes: render, plan, "
                        "decide, record, replan (gpuctl's own work)"),
    "local_work_s": Input(7.36, "s", "bench/controller_bench.py, the same run, at 1,250 nodes: the local phase "
                          "(bundle, two inventories and a tuned-files tar per node)"),
    "tasks_controller": Input(72, "host-tasks/node", "bench/lab_bench.py, 2026-12-02: the host-tasks the "
                              "controller's Ansible ran per lab node (site and deliver playbooks); a cloud GPU "
                              "node runs more (the GPU roles the lab skips at their first task): a lower bound"),
    "baked_share": Input(129.2 / 176.1, "", "bench/lab_bench.py, 2026-12-02: 32 nodes configured in 129.2 s "
                         "from a baked image against 176.1 s on the install path"),
    "tasks_node_local": Input(11, "host-tasks/node", "bench/lab_bench.py --node-local, 2026-12-02: the "
                              "host-tasks the controller's Ansible ran per node, both phases, at 16 and 32 nodes"),
    "node_run_s": Input(23.8, "s", "bench/lab_bench.py --nodes 1 --node-local --image baked, 2026-12-02: one "
                        "node's whole first configure (both runs on the node, the fan-out and the 5 s polls); "
                        "a cloud GPU node also runs the GPU roles' checks (paper only)"),
    "install_s": Input(20 * 60, "s", "paper only: issue 25's estimate of driver, CUDA, NCCL and eRDMA "
                       "installed on one node"),
    "bundle_bytes": Input(2.54e6, "bytes", "the node-local bundle gpuctl builds (ansible-core and its "
                          "requirements, the roles, the playbooks), measured on this checkout"),
    "link_bytes_s": Input(1e9 / 8, "bytes/s", "paper only: a 1 Gbit/s link out of the controller"),
    "forks": Input(128, "", "toolkit/configure/render.py MAX_FORKS"),
}


def value(name: str) -> float:
    return INPUTS[name].value


def project(nodes: int) -> list[tuple[str, list[tuple[str, float]]]]:
    """Each way of configuring with its phases in seconds."""
    strategy = value("tasks_controller") * value("host_task_s") * nodes
    waves = math.ceil(nodes / value("forks"))
    fan_out = value("tasks_node_local") * value("host_task_s") * nodes
    ship = value("bundle_bytes") * nodes / value("link_bytes_s")
    common = [("gpuctl's own work", value("own_work_s"))]
    local = [*common, ("node-local files", value("local_work_s")),
             ("controller host-tasks (fan-out)", fan_out), ("bundle shipped", ship)]
    return [
        ("from the controller, install path", [*common, ("controller host-tasks", strategy),
                                               (f"install in {waves} waves of forks", waves * value("install_s"))]),
        ("from the controller, baked image", [*common, ("controller host-tasks", strategy * value("baked_share"))]),
        ("node-local, install path", [*local, ("one install, every node at once", value("install_s")),
                                      ("one node's runs", value("node_run_s"))]),
        ("node-local, baked image", [*local, ("one node's runs", value("node_run_s"))]),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1250)
    args = parser.parse_args()
    print(f"Projected first configure of {args.nodes:,} nodes (target: 30 minutes)\n")
    print("| way | phases | total |")
    print("|---|---|---:|")
    for way, phases in project(args.nodes):
        total = sum(seconds for _name, seconds in phases)
        listed = "; ".join(f"{name} {seconds / 60:.1f} min" for name, seconds in phases)
        print(f"| {way} | {listed} | {total / 60:.1f} min{' (met)' if total <= 30 * 60 else ''} |")
    print("\nInputs:")
    for name, item in INPUTS.items():
        print(f"- {name} = {item.value:.4g} {item.unit}: {item.source}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
