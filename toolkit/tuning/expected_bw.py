"""Expected large-message all-reduce bus bandwidth (nccl-tests busbw, GB/s) from a topology.

busbw is nccl-tests' definition: algbw * 2(R-1)/R for all-reduce over R ranks, which makes it
comparable to a link's bandwidth for a ring. Two things make busbw *exceed* a link's rate, and
both are legitimate:
- NVLS: the NVSwitch does the reduction, so each GPU sends its data once instead of 2(R-1)/R
  times; busbw is then up to 2(R-1)/R times the per-GPU NVLink rate.
- Few nodes: with a hierarchical (tree / NVLS-tree) all-reduce each node sends 2(N-1)/N of its
  data over the network, not 2(R-1)/R; on 2 nodes that is 1x, so busbw can reach
  N/(N-1) * (R-1)/R = 1.875x the node's NIC line rate (2 nodes x 8 GPUs).

Constants and where they come from:
- NVLink: 25 GB/s per direction per link through NVLink 4 (H100 SXM: 18 links, "900GB/s of
  bidirectional GPU-to-GPU bandwidth", https://www.nvidia.com/en-us/data-center/h100/); NVLink 3
  (A100: 12 links, 600 GB/s bidirectional) is also 25 GB/s per direction per link. NVLink 5
  (Blackwell, sm100) doubles that to 50 GB/s per direction per link (1.8 TB/s for 18 links).
- PCIe: 16 GT/s x16 (Gen4) ~ 31.5 GB/s per direction (128b/130b encoding).
- Efficiencies: EFF_NVLS and EFF_NET are *calibrated* on the two published nccl-tests results in
  shared/fixtures/nccl_tests (8xH100 one node: 479.93; 2 nodes a3-mega TCPXO: 338.82), so the
  test that compares them is a regression guard of the model, not an independent validation.
  EFF_RING is an assumption (80% of the link for a ring) until a real ring figure is captured.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolkit.topology.model import Topology

NVLINK_GBPS_PER_LINK_DIR = 25.0  # NVLink 3 and 4
NVLINK5_GBPS_PER_LINK_DIR = 50.0  # NVLink 5 (sm100+)
PCIE_GEN4_X16_GBPS_DIR = 31.5
EFF_NVLS = 0.61  # calibrated: 479.93 / (18 * 25 * 1.75)
EFF_RING = 0.80  # assumption
EFF_NET = 0.90  # calibrated: 338.82 / (8 * 200 / 8 * 1.875)


@dataclass(frozen=True)
class Prediction:
    busbw_gbps: float
    limit: str  # "nvls" | "nvlink-ring" | "pcie" | "network"
    explanation: str


def _bus_factor(ranks: int) -> float:
    return 2 * (ranks - 1) / ranks


def _nvlinks_per_gpu(topology: Topology) -> int | None:
    counts = [cell.nvlinks for row in topology.gpu_links for cell in row if cell.kind == "NV" and cell.nvlinks]
    return max(counts) if counts else None


def _sm(topology: Topology) -> float | None:
    caps = {g.compute_capability for g in topology.gpus if g.compute_capability}
    return float(next(iter(caps))) if len(caps) == 1 else None


def intra_node(topology: Topology, *, nvls: bool | None = None) -> Prediction:
    """busbw of an all-reduce over the GPUs of one node."""
    gpus = len(topology.gpus)
    if gpus < 2:
        return Prediction(0.0, "none", "fewer than 2 GPUs: no intra-node all-reduce")
    links = _nvlinks_per_gpu(topology)
    sm = _sm(topology)
    if links is None:
        bw = PCIE_GEN4_X16_GBPS_DIR * EFF_RING
        return Prediction(bw, "pcie", f"no NVLink: ring over PCIe Gen4 x16 {PCIE_GEN4_X16_GBPS_DIR} GB/s x {EFF_RING}")
    per_link = NVLINK5_GBPS_PER_LINK_DIR if sm is not None and sm >= 10 else NVLINK_GBPS_PER_LINK_DIR
    link_bw = links * per_link
    nvswitch = topology.nvswitch if topology.nvswitch is not None else gpus >= 8
    use_nvls = nvls if nvls is not None else bool(nvswitch and (sm is None or sm >= 9) and links >= 18)
    if use_nvls:
        bw = link_bw * _bus_factor(gpus) * EFF_NVLS
        return Prediction(bw, "nvls", f"NVLS: {links} links x {per_link} GB/s x 2({gpus}-1)/{gpus} x {EFF_NVLS}")
    bw = link_bw * EFF_RING
    return Prediction(bw, "nvlink-ring", f"ring over NVLink: {links} links x {per_link} GB/s x {EFF_RING}")


def node_network_gbps(topology: Topology, rails: list[str] | None = None) -> float:
    """Line rate of the node's GPU NICs in GB/s (sum over rails of rate_gbps / 8)."""
    by_name = {n.name: n for n in topology.nics}
    names = rails if rails is not None else [n.name for n in topology.nics]
    return sum((by_name[n].rate_gbps or 0.0) / 8 for n in names if n in by_name)


def all_reduce_busbw(topology: Topology, nodes: int, *, rails: list[str] | None = None,
                     nvls: bool | None = None) -> Prediction:
    """Large-message all-reduce busbw over `nodes` nodes shaped like `topology`."""
    inside = intra_node(topology, nvls=nvls)
    if nodes <= 1:
        return inside
    net = node_network_gbps(topology, rails)
    if net <= 0:
        return Prediction(0.0, "network", "no NIC line rate known: cannot predict across nodes")
    ranks = nodes * max(1, len(topology.gpus))
    # Hierarchical all-reduce: each node moves 2(N-1)/N of its data over the network.
    factor = (nodes / (nodes - 1)) * ((ranks - 1) / ranks)
    across = net * EFF_NET * factor
    if across < inside.busbw_gbps:
        return Prediction(across, "network", (
            f"network: {net:.0f} GB/s line rate x {EFF_NET} x N/(N-1)*(R-1)/R = {factor:.3f} "
            f"(N={nodes}, R={ranks}); above line rate on few nodes is expected"
        ))
    return inside
