"""Time from nothing to a configured local lab of 2, 4 and 8 nodes, and the idempotent re-runs.

    sudo .venv/bin/python bench/lab_bench.py [--nodes 2 4 8] [--capture DIR]

The debootstrap base root is built (or found) first and not counted: it is made once per machine.
Each size: `up` + `configure` timed from nothing, then a default re-run (`gpuctl configure`: every
node verified, no playbook) and a `--full` re-run (every role on every node); both must change
nothing. Then `down`. Targets: 4 nodes <= 60 s; re-run <= one third of the first run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from toolkit.configure import configure  # noqa: E402
from toolkit.providers import lab_rootfs  # noqa: E402
from toolkit.providers.local import LocalLabDriver  # noqa: E402
from toolkit.spec.loader import load_spec_text  # noqa: E402

DEFAULT_CAPTURE = REPO.parent / "shared" / "fixtures"
FILES = ("topo/dgx-a100-8gpu-12mlx5.txt", "rdma/h200-node-10cx7-plus-cx6lx-bond-ibv_devinfo.txt",
         "rdma/cx7-roce-show_gids-ibv_devinfo.txt")


def quiet(_line: str) -> None:
    pass


def bench(nodes: int, capture: Path) -> tuple[float, float, float, float, int]:
    spec = load_spec_text(f"""\
name: bench{nodes}
provider: local
node_pools:
  - {{name: n, instance_type: lab, count: {nodes}, capture: {capture}}}
network: {{fabric: tcp, mtu: 8500, admin_cidr: 127.0.0.0/8}}
lifecycle: {{ttl: 2h}}
""")
    driver = LocalLabDriver()
    try:
        start = time.perf_counter()
        outputs = driver.up(spec, quiet)
        up_s = time.perf_counter() - start
        first = configure(spec, outputs, quiet)
        first_s = time.perf_counter() - start
        if not first.ok:
            raise SystemExit(f"{nodes} nodes: configure failed: {[n.line() for n in first.nodes.values()]}")
        start = time.perf_counter()
        second = configure(spec, outputs, quiet)
        rerun_s = time.perf_counter() - start
        if not all(n.verified for n in second.nodes.values()):
            raise SystemExit(f"{nodes} nodes: re-run did not verify: {[n.line() for n in second.nodes.values()]}")
        start = time.perf_counter()
        third = configure(spec, outputs, quiet, full=True)
        full_s = time.perf_counter() - start
        return up_s, first_s, rerun_s, full_s, second.changed + third.changed
    finally:
        driver.down(spec, quiet)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--capture", type=Path, help="capture bundle the nodes replay (default: real fixtures)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("the local lab needs root", file=sys.stderr)
        return 7
    with tempfile.TemporaryDirectory(prefix="gpuctl-bench-") as tmp:
        os.environ["GPUCTL_HOME"] = tmp
        os.environ.setdefault("GPUCTL_CACHE", "/var/tmp/gpuctl-cache")
        capture = args.capture
        if capture is None:
            capture = Path(tmp) / "capture"
            capture.mkdir()
            for rel in FILES:
                shutil.copyfile(DEFAULT_CAPTURE / rel, capture / Path(rel).name)
        start = time.perf_counter()
        lab_rootfs.ensure_base(quiet)
        print(f"base root ready in {time.perf_counter() - start:.1f} s (cached: not counted below)")
        print(f"{'nodes':>5}  {'up':>6}  {'up+configure':>12}  {'re-run':>7}  {'re-run/first':>12}  "
              f"{'--full re-run':>13}  {'full/first':>10}  changed")
        for count in args.nodes:
            up_s, first_s, rerun_s, full_s, changed = bench(count, capture.resolve())
            print(f"{count:>5}  {up_s:>5.1f}s  {first_s:>11.1f}s  {rerun_s:>6.1f}s  {rerun_s / first_s:>12.2f}  "
                  f"{full_s:>12.1f}s  {full_s / first_s:>10.2f}  {changed}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
