"""Time parse + detect + tune for a 10,000-GPU cluster: 1,250 node bundles of real captures.

Each bundle is a directory holding copies of real captures (by default the H100 node's
`nvidia-smi topo -m` and `ip -br a` + `ibdev2netdev`, 8 GPUs each: from shared/fixtures where it is
beside the checkout, else the same node's copy the project ships in examples/captures/h100-roce-node),
so the parsers do the same work they do on a real node. Prints total seconds, ms per node and peak RSS.

    .venv/bin/python bench/tune_bench.py [--nodes 1250] [--capture REL_PATH ...]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
FIXTURES = REPO.parent / "shared" / "fixtures"
DEFAULT_CAPTURES = (
    "topo/h100-8gpu-12mlx5-roce-numaoff.txt",
    "rdma/h100-node-ip-br-ibdev2netdev.txt",
)
# The project's own copy of that node (a plain clone has no shared/fixtures beside it).
OWN = REPO / "examples" / "captures" / "h100-roce-node"
OWN_CAPTURES = ("nvidia-smi-topo-m.txt", "ip-br-addr-ibdev2netdev.txt")


def build_bundles(root: Path, nodes: int, captures: list[str]) -> list[Path]:
    bundles = []
    for i in range(nodes):
        bundle = root / f"node-{i:04d}"
        bundle.mkdir()
        for rel in captures:
            shutil.copyfile(rel if Path(rel).is_absolute() else FIXTURES / rel, bundle / Path(rel).name)
        bundles.append(bundle)
    return bundles


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1250)
    parser.add_argument("--capture", action="append", help="capture under shared/fixtures (repeatable)")
    args = parser.parse_args()
    if args.capture:
        captures = args.capture
    elif all((FIXTURES / rel).is_file() for rel in DEFAULT_CAPTURES):
        captures = list(DEFAULT_CAPTURES)
    else:
        captures = [str(OWN / name) for name in OWN_CAPTURES]

    from toolkit.topology.detect import detect_paths
    from toolkit.tuning import tune

    with tempfile.TemporaryDirectory(prefix="gpuctl-bench-") as tmp:
        bundles = build_bundles(Path(tmp), args.nodes, captures)
        gpus = 0
        start = time.perf_counter()
        for bundle in bundles:
            topology = detect_paths([bundle])
            gpus += len(topology.gpus)
            config = tune(topology, fabric=None, mtu=None, nccl_version="2.26.2", overrides={})
            config.render_nccl_conf()
        total = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    print(f"captures per node: {', '.join(captures)}")
    print(f"nodes: {args.nodes}  GPUs: {gpus}")
    print(f"total: {total:.2f} s  per node: {1000 * total / args.nodes:.2f} ms  peak RSS: {peak_mib:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
