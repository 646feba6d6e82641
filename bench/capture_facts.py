"""Facts of real third-party captures (tests/captures) that detect, check-log, tune and the nccl-tests
parser must get right, each scored right, wrong (another value, given with confidence) or missing
(refused, or unknown where the capture shows the value), per failure class (docs/tuning.md, "What
detect and check-log read from real captures").

It scores whatever `toolkit` comes first on sys.path against the captures under ROOT, so an older
checkout can be scored with the same captures copied into it:

    PYTHONPATH=. .venv/bin/python bench/capture_facts.py .
    PYTHONPATH=/tmp/old .venv/bin/python bench/capture_facts.py /tmp/old
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from toolkit.bench.nccl_tests import parse_nccl_tests_runs
from toolkit.topology.detect import detect_paths
from toolkit.topology.log_check import judge_log
from toolkit.topology.model import Gpu, GpuLink, Nic, Topology
from toolkit.topology.nccl_log import parse_nccl_log
from toolkit.tuning.engine import infer_fabric, tune
from toolkit.tuning.expected_bw import all_reduce_busbw

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
C = ROOT / "tests" / "captures"


@dataclass(frozen=True)
class Fact:
    cls: str
    name: str
    read: Callable[[], Any]
    expected: Any
    unknown: Callable[[Any], bool] = lambda value: False  # the value says "not known", not a wrong value


def gid(name: str) -> list[tuple[str, int]]:
    return sorted((n.name, n.gid_index) for n in detect_paths([C / "rdma" / name]).nics if n.gid_index is not None)


def verdict(name: str) -> tuple[str, list[str]]:
    judged = judge_log(parse_nccl_log((C / "nccl_log" / name).read_text(), name))
    return judged.verdict, sorted(f.code for f in judged.findings if f.severity == "error")


def warns_about(name: str, word: str) -> bool:
    judged = judge_log(parse_nccl_log((C / "nccl_log" / name).read_text(), name))
    return any(word in f.message and f.severity == "warning" for f in judged.findings)


def tuned(path: Path) -> tuple[str | None, list[str]]:
    topology = detect_paths([path])
    config = tune(topology, fabric=infer_fabric(topology), mtu=None, nccl_version="2.26.2", overrides={})
    return config.value("NCCL_IB_HCA"), config.notes


def rails(name: str) -> list[str]:
    return sorted(r.nic for r in detect_paths([C / "topo" / name]).rails)


def pcie_only(name: str) -> bool:
    return detect_paths([C / "topo" / name]).pcie_only_view


def capabilities(name: str) -> list[str | None]:
    return sorted({g.compute_capability for g in detect_paths([C / "topo_xml" / name]).gpus}, key=str)


def cut_legend() -> bool:
    from toolkit.topology.nvsmi_topo import parse_topo_matrix

    name = "l40s-4gpu-no-nvlink-only-mlx5-dual-port-card-node-to-gpu2-3-sys-to-gpu0-1-warpem-issue106.txt"
    text = (C / "topo" / name).read_text()
    return parse_topo_matrix(text[: text.index("  NV#")], name).pcie_only_view


def runs(name: str) -> list[tuple[int, float | None]]:
    return [(r.ranks, r.peak_busbw_gbps)
            for r in parse_nccl_tests_runs((C / "nccl_tests" / name).read_text(), name, allow_truncated=True)]


def one_h100_four_nics() -> float:
    node = Topology(gpus=[Gpu(index=0, compute_capability="9.0")], gpu_links=[[GpuLink(kind="X")]],
                    nics=[Nic(name=f"mlx5_{i}", rate_gbps=400.0, state="PORT_ACTIVE", seen_by=["ibv_devinfo"])
                          for i in range(4)])
    return round(all_reduce_busbw(node, 2).busbw_gbps, 1)


def facts() -> list[Fact]:
    found: list[Fact] = []
    want: Any  # each loop below expects a value of its own kind
    for name, want in [
        ("show-gids-indented-22-spaces-prompt-mlx5-0-1-v1-v2-fe80-ipv4-nccl-tests-issue192.txt",
         [("mlx5_0", 3), ("mlx5_1", 3)]),
        ("show-gids-tabs-sparse-index-4-7-macvlan-pod-mlx5-0-2-nccl-issue1573.txt", [("mlx5_0", 7), ("mlx5_1", 7)]),
        ("show-gids-space-aligned-cx6-two-fe80-pairs-ipv4-at-idx-4-5-spectrumscale-pr4.txt", [("mlx5_0", 5)]),
        ("show-gids-sparse-ipv4-idx-6-7-before-fe80-idx-8-9-nccl-pr1587.txt", [("mlx5_0", 7)]),
        ("show-gids-two-pods-prose-between-ipv4-only-idx-4-5-vs-6-7-plus-nccl-2.13.4-multus-issue1100.txt",
         [("mlx5_4", 5)]),
        ("ibv-devinfo-vvv-grep-gid-flattened-one-line-fe80-ipv4-fc00-juniper-jvd-appendix-d.txt", [("mlx5_6", 3)]),
        ("gid-index-1-fe80-roce-v2-link-local-timeout-vs-3-ipv4-mlx5-bond0-ibv-devinfo-tabs-nccl-issue769.txt",
         [("mlx5_bond_0", 3)]),
    ]:
        found.append(Fact("1 GID table alone", name, partial(gid, name), want, lambda v: v == []))
    for name in ("sysfs-cat-gids-head-4-rxe-fe80-ipv4-zero-rows-backticked-rxe-dev-issue79.txt",
                 "ibv-devinfo-v-broadcom-bnxt-re-port-down-gid-0-1-fe80-v1-v2-ucx-issue11048.txt",
                 "ibv-devinfo-v-port-gid-14-15-only-no-type-suffix-bold-marker-k8s-rdma-shared-dev-plugin-"
                 "issue164.txt"):
        found.append(Fact("1 GID table alone", name, partial(gid, name), []))  # read, and no index claimed
    for name, want in [
        ("docker-mlx5-bond0-roce-ibv-open-device-failed-socket-bond0-nccl-issue451.txt",
         ("problem", ["socket-fallback"])),
        ("ipoib-ibs85f0-ib0-ib-disabled-socket-a100-nccl-tests-issue188.txt", ("problem", ["socket-fallback"])),
        ("container-no-ib-device-socket-np0-netdevs-bond0-virbr0-nccl2.17.1-nccl-issue941.txt", ("unknown", [])),
        ("fastsocket-plugin-h100-5-gvnic-netdevs-cut-mid-line-nccl2.20.5-nccl-issue1519.txt", ("unknown", [])),
        ("fastsocket-gcp-a100-accept-connect-lines-no-plugin-line-nccl-issue651.txt", ("unknown", [])),
        ("gpudirecttcpx-plugin-gcp-a3-rx-ctrl-timeout-warn-enp12s0-enp134s0-tcpx-plugin-issue1.txt", ("unknown", [])),
        ("nccl-net-socket-forced-dgx-a100-enp225s0f1-nccl2.11.4-nccl-issue676.txt", ("unknown", [])),
        ("trap-socket-lists-ib0-but-net-ib-mlx5_0-used-nccl2.4.7-nv-peer-memory-issue56.txt", ("unknown", [])),
        ("trap-virbr0-in-socket-list-but-net-ib-mlx5-used-two-hosts-nccl-tests-issue29.txt", ("unknown", [])),
        ("flannel1-in-socket-list-34-roce-mlx5-ports-mpirun-prefix-nccl2.4.2-nccl-issue224.txt", ("unknown", [])),
    ]:
        found.append(Fact("2 fabric unused", name, partial(verdict, name), want, lambda v: v[0] == "unknown"))
    found.append(Fact("2 fabric unused", "issue941: virbr0 in the socket list NCCL used",
                      lambda: warns_about("container-no-ib-device-socket-np0-netdevs-bond0-virbr0-nccl2.17.1-"
                                          "nccl-issue941.txt", "virbr0"), True, lambda v: v is False))
    found.append(Fact("3 link-local GID", "issue1657: NCCL_IB_GID_INDEX=0 on a link-local GID, flagged",
                      lambda: warns_about("nccl-2.21-gid-index-env-0-connect-line-gid-0-80fe-link-local-roce-k8s-"
                                          "nccl-issue1657.txt", "link-local GID"), True, lambda v: v is False))
    found.append(Fact("4 soft RoCE / other vendors", "rxe0 not a rail",
                      lambda: tuned(C / "rdma" / "ibv-devinfo-softroce-rxe0-vendor-id-0x0000-no-link-layer-line-"
                                                 "rxe-dev-issue46.txt")[0], None))
    found.append(Fact("4 soft RoCE / other vendors", "rxe_0 not a rail",
                      lambda: tuned(C / "rdma" / "rdma-link-show-softroce-rxe-underscore-0-netdev-p1p1-ip-addr-3fs-"
                                                 "issue263.txt")[0], None))
    found.append(Fact("4 soft RoCE / other vendors", "bnxt_re0 named as Broadcom",
                      lambda: any("Broadcom" in n for n in tuned(
                          C / "rdma" / "rdma-link-rdma-dev-ibstat-broadcom-bnxt-re0-active-bnxt-re1-down-trailing-"
                                       "spaces-ucx-issue11048.txt")[1]), True, lambda v: v is False))
    for name, want in [
        ("l40s-4gpu-no-nvlink-only-mlx5-dual-port-card-node-to-gpu2-3-sys-to-gpu0-1-warpem-issue106.txt",
         ["mlx5_0", "mlx5_1"]),
        ("4gpu-nv4-4-mlx5-all-node-or-sys-old-format-plus-ifconfig-ib0-ib1-nccl-issue634.txt",
         ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]),
        ("a100-pcie-1gpu-4nic-cx4lx-roce-cx6-ib-tabs.txt", ["mlx5_2", "mlx5_3"]),
    ]:
        found.append(Fact("5 only NIC at NODE", name, partial(rails, name), want, lambda v: v == []))
    for name in ("2x-rtx5090-tabs-phb-then-p2p-rw-matrix-gns-club-3090-issue1229.txt",
                 "4gpu-rtx4090-a6000-all-phb-single-numa-legend-then-shell-prompt-aikitoria-issue1.txt",
                 "5gpu-consumer-pcie-sys-phb-node-2-numa-no-nics-club-3090-issue46.txt",
                 "l40s-4gpu-no-nvlink-only-mlx5-dual-port-card-node-to-gpu2-3-sys-to-gpu0-1-warpem-issue106.txt"):
        found.append(Fact("6 no-NVLink topo -m", name, partial(pcie_only, name), False))
    found.append(Fact("6 no-NVLink topo -m", "legend cut before NV#", cut_legend, False))
    for name in ("mi300x-8gpu-baremetal-spr-8-cx7-ib-gfx942-sm94-xgmi-rccl-topo-expl-model.xml.txt",
                 "mi300x-8gpu-vm-pci-domains-0011-0081-cx7-vf-101e-gfx942-sm94-rccl-topo-expl-model.xml.txt",
                 "gfx90a-8gpu-gcn910-class-038000-xgmi-3-links-eth0-1g-only-rccl-topo-expl-model.xml.txt",
                 "mi300a-4apu-4-numa-slingshot-cxi-speed-200000000-gcn940-rccl-topo-expl-model.xml.txt",
                 "rccl-dump-vendor-1d94-gpu-gcn-21943-self-closing-no-xgmi-plx-c010-cut-mid-attr-rccl-issue1185.xml.txt"):
        found.append(Fact("7 AMD XML / GPU names", name, partial(capabilities, name), [None]))
    found.append(Fact("7 AMD XML / GPU names", "cxi0 speed=200000000", lambda: detect_paths(
        [C / "topo_xml" / "mi300a-4apu-4-numa-slingshot-cxi-speed-200000000-gcn940-rccl-topo-expl-model.xml.txt"]
    ).nics[0].rate_gbps, None))
    for name, want in [
        ("tag-output-1-0-stdout-prefix-t4-2node-efa-aws-libfabric-allreduce-info-interleaved-nccl2.12.7-aws-do-eks.txt",
         [(2, 3.15)]),
        ("tag-output-1-0-stdout-stderr-prefix-rtx5090-2rank-1gpu-socket-allreduce-mpi-nccl-tests-2.18.0-nccl-ebpf.txt",
         [(2, 2.31)]),
        ("srun-label-space-0-colon-prefix-h100-2node-16rank-allreduce-validation-0-wrong-na-nccl-tests-issue290.txt",
         [(16, 167.87)]),
        ("no-nthread-line-no-trailing-hash-srun-label-h100-2node-ring-allreduce-nccl-tests-issue290-comment.txt",
         [(16, 102.27)]),
        ("info-lines-between-header-and-rows-sendrecv-h100-2node-4gpu-roce-mlx5_5-pxn-no-collective-name-moc-roce-"
         "testing.txt", [(8, 5.86)]),
        ("gb200-nvl72-nvidia-graphics-device-vs-nvidia-gb200-device-lines-3-runs-72-144-1440-ranks-coreweave-nccl-"
         "tests-readme.txt", [(72, 846.82), (144, 820.36), (1440, 405.74)]),
        ("two-interleaved-nthread-headers-non-mpi-build-2-hosts-h800-cut-in-devlist-nccl-tests-issue213.txt",
         [(0, None), (4, None)]),
    ]:
        found.append(Fact("8 nccl-tests tables", name, partial(runs, name), want))
    found.append(Fact("9 few GPUs per node", "2 nodes x 1 H100 with 4 x 400G: model GB/s", one_h100_four_nics, 50.4))
    return found


def main() -> None:
    score: dict[str, dict[str, int]] = {}
    for fact in facts():
        try:
            value = fact.read()
            result = "right" if value == fact.expected else ("missing" if fact.unknown(value) else "wrong")
        except Exception:  # a refusal (ParseError) or a crash of an older checkout: the fact is missing
            result = "missing"
        score.setdefault(fact.cls, {"right": 0, "wrong": 0, "missing": 0})[result] += 1
    total = {"right": 0, "wrong": 0, "missing": 0}
    for cls in sorted(score):
        print(f"{cls}: {score[cls]}")
        for key in total:
            total[key] += score[cls][key]
    print(f"total: {total} of {sum(total.values())} facts")


if __name__ == "__main__":
    main()
