"""Time from nothing to a configured local lab of 2 to 32 nodes, and the idempotent re-runs.

    sudo .venv/bin/python bench/lab_bench.py [--nodes 2 4 8 16 32] [--reruns 10 --reruns-at 16]
                                             [--no-full] [--capture DIR] [--gpu-stack install|image]
                                             [--image base|baked] [--node-local]

The debootstrap base root is built (or found) first and not counted: it is made once per machine.
Each size: `up` + `configure` timed from nothing, then a default re-run (`gpuctl configure`: every
node verified, no playbook) and a `--full` re-run (every role on every node); both must change
nothing. At --reruns-at nodes, --reruns more consecutive verified re-runs follow, each node that
is not verified counted as false drift (nothing changed on the nodes). Then `down`.
`--gpu-stack image` gives the pool `gpu_stack: image`: each node carries the lab's stand-in of an image
with the GPU stack, and configure finds and keeps it (the path's own cost beside the install path's).
`--image baked` bakes one node of the pool first (`gpuctl image build`, timed on its own line) and
starts every node from that image: their install record holds, so configure skips the install roles.
`--node-local` configures with `configure --node-local` (the site playbook runs on each node itself).
Each size also prints the controller's share of the first configure: the host-tasks its Ansible
ran per node (what costs its strategy process about 60 ms each, bench/controller_bench.py) and
the CPU time of gpuctl and its children (ansible-playbook, ssh). A lab node's own processes run
under its sshd, not under gpuctl, so they are not in that figure.
Targets: 4 nodes <= 60 s; 16 nodes <= 90 s; verified re-run <= 3 s; no false drift.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from toolkit.configure import ansible_run, configure  # noqa: E402
from toolkit.errors import GpuctlError  # noqa: E402
from toolkit.images import build as image_build  # noqa: E402
from toolkit.providers.lab import host as lab_host  # noqa: E402
from toolkit.providers.lab import rootfs as lab_rootfs  # noqa: E402
from toolkit.providers.lab.driver import LocalLabDriver  # noqa: E402
from toolkit.spec.loader import load_spec_text  # noqa: E402
from toolkit.spec.models import ClusterSpec  # noqa: E402

DEFAULT_CAPTURE = REPO.parent / "shared" / "fixtures"
OWN_CAPTURE = REPO / "examples" / "captures" / "h100-roce-node"
FILES = ("topo/dgx-a100-8gpu-12mlx5.txt", "rdma/h200-node-10cx7-plus-cx6lx-bond-ibv_devinfo.txt",
         "rdma/cx7-roce-show_gids-ibv_devinfo.txt")


def quiet(_line: str) -> None:
    pass


@dataclass
class Figures:
    up_s: float = 0.0
    first_s: float = 0.0
    rerun_s: float = 0.0
    full_s: float | None = None
    changed: int = 0
    reruns: list[float] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)
    host_tasks: float = 0.0  # per node, in the controller's Ansible runs of the first configure
    controller_cpu_s: float = 0.0  # gpuctl and its children, the first configure


class CountingTracker(ansible_run.Tracker):
    """The tracker of the controller's runs (run_playbook's), counting the host-task results its
    Ansible sent; a node-local run's own tasks are read by node_local's tracker, not counted."""

    results = 0

    def __call__(self, event: dict[str, object]) -> bool:
        # ansible-runner also sends runner_on_start per host-task: the results only.
        if event.get("event") in ("runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable"):
            CountingTracker.results += 1
        return super().__call__(event)


def cpu_s() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def lab_spec(name: str, nodes: int, capture: Path, gpu_stack: str, image: str = "debian_12") -> ClusterSpec:
    return load_spec_text(f"""\
name: {name}
provider: local
node_pools:
  - {{name: n, instance_type: lab, count: {nodes}, capture: {capture}, gpu_stack: {gpu_stack}, image: '{image}'}}
network: {{fabric: tcp, mtu: 8500, admin_cidr: 127.0.0.0/8}}
lifecycle: {{ttl: 2h}}
""")


def bench(nodes: int, capture: Path, *, full: bool, reruns: int, gpu_stack: str = "install",
          image: str = "debian_12", node_local: bool = False) -> Figures:
    spec = lab_spec(f"bench{nodes}", nodes, capture, gpu_stack, image)
    driver = LocalLabDriver()
    figures = Figures()
    try:
        start = time.perf_counter()
        outputs = driver.up(spec, quiet)
        figures.up_s = time.perf_counter() - start
        CountingTracker.results, cpu = 0, cpu_s()
        first = configure(spec, outputs, quiet, node_local=node_local)
        figures.first_s = time.perf_counter() - start
        figures.controller_cpu_s = cpu_s() - cpu
        figures.host_tasks = CountingTracker.results / nodes
        if not first.ok:
            raise SystemExit(f"{nodes} nodes: configure failed: {[n.line() for n in first.nodes.values()]}")
        start = time.perf_counter()
        second = configure(spec, outputs, quiet)
        figures.rerun_s = time.perf_counter() - start
        figures.changed += second.changed
        figures.drift += [n.line() for n in second.nodes.values() if not n.verified]
        if full:
            start = time.perf_counter()
            third = configure(spec, outputs, quiet, full=True)
            figures.full_s = time.perf_counter() - start
            figures.changed += third.changed
        for _ in range(reruns):
            start = time.perf_counter()
            again = configure(spec, outputs, quiet)
            figures.reruns.append(time.perf_counter() - start)
            figures.changed += again.changed
            figures.drift += [n.line() for n in again.nodes.values() if not n.verified]
        return figures
    finally:
        driver.down(spec, quiet)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    parser.add_argument("--reruns", type=int, default=10, help="consecutive verified re-runs at --reruns-at nodes")
    parser.add_argument("--reruns-at", type=int, default=16)
    parser.add_argument("--no-full", action="store_true", help="skip the --full re-run")
    parser.add_argument("--capture", type=Path, help="capture bundle the nodes replay (default: real fixtures)")
    parser.add_argument("--gpu-stack", choices=("install", "image"), default="install",
                        help="the pool's gpu_stack (image: the lab's stand-in of an image carrying the stack)")
    parser.add_argument("--image", choices=("base", "baked"), default="base",
                        help="the nodes' root: the Debian base, or an image baked from one node first")
    parser.add_argument("--node-local", action="store_true",
                        help="configure with --node-local: the site playbook runs on each node itself")
    args = parser.parse_args()
    ansible_run.Tracker = CountingTracker  # type: ignore[misc]  # run_playbook's, not node_local's
    if os.geteuid() != 0:
        print("the local lab needs root", file=sys.stderr)
        return 7
    with tempfile.TemporaryDirectory(prefix="gpuctl-bench-") as tmp:
        os.environ["GPUCTL_HOME"] = tmp
        os.environ.setdefault("GPUCTL_CACHE", "/var/tmp/gpuctl-cache")
        capture = args.capture
        if capture is None and all((DEFAULT_CAPTURE / rel).is_file() for rel in FILES):
            capture = Path(tmp) / "capture"
            capture.mkdir()
            for rel in FILES:
                shutil.copyfile(DEFAULT_CAPTURE / rel, capture / Path(rel).name)
        elif capture is None:
            capture = OWN_CAPTURE  # a plain clone: the H100 node the project ships
        start = time.perf_counter()
        try:
            lab_host.ensure_tools()  # a fresh machine: debootstrap and the rest from apt
            lab_rootfs.ensure_base(quiet)
        except GpuctlError as error:
            print(f"the lab cannot be built here: {error.message}", file=sys.stderr)
            return 7
        print(f"base root ready in {time.perf_counter() - start:.1f} s (cached: not counted below); "
              f"gpu_stack {args.gpu_stack}; {'node-local runs' if args.node_local else 'runs from the controller'}")
        image = "debian_12"
        if args.image == "baked":
            start = time.perf_counter()
            image_build.build(lab_spec("benchimg", 1, capture.resolve(), args.gpu_stack), "n", "bench-n",
                              LocalLabDriver(), quiet)
            image = "baked:bench-n"
            print(f"image bench-n baked in {time.perf_counter() - start:.1f} s (one node: up, full configure, "
                  "copy of its root); every node below starts from it")
        print(f"{'nodes':>5}  {'up':>6}  {'configure':>9}  {'up+configure':>12}  {'re-run':>7}  "
              f"{'--full re-run':>13}  changed  false drift  host-tasks/node  controller CPU/node")
        misses = 0
        for count in args.nodes:
            reruns = args.reruns if count == args.reruns_at else 0
            f = bench(count, capture.resolve(), full=not args.no_full, reruns=reruns, gpu_stack=args.gpu_stack,
                      image=image, node_local=args.node_local)
            full = f"{f.full_s:>12.1f}s" if f.full_s is not None else f"{'-':>13}"
            print(f"{count:>5}  {f.up_s:>5.1f}s  {f.first_s - f.up_s:>8.1f}s  {f.first_s:>11.1f}s  "
                  f"{f.rerun_s:>6.2f}s  {full}  {f.changed:>7}  {len(f.drift):>11}  {f.host_tasks:>15.1f}  "
                  f"{f.controller_cpu_s / count:>18.2f}s", flush=True)
            if f.reruns:
                print(f"{'':>5}  {len(f.reruns)} more verified re-runs: min {min(f.reruns):.2f} s, "
                      f"median {sorted(f.reruns)[len(f.reruns) // 2]:.2f} s, max {max(f.reruns):.2f} s", flush=True)
            for line in f.drift:
                print(f"{'':>5}  false drift: {line}", flush=True)
            misses += bool(f.drift or f.changed)
            misses += count == 16 and f.first_s > 90
            misses += max([f.rerun_s, *f.reruns]) > 3
        print("targets met" if not misses else f"{misses} target(s) missed (see above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
