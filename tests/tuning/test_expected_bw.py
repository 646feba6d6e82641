"""The busbw model against every published nccl-tests peak among the real captures.

`CAPTURES` lists each nccl-tests output in shared/fixtures/nccl_tests, tests/captures/nccl_tests
and tests/captures/mixed with the node facts its file or source note states, written out here.
A capture whose setup is outside what the model describes (a TCP transport, a VM that hides its
PCI tree, a run that failed) is excluded with the reason, never fitted. `markdown_table()` is the
table docs/tuning.md shows; `pytest -s -k table` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, SHARED_FIXTURES, require_shared_fixtures
from tests.tuning import topologies as topo
from toolkit.bench.nccl_tests import (
    NcclTestsResult,
    collective,
    looks_like_nccl_tests,
    parse_nccl_tests_runs,
)
from toolkit.topology.model import Gpu, GpuLink, Nic, Topology
from toolkit.tuning.expected_bw import Prediction, all_reduce_busbw, collective_busbw, intra_node

BAND = 0.15  # the model must land within +-15% of every published figure it describes
CAPTURES_DIR = REPO / "tests" / "captures"


def _node(gpus: int, nvlinks: int | None, sm: str, nics: int = 0, gbps: float = 0.0,
          nvswitch: bool | None = None) -> Topology:
    """A node from stated facts: `gpus` GPUs, each pair NV<nvlinks> (None: PCIe only), `nics`
    RDMA ports at `gbps` each (listed by an RDMA tool and up)."""
    links = [[GpuLink(kind="X") if i == j else
              (GpuLink(kind="NV", nvlinks=nvlinks) if nvlinks else GpuLink(kind="PIX"))
              for j in range(gpus)] for i in range(gpus)]
    return Topology(
        gpus=[Gpu(index=i, compute_capability=sm) for i in range(gpus)],
        gpu_links=links,
        nics=[Nic(name=f"mlx5_{i}", rate_gbps=gbps, state="PORT_ACTIVE", seen_by=["ibv_devinfo"])
              for i in range(nics)],
        nvswitch=nvswitch,
    )


@dataclass(frozen=True)
class Capture:
    path: Path
    facts: str  # where the node facts below come from
    node: Topology | None = None
    op: str | None = None  # the collective, where the output does not name it
    nodes: int | None = None  # where the output has no device list
    gpus_per_node: int | None = None
    excluded: str | None = None  # why the model does not describe this run


def _shared(name: str) -> Path:
    return SHARED_FIXTURES / "nccl_tests" / name


CAPTURES: tuple[Capture, ...] = (
    Capture(_shared("gcp-a3high-1node-8xh100-allreduce.txt"),
            "8x H100 80GB HBM3, NV18 to NVSwitch (INDEX.md); EFF_NVLS is calibrated on this row",
            _node(8, 18, "9.0", nvswitch=True)),
    Capture(_shared("gcp-a3mega-2node-16xh100-allreduce.txt"), "a3-megagpu-8g, GPUDirect-TCPXO (INDEX.md)",
            excluded="GPUDirect-TCPXO is a TCP-based transport (~123 us latency floor): outside the RDMA model"),
    Capture(_shared("h800-2node-alltoall-devapi-ima-failure.txt"), "2x 8 H800 (INDEX.md)",
            excluded="the run failed (illegal memory access): no bandwidth to compare"),
    Capture(CAPTURES_DIR / "nccl_tests" / "h100-xe9680-2node-16gpu-8x400g-ib-allreduce-mpi-warning-in-devlist.txt",
            "Dell XE9680: 8x H100 + 8x CX-7 IB 400 Gb/s per host (source note)",
            _node(8, 18, "9.0", 8, 400.0, nvswitch=True)),
    Capture(CAPTURES_DIR / "nccl_tests" / "h200-2node-baremetal-allreduce-1g-16g-factor3.txt",
            "8x H200 + 8x CX-7 400 Gb/s (speed=\"400000\" in topo_xml/h200-baremetal-topo-dump-cut-mid-nic)",
            _node(8, 18, "9.0", 8, 400.0, nvswitch=True)),
    Capture(CAPTURES_DIR / "nccl_tests" / "h100-vmware-4vm-32gpu-topo-file-allreduce.txt",
            "4 VMs x 8 H100, \"32 GPU-NIC pairs\" (source note); the NICs are the 400 Gb/s CX-7 IB of the "
            "same author's XE9680 hosts in the same issue",
            _node(8, 18, "9.0", 8, 400.0, nvswitch=True)),
    Capture(CAPTURES_DIR / "nccl_tests" / "h100-8node-64gpu-allreduce-1m-8g.txt",
            "8 nodes x 8 H100 80GB HBM3 (device list); NICs not stated",
            excluded="the NICs (count, rate) are not stated anywhere in the capture or its source"),
    Capture(CAPTURES_DIR / "nccl_tests" / "h100-crusoe-2node-16gpu-nvlstree-rows-only-allreduce.txt",
            "2 hosts x 8 H100 (source note); NCCL lists 8 IB HCAs on them (mixed/h100-2node-ib-sharp-...), "
            "no rate",
            excluded="the NIC rate is not stated, and the rows come without a device list"),
    Capture(CAPTURES_DIR / "nccl_tests" / "h100-crusoe-non-mpi-build-16-single-rank-runs-busbw-zero.txt",
            "nccl-tests built without MPI=1 under mpirun -np 16 (source note)",
            excluded="every process ran alone (1 rank): busbw 0, no link measured; check-log: problem"),
    Capture(CAPTURES_DIR / "mixed" / "h100-2node-ib-sharp-plugin-bootstrap-family-33621-failure-nccl2.18.3.txt",
            "2 hosts x 8 H100 80GB HBM3 (device list)",
            excluded="the run failed at bootstrap (NCCL error 3) before any result row"),
    Capture(CAPTURES_DIR / "nccl_tests" / "h200-2node-kvm-vm-allreduce-collapsed-busbw-blank-row.txt",
            "the bare-metal H200 pair as KVM VMs (source note)",
            excluded="VM with emulated PCI bridges hiding GPU-NIC locality: the model describes the hardware; "
                     "check-log rates this run below expectation"),
    Capture(CAPTURES_DIR / "nccl_tests" / "h200-2node-kvm-vm-numa-topo-file-allreduce-no-devlist.txt",
            "the same VMs with NUMA, vCPU pinning and a hand-written NCCL_TOPO_FILE (source note)",
            excluded="VM still short of bare metal (the thread traces the rest to host ACS/ATS settings), "
                     "and no device list"),
    Capture(CAPTURES_DIR / "nccl_tests" / "l40s-2node-1gpu-each-socket-ib-disabled-hash-stripped-cut-at-16m.txt",
            "NCCL_IB_DISABLE=1 on the command line (source)",
            excluded="NCCL_IB_DISABLE=1: TCP sockets, outside the RDMA model; the table also stops at 16 MiB"),
    Capture(CAPTURES_DIR / "nccl_tests" / "oci-bm-gpu4.8-1node-8xa100-40gb-allreduce-10gib.txt",
            "OCI BM.GPU4.8: 8x A100-SXM4-40GB, NV12 via NVSwitch (device list, A100 SXM4)",
            _node(8, 12, "8.0", nvswitch=True)),
    Capture(CAPTURES_DIR / "nccl_tests" / "oci-bm-gpu4.8-2node-16xa100-40gb-16x100g-roce-allreduce-10gib.txt",
            "2x BM.GPU4.8, RoCEv2 cluster network \"100Gbps x 16 per node\" (source note)",
            _node(8, 12, "8.0", 16, 100.0, nvswitch=True)),
    Capture(CAPTURES_DIR / "nccl_tests" / "rtx2080ti-1node-2gpu-allreduce-pcie-p2p-not-supported.txt",
            "2x GeForce RTX 2080 Ti in an AutoDL container, PIX, no NVLink (topo capture of the same host)",
            excluded="GPU peer-to-peer is not supported in that container: NCCL stages through host memory; "
                     "the model assumes PCIe peer-to-peer"),
    Capture(CAPTURES_DIR / "mixed" / "a100-1node-2gpu-sendrecv-info-p2p-direct-nccl2.22.3.txt",
            "sendrecv_perf (source note) on lrdn2296: 4x A100-SXM-64GB, every pair NV4 "
            "(topo/a100-sxm-64gb-4gpu-nv4-4ib-pxb-numa-range)",
            _node(4, 4, "8.0"), op="sendrecv"),
    Capture(CAPTURES_DIR / "mixed" / "a100-4node-2gpu-sharp-collnet-fallback-allreduce-info-nccl2.23.4.txt",
            "4 nodes x 2 A100-SXM4-80GB, 6 IB HCAs listed by NCCL without a rate",
            excluded="the NIC rate is not in the capture (NCCL's NET/IB line names the HCAs only)"),
    Capture(CAPTURES_DIR / "mixed" / "a100-pcie-2node-gather-trace-roce25g-plus-ib200g-nccl2.16.5.txt",
            "1 GPU per node; NCCL's topology print in the file: NET/1 at 25 GB/s (200 Gb/s IB), NET/0 at 3.1",
            Topology(gpus=[Gpu(index=0)],
                     nics=[Nic(name="NET/1", rate_gbps=200.0), Nic(name="NET/0", rate_gbps=25.0)])),
    Capture(CAPTURES_DIR / "mixed" / "h20-vm-2node-2gpu-alltoall-tencent-plugin-roce-bond-nccl2.26.5.txt",
            "2 VMs x 2 H20, Tencent RDMA plugin over mlx5_bond_6/7 RoCE, no rate in the capture",
            op="alltoall",
            excluded="the bond NICs' rate is not in the capture (no topology print, no ibv_devinfo)"),
    Capture(CAPTURES_DIR / "nccl_tests" / "h100-1node-8gpu-g8-allgather-ring-8-8g-four-zero-size-rows-nccl2.26.2.txt",
            "1 node, 8x H100 80GB HBM3 (device list), NV18 to NVSwitch as on every HGX H100",
            _node(8, 18, "9.0", nvswitch=True)),
    Capture(CAPTURES_DIR / "nccl_tests"
            / "h100-1node-8gpu-g8-reduce-scatter-ring-8-8g-four-zero-size-rows-nccl2.26.2.txt",
            "the same host as the all_gather row (device list, source note)",
            _node(8, 18, "9.0", nvswitch=True)),
    Capture(CAPTURES_DIR / "nccl_tests" / "h100-1node-8gpu-g8-allreduce-ring-8-8g-same-host-as-allgather.txt",
            "the same host as the all_gather row; the source file name says ring",
            excluded="run with the ring algorithm (source file name) where the model predicts NCCL's default "
                     "NVLS; its 368.62 matches the nvlink-ring bound of the all_gather/reduce_scatter rows"),
    Capture(CAPTURES_DIR / "mixed" / "h100-2node-1gpu-each-roce-mlx5_5-400g-no-gdrdma-ring-allreduce-1g-26g-step-2g-"
            "moc-roce-testing.txt",
            "2 nodes x 1 H100 80GB HBM3 (device list), one RoCE port each (mlx5_5); the repository's README: "
            "\"Largest possible bandwidth value: 400 Gbps\"",
            excluded="GPUDirect RDMA off: every channel goes `via NET/IB/1` without /GDRDMA, so data is staged "
                     "through host memory, which the model does not describe (it would give 45 GB/s: the 400G "
                     "port x 0.9, under the H100's 50.4 GB/s host link)"),
    Capture(CAPTURES_DIR / "nccl_tests" / "h200-2node-1gpu-1nic-each-gke-dranet-mpijob-allreduce-1k-8g-openmpi-openib-"
            "warnings-dranet-docs.txt",
            "2 GKE workers x 1 H200, \"each getting one GPU and one DRANET-managed RDMA NIC\" (source note)",
            excluded="the RDMA NIC's rate is not stated in the capture or its page"),
    Capture(CAPTURES_DIR / "nccl_tests" / "b200-2node-16rank-nvidia-b200-device-lines-gke-gib-allgather-nccl2.26.6-"
            "dranet-docs.txt",
            "2 GKE pods x 8 NVIDIA B200, all_gather by the command's `-t all_gather` (source note)", op="all_gather",
            excluded="the NICs (count, rate) are not stated in the capture or its page"),
    Capture(CAPTURES_DIR / "nccl_tests" / "b200-2node-nvidia-b200-device-lines-vm-bus-00-05-0c-nccl-tests-2.19.6-cut-"
            "in-rank8-nccl-tests-issue389.txt",
            "2 x 8 B200 (poster), cut in the device list",
            excluded="the capture stops in its device list: no result row"),
    Capture(CAPTURES_DIR / "nccl_tests" / "gb200-nvl72-nvidia-graphics-device-vs-nvidia-gb200-device-lines-3-runs-72-"
            "144-1440-ranks-coreweave-nccl-tests-readme.txt",
            "GB200 NVL72 racks (the README): 72, 144 and 1,440 ranks; the first run (one rack) is compared",
            excluded="one NVL72 rack is 18 trays joined by NVLink switches (multi-node NVLink): the model describes "
                     "NVLink inside a node and RDMA between nodes"),
    Capture(CAPTURES_DIR / "nccl_tests" / "hash-stripped-a100-1node-8rank-mpi-old-format-no-group-cut-in-header-nccl-"
            "issue583.txt",
            "1 node x 8 A100 (poster), cut in its header",
            excluded="the capture stops in its header: no result row"),
    Capture(CAPTURES_DIR / "nccl_tests" / "hash-stripped-a10g-g5.8xlarge-1rank-blocking-enabled-line-cut-at-first-row-"
            "nccl-tests-issue249.txt",
            "1 rank on one A10G (g5.8xlarge)",
            excluded="one rank: no link measured, and the capture stops at its first row"),
    Capture(CAPTURES_DIR / "nccl_tests" / "info-lines-between-header-and-rows-sendrecv-h100-2node-4gpu-roce-mlx5_5-pxn-"
            "no-collective-name-moc-roce-testing.txt",
            "2 nodes x 4 H100 sharing one RoCE port (mlx5_5, the README's 400 Gbps), sendrecv by the source's command",
            op="sendrecv",
            excluded="5.86 GB/s is 13% of the model's 45 (in sendrecv_perf one GPU per node crosses, alone on the "
                     "400G port); the README reports the same figure as its best: a setup fault to find, not a healthy "
                     "run to measure the model by"),
    Capture(CAPTURES_DIR / "nccl_tests" / "no-nthread-line-no-trailing-hash-srun-label-h100-2node-ring-allreduce-nccl-"
            "tests-issue290-comment.txt",
            "2 nodes x 8 H100, 8 x CX-7 NDR 400 Gb/s each (poster), NCCL_ALGO=RING",
            excluded="the thread is about these runs being slow (102.27 against the model's ring bound of 360 GB/s for "
                     "8 x 400G): a problem to find, not a figure to fit"),
    Capture(CAPTURES_DIR / "nccl_tests" / "srun-label-space-0-colon-prefix-h100-2node-16rank-allreduce-validation-0-"
            "wrong-na-nccl-tests-issue290.txt",
            "2 nodes x 8 H100, 8 x CX-7 NDR 400 Gb/s each (poster)",
            excluded="the thread is about this run being slow (167.87 against the model's 480.4 for NVLS on 2 nodes of "
                     "8 x 400G): a problem to find, not a figure to fit"),
    Capture(CAPTURES_DIR / "nccl_tests" / "reduce-scatter-2node-4gpu-zero-size-rows-passage-cut-mid-row.txt",
            "2 nodes x 4 GPUs (poster), reduce_scatter_perf",
            excluded="the GPUs and NICs are not stated, and the table stops mid-row"),
    Capture(CAPTURES_DIR / "nccl_tests" / "tag-output-1-0-stdout-prefix-t4-2node-efa-aws-libfabric-allreduce-info-"
            "interleaved-nccl2.12.7-aws-do-eks.txt",
            "2 EKS nodes x 1 Tesla T4 over EFA (AWS OFI plugin)",
            excluded="EFA through the AWS OFI plugin (libfabric SRD), whose rate the capture does not state; the model "
                     "describes verbs RDMA of a stated rate"),
    Capture(CAPTURES_DIR / "nccl_tests" / "tag-output-1-0-stdout-stderr-prefix-rtx5090-2rank-1gpu-socket-allreduce-mpi-"
            "nccl-tests-2.18.0-nccl-ebpf.txt",
            "2 ranks on one RTX 5090 host over sockets (the source)",
            excluded="TCP sockets: outside the RDMA model"),
    Capture(CAPTURES_DIR / "nccl_tests" / "two-interleaved-nthread-headers-non-mpi-build-2-hosts-h800-cut-in-devlist-"
            "nccl-tests-issue213.txt",
            "2 hosts x 8 H800 running separately (a build without MPI), cut in the device list",
            excluded="two independent runs' headers and no result row"),
    Capture(CAPTURES_DIR / "nccl_tests" / "two-runs-allgather-b200-rows-elided-dots-no-avg-then-header-only-no-rows-"
            "gib-run-nccl-tests-dranet-docs.txt",
            "GKE pods with 2 NVIDIA B200 each (the page), all_gather by the command",
            excluded="the NICs are not stated, and the rows are elided (`...`) with no summary"),
    Capture(CAPTURES_DIR / "nccl_tests" / "h100-2node-16gpu-alltoall-then-sendrecv-double-32m-16g-two-runs.txt",
            "2 nodes x 8 H100 80GB HBM3 (device list); the first run (alltoall_perf) is compared",
            excluded="the NICs (count, rate) are not stated anywhere in the capture or its source"),
)


def _result(capture: Capture) -> NcclTestsResult:
    # the first run: a log may hold several (alltoall_perf then sendrecv_perf)
    return parse_nccl_tests_runs(capture.path.read_text(), capture.path.name, allow_truncated=True)[0]


def predict(capture: Capture) -> tuple[NcclTestsResult, Prediction]:
    assert capture.node is not None
    result = _result(capture)
    op = capture.op or collective(result)
    assert op is not None, capture.path.name
    nodes = capture.nodes or len(result.hosts)
    per_node = capture.gpus_per_node or sum(1 for d in result.devices if d.host == result.hosts[0])
    return result, collective_busbw(capture.node, nodes, op, gpus_per_node=per_node)


def markdown_table() -> str:
    lines = ["| capture | measured peak busbw (GB/s) | model (GB/s) | error | bound / why excluded |",
             "| --- | ---: | ---: | ---: | --- |"]
    for capture in CAPTURES:
        result = _result(capture)
        measured = ("failed" if result.failed or result.peak_busbw_gbps is None
                    else f"{result.peak_busbw_gbps:g}")
        name = f"`{capture.path.parent.name}/{capture.path.name}`"
        if capture.excluded is not None:
            lines.append(f"| {name} | {measured} | excluded | | {capture.excluded} |")
            continue
        _, prediction = predict(capture)
        error = (result.peak_busbw_gbps or 0.0) / prediction.busbw_gbps - 1
        lines.append(f"| {name} | {measured} | {prediction.busbw_gbps:.1f} | {error:+.1%} | "
                     f"{prediction.limit}: {capture.facts} |")
    return "\n".join(lines)


def _published() -> set[Path]:
    files = [*(SHARED_FIXTURES / "nccl_tests").glob("*.txt"), *(CAPTURES_DIR / "nccl_tests").glob("*.txt"),
             *(CAPTURES_DIR / "mixed").glob("*.txt")]
    return {f for f in files if looks_like_nccl_tests(f.read_text())}


def test_every_nccl_tests_capture_is_in_the_table() -> None:
    require_shared_fixtures()
    assert {c.path for c in CAPTURES} == _published()


@pytest.mark.parametrize("capture", [c for c in CAPTURES if c.excluded is None], ids=lambda c: c.path.name)
def test_model_within_15_percent_of_the_published_peak(capture: Capture) -> None:
    if capture.path.is_relative_to(SHARED_FIXTURES):
        require_shared_fixtures()
    result, prediction = predict(capture)
    assert result.peak_busbw_gbps is not None
    error = result.peak_busbw_gbps / prediction.busbw_gbps - 1
    assert abs(error) <= BAND, (capture.path.name, result.peak_busbw_gbps, prediction)


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    require_shared_fixtures()
    table = markdown_table()
    with capsys.disabled():
        print("\n" + table)
    rows = table.splitlines()[2:]
    assert len(rows) == len(CAPTURES)
    assert rows[0] == ("| `nccl_tests/gcp-a3high-1node-8xh100-allreduce.txt` | 479.93 | 480.4 | -0.1% | nvls: "
                       "8x H100 80GB HBM3, NV18 to NVSwitch (INDEX.md); EFF_NVLS is calibrated on this row |")


def test_published_figures_literally() -> None:
    require_shared_fixtures()
    # The measured peaks the table compares against, as the files print them.
    peaks = {c.path.name: _result(c).peak_busbw_gbps for c in CAPTURES}
    assert peaks["gcp-a3high-1node-8xh100-allreduce.txt"] == 479.93
    assert peaks["gcp-a3mega-2node-16xh100-allreduce.txt"] == 338.82
    assert peaks["h100-xe9680-2node-16gpu-8x400g-ib-allreduce-mpi-warning-in-devlist.txt"] == 469.21
    assert peaks["h200-2node-baremetal-allreduce-1g-16g-factor3.txt"] == 488.81
    assert peaks["h100-vmware-4vm-32gpu-topo-file-allreduce.txt"] == 365.84
    assert peaks["oci-bm-gpu4.8-1node-8xa100-40gb-allreduce-10gib.txt"] == 232.2
    assert peaks["oci-bm-gpu4.8-2node-16xa100-40gb-16x100g-roce-allreduce-10gib.txt"] == 191.76
    assert peaks["a100-1node-2gpu-sendrecv-info-p2p-direct-nccl2.22.3.txt"] == 73.83
    assert peaks["a100-pcie-2node-gather-trace-roce25g-plus-ib200g-nccl2.16.5.txt"] == 23.61


def test_two_nodes_go_above_line_rate_only_by_the_tree() -> None:
    # 2 nodes x 8 GPUs with 8 x 200 Gb/s: the tree moves 1x per node, so busbw may exceed the
    # 200 GB/s line rate (N/(N-1)*(R-1)/R = 1.875); from 3 nodes on the ring bound applies.
    node = _node(8, 18, "9.0", 8, 200.0, nvswitch=True)
    two = all_reduce_busbw(node, nodes=2)
    assert (two.limit, round(two.busbw_gbps, 1)) == ("network", 337.5)
    assert two.busbw_gbps > 8 * 200 / 8
    four = all_reduce_busbw(node, nodes=4)
    assert (four.limit, round(four.busbw_gbps, 1)) == ("network", 180.0)


def test_a100_ring_and_pcie_only() -> None:
    a100 = intra_node(topo.simai_a100())
    assert a100.limit == "nvlink-ring"
    assert a100.busbw_gbps == pytest.approx(12 * 25 * 0.8)
    pcie = intra_node(Topology(gpus=[Gpu(index=0), Gpu(index=1)]))
    assert pcie.limit == "pcie"


def test_nvls_never_below_the_ring_on_few_gpus() -> None:
    # nccl issue 1455: NVLS busbw stays at the ring's on 2-4 H100s.
    two = intra_node(_node(2, 18, "9.0", nvswitch=True))
    assert (two.limit, two.busbw_gbps) == ("nvlink-ring", 18 * 25 * 0.8)


def test_docs_show_the_same_table() -> None:
    require_shared_fixtures()
    assert markdown_table() in (REPO / "docs" / "tuning.md").read_text()


def test_one_gpu_per_node_is_bound_by_its_host_link_not_by_every_nic_of_the_node() -> None:
    # 1 H100 (PCIe Gen5 x16: 63 GB/s per direction, x 0.8) with 4 x 400G NICs: the GPU cannot fill
    # 200 GB/s of NICs; the model was 180 GB/s before it took the host link into account.
    one_gpu = _node(1, None, "9.0", 4, 400.0)
    prediction = all_reduce_busbw(one_gpu, 2)
    assert (round(prediction.busbw_gbps, 1), prediction.limit) == (50.4, "pcie")
    assert prediction.explanation == ("host link: 1 GPU(s) per node x PCIe Gen5 x16 63 GB/s per direction x 0.8 = "
                                      "50.4 GB/s, below the NICs' 200 GB/s x 0.9: the GPUs' host links are the "
                                      "bottleneck")
    # An A100 (Gen4: 25.2) with one 200G port: the NIC (22.5) is the bound, as before.
    assert (all_reduce_busbw(_node(1, None, "8.0", 1, 200.0), 2).busbw_gbps, ) == (22.5, )
    # 8 GPUs x 50.4 GB/s of host links fill 8 x 400G NICs: the network bound stays (3 nodes: ring).
    assert round(all_reduce_busbw(_node(8, 18, "9.0", 8, 400.0, nvswitch=True), 3).busbw_gbps, 1) == 360.0
    # Other collectives take the same cap: all_gather on 2 nodes of 1 H100 + 4 x 400G.
    gather = collective_busbw(one_gpu, 2, "all_gather")
    assert (round(gather.busbw_gbps, 1), gather.limit) == (50.4, "pcie")


def test_newer_and_generic_gpu_names() -> None:
    from toolkit.tuning.expected_bw import generic_gpu_name, gpu_facts

    facts = {name: (f.nvlinks, f.compute_capability) if (f := gpu_facts(name)) else None
             for name in ("NVIDIA H20", "NVIDIA H20-3e", "NVIDIA B200", "NVIDIA GB200", "NVIDIA Graphics Device")}
    assert facts == {"NVIDIA H20": (18, "9.0"), "NVIDIA H20-3e": (18, "9.0"), "NVIDIA B200": (18, "10.0"),
                     "NVIDIA GB200": (18, "10.0"), "NVIDIA Graphics Device": None}
    assert generic_gpu_name(" NVIDIA Graphics Device")
    # The GB200 README runs show one device line each: no expectation, and it says why.
    from toolkit.bench.expectation import judge_run

    name = ("gb200-nvl72-nvidia-graphics-device-vs-nvidia-gb200-device-lines-3-runs-72-144-1440-ranks-coreweave-"
            "nccl-tests-readme.txt")
    first = parse_nccl_tests_runs((CAPTURES_DIR / "nccl_tests" / name).read_text(), name, allow_truncated=True)[0]
    verdict = judge_run(first)
    assert (verdict.verdict, verdict.message) == (
        "unknown", "the output lists 1 of its 72 ranks' devices (an excerpt): how many GPUs each node ran is "
                   "unknown, so no expectation")


def test_docs_few_gpu_rows_are_the_models() -> None:
    # The rows docs/tuning.md states for the host-link cap, from the model itself.
    assert round(all_reduce_busbw(_node(1, None, "9.0", 4, 400.0), 2).busbw_gbps, 1) == 50.4
    assert all_reduce_busbw(_node(1, None, "8.0", 1, 200.0), 2).busbw_gbps == 22.5
    assert collective_busbw(_node(4, 18, "9.0", 1, 400.0), 2, "sendrecv").busbw_gbps == 45.0
    text = (REPO / "docs" / "tuning.md").read_text()
    for row in ("| 2 nodes x 1 H100, 4 x 400G NICs each | all_reduce | 50.4 |",
                "| 2 nodes x 4 H100, one 400G port each | sendrecv | 45.0 |"):
        assert row in text


def test_sendrecv_crosses_over_one_gpus_own_rails() -> None:
    # 8 GPUs with a 400G NIC each: the crossing GPU has its own NIC, not all eight.
    assert collective_busbw(_node(8, 18, "10.0", 8, 400.0), 2, "sendrecv").busbw_gbps == 45.0
    # 4 GPUs sharing one 400G port: the crossing GPU has it alone.
    assert collective_busbw(_node(4, 18, "9.0", 1, 400.0), 2, "sendrecv").busbw_gbps == 45.0
