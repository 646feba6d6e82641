"""The all-reduce bus bandwidth an offer can be expected to reach: measured (a `gpuctl bench`
results.json for the same provider and instance type), else the model (`collective_busbw`).

The model needs a node's shape; here it comes from the catalog row, never invented:
- GPUs: the row's count. NVLink: links per GPU only where the row's own source states the
  NVLink bandwidth (NVLINK_LINKS); a row with NVLink of unstated bandwidth is modelled as PCIe,
  which makes its figure a lower bound, and says so.
- NICs: the row's RDMA NICs sharing the row's RDMA bandwidth (one NIC when the count is unknown).
  Without RDMA, traffic between nodes is TCP, which the model does not describe: no figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from toolkit.bench import results as bench_results
from toolkit.catalog.models import InstanceType
from toolkit.topology.model import Gpu, GpuLink, Nic, Topology
from toolkit.tuning.expected_bw import ALL_REDUCE, NVLINK_GBPS_PER_LINK_DIR, collective_busbw

# family -> (NVLink links per GPU, what the row's source says). links = bidirectional GB/s / (2 x 25).
NVLINK_LINKS: dict[str, tuple[int, str]] = {
    "GT4": (12, "600 GB/s NVLink (intl.cloud.tencent.com/document/product/560/19701, read 2026-11-29)"),
    "HCCG5v": (6, "300 GB/s NVLink (cloud.tencent.com/document/product/213/11518, read 2026-11-29)"),
    "ebmgn8v": (18, "900 GB/s NVLink (Alibaba GPU instance families page, read 2026-12-01)"),
}


@dataclass(frozen=True)
class Busbw:
    gbps: float | None  # GB/s; None when neither a measurement nor the model gives one
    origin: Literal["measured", "model"] | None
    basis: str  # how the figure was reached, or why there is none


@dataclass(frozen=True)
class Measured:
    provider: str
    instance_type: str
    nodes: int
    gpus_per_node: int
    busbw_gbps: float
    where: str  # results.json path and when it ran


def load_measured(run_dirs: list[Path]) -> tuple[dict[tuple[str, str], Measured], list[str]]:
    """The best tuned all-reduce peak of each (provider, instance type) among the runs, and notes on
    runs that could not count (replayed in the lab, no instance type, no all-reduce that finished).
    A missing or unreadable run directory is the caller's UsageError/ParseError (bench.results.load)."""
    best: dict[tuple[str, str], Measured] = {}
    notes: list[str] = []
    for run_dir in run_dirs:
        doc = bench_results.load(run_dir)
        meta, where = doc.meta, str(run_dir / bench_results.FILE_NAME)
        if meta.replayed:
            notes.append(f"--bench {run_dir}: replayed from captures of other machines, not a measurement: ignored")
            continue
        if not meta.instance_type:
            notes.append(f"--bench {run_dir}: the run names no instance type: ignored")
            continue
        peaks = [s.peak_busbw_gbps for s in doc.series if s.collective == ALL_REDUCE and s.variant == "tuned"
                 and not s.failed and s.peak_busbw_gbps is not None]
        if not peaks:
            notes.append(f"--bench {run_dir}: no finished tuned all_reduce series: ignored")
            continue
        found = Measured(meta.provider, meta.instance_type, meta.nodes, meta.gpus_per_node, max(peaks),
                         f"{where}" + (f", run {meta.started_at}" if meta.started_at else ""))
        key = (found.provider, found.instance_type)
        if key not in best or found.busbw_gbps > best[key].busbw_gbps:
            best[key] = found
    return best, notes


def node_topology(row: InstanceType) -> tuple[Topology, list[str]]:
    """A node shaped like the row, and what the shape rests on."""
    assert row.gpu is not None
    count = row.gpu.count
    gpus = [Gpu(index=i, model=row.gpu.model) for i in range(count)]
    notes: list[str] = []
    links: list[list[GpuLink]] = []
    known = NVLINK_LINKS.get(row.family)
    if known is not None and count > 1:
        links = [[GpuLink(kind="X") if i == j else GpuLink(kind="NV", nvlinks=known[0]) for j in range(count)]
                 for i in range(count)]
        notes.append(f"NVLink: {known[0]} links x {NVLINK_GBPS_PER_LINK_DIR:g} GB/s from {known[1]}")
    elif row.gpu.nvlink and count > 1:
        notes.append("NVLink bandwidth not stated by the catalog's source: modelled as PCIe (a lower bound)")
    elif row.gpu.nvlink is None and count > 1:
        # Unknown is not "no": the model's PCIe figure then is a lower bound, and the offer says so.
        notes.append("whether the GPUs have NVLink is not stated by the catalog's source: "
                     "modelled as PCIe (a lower bound)")
    nics: list[Nic] = []
    rdma = row.rdma
    if rdma is not None and rdma.gbps:
        n = rdma.nics or 1
        nics = [Nic(name=f"rdma{i}", rate_gbps=rdma.gbps / n, state="ACTIVE") for i in range(n)]
    return Topology(gpus=gpus, gpu_links=links, nics=nics, nvswitch=row.gpu.nvswitch), notes


def expected(row: InstanceType, nodes: int, gpus_per_node: int, measured: Measured | None) -> Busbw:
    """Measured wins over the model; the basis says which and on what it rests."""
    if row.gpu is None:
        return Busbw(None, None, "no GPU")
    if measured is not None:
        shape = f"{measured.nodes} x {measured.gpus_per_node} GPUs"
        also = "" if measured.nodes == nodes else f"; you need {nodes} node(s), so it may differ"
        return Busbw(measured.busbw_gbps, "measured",
                     f"measured: peak all_reduce busbw on {shape} ({measured.where}){also}")
    if nodes * gpus_per_node < 2:
        return Busbw(None, None, "one GPU: no all-reduce")
    if nodes > 1 and row.rdma is None:
        return Busbw(None, None, "no RDMA: nodes talk over TCP, which the busbw model does not describe")
    if nodes > 1 and not (row.rdma and row.rdma.gbps):
        return Busbw(None, None, "the catalog's source states no RDMA bandwidth for this type: no model figure")
    topology, notes = node_topology(row)
    prediction = collective_busbw(topology, nodes, ALL_REDUCE, rails=[n.name for n in topology.nics] or None,
                                  gpus_per_node=gpus_per_node)
    if prediction.busbw_gbps <= 0:
        return Busbw(None, None, f"no model figure: {prediction.explanation}")
    return Busbw(round(prediction.busbw_gbps, 2), "model",
                 f"model: {prediction.explanation}" + (f"; {'; '.join(notes)}" if notes else ""))
