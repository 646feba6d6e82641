"""Expected large-message nccl-tests bus bandwidth (busbw, GB/s) from a topology.

busbw is nccl-tests' normalisation of algbw by the collective's traffic pattern (all-reduce:
2(R-1)/R over R ranks; all-gather, reduce-scatter, gather, alltoall: (R-1)/R; broadcast, reduce:
1), chosen so that busbw is comparable to the bottleneck link's bandwidth whatever R is
(nccl-tests doc/PERFORMANCE.md). The model therefore predicts the bottleneck link's rate times an
efficiency, plus the two legitimate ways all-reduce busbw *exceeds* a link's rate:
- NVLS: the NVSwitch does the reduction, so each GPU sends its data once instead of 2(R-1)/R
  times; busbw is then up to 2(R-1)/R times the per-GPU NVLink rate.
- Two nodes: with a tree / NVLS-tree all-reduce each node sends 2(N-1)/N of its data over the
  network, not 2(R-1)/R; on 2 nodes that is 1x, so busbw can reach N/(N-1) * (R-1)/R = 1.875x the
  node's NIC line rate (2 nodes x 8 GPUs). nccl-tests issue 196 (sjeaugey): "On two nodes, NCCL
  uses the tree (or nvlstree) algorithm which can indeed go beyond the network bottleneck".
  Inside the node that tree runs at NVLS speed where NVLS exists, else at EFF_TREE x (R-1)/R of
  the ring's: NCCL's own tuning model (src/graph/tuning.cc) rates a tree on <= 2 nodes by the
  intra-node bandwidth (`nNodes <= 2 ? bwIntra : bwInter`) times .92, and converts it to algbw
  with .5 where a ring uses R/2(R-1). The prediction is the better of ring and tree, as NCCL picks.
  From 3 nodes on the model takes the ring bound, busbw = the node's line rate x EFF_NET (there
  the tree is rated by the network bandwidth too, and NCCL's tree never beats its ring).
- Other collectives (`collective_busbw`): all-gather, reduce-scatter, gather, broadcast, reduce and
  sendrecv are bound by the GPU's link (the NVLink ring inside a node, the GPU's share of the
  node's line rate across nodes); alltoall sends only (R-k)/R of each GPU's data off the node,
  so its busbw may reach (R-1)/(R-k) x the GPU's network share.

Constants and where they come from:
- NVLink: 25 GB/s per direction per link through NVLink 4 (H100 SXM: 18 links, "900GB/s of
  bidirectional GPU-to-GPU bandwidth", https://www.nvidia.com/en-us/data-center/h100/); NVLink 3
  (A100: 12 links, 600 GB/s bidirectional) is also 25 GB/s per direction per link. NVLink 5
  (Blackwell, sm100) doubles that to 50 GB/s per direction per link (1.8 TB/s for 18 links).
- PCIe: 16 GT/s x16 (Gen4) ~ 31.5 GB/s per direction (128b/130b encoding).
- NIC line rate: the topology's `rate_gbps` (ibv_devinfo/ibstat), or the `NET[x]` figure of
  NCCL's own topology print (GB/s, = port speed / 8).
- Efficiencies: EFF_NVLS is *calibrated* on the one published single-node NVLS figure
  (shared/fixtures/nccl_tests/gcp-a3high-1node-8xh100-allreduce: 479.93), so that row of the
  comparison table is a regression guard, not a validation. EFF_NET is the fraction of RDMA line
  rate NCCL reaches; 0.90 is checked (not fitted) against the network-bound RDMA captures in the
  table of tests/tuning/test_expected_bw.py. EFF_RING: 80% of the link for a ring; sjeaugey in
  nccl-tests issue 212: "With the protocol overhead (~20%) NCCL can get an effective NVLink
  bandwidth of 370GB/s" of H100's 450 GB/s (0.82).
- Transports the model does not describe: TCP-based ones (NET/Socket, GCP GPUDirect-TCPX/TCPXO),
  whose efficiency depends on host CPU and kernel tuning (`bench.expectation` gives such a run
  no expectation).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from toolkit.topology.model import Gpu, GpuLink, Nic, Topology
from toolkit.topology.rails import nic_state, select_rails

NVLINK_GBPS_PER_LINK_DIR = 25.0  # NVLink 3 and 4
NVLINK5_GBPS_PER_LINK_DIR = 50.0  # NVLink 5 (sm100+)
PCIE_GEN4_X16_GBPS_DIR = 31.5
EFF_NVLS = 0.61  # calibrated: 479.93 / (18 * 25 * 1.75)
EFF_RING = 0.80  # nccl-tests#212: ~370 of 450 GB/s NVLink after protocol overhead
EFF_NET = 0.90  # RDMA: checked against the network-bound captures (see module docstring)
EFF_TREE = 0.92  # NCCL's tuning model (src/graph/tuning.cc): tree all-reduce busBw * .92

# Collectives by traffic pattern (nccl-tests names, without "_perf").
ALL_REDUCE = "all_reduce"
LINK_BOUND = ("all_gather", "reduce_scatter", "gather", "scatter", "broadcast", "reduce", "sendrecv")
ALLTOALL = "alltoall"


@dataclass(frozen=True)
class Prediction:
    busbw_gbps: float
    limit: str  # "nvls" | "nvlink-ring" | "pcie" | "network" | "none"
    explanation: str
    reasons: list[str] = field(default_factory=list)  # the facts the figure rests on


@dataclass(frozen=True)
class GpuFacts:
    """NVLink facts of a GPU model, for outputs that name the GPU but carry no topology."""

    pattern: str  # regex on the name nvidia-smi / nccl-tests print
    nvlinks: int
    compute_capability: str
    source: str


# Only SXM parts: their NVLink count is fixed by the part (PCIe/NVL cards depend on bridges).
GPU_FACTS: tuple[GpuFacts, ...] = (
    GpuFacts(r"\bH100 80GB HBM3\b|\bH100 SXM", 18, "9.0",
             "https://www.nvidia.com/en-us/data-center/h100/ (SXM: NVLink 900GB/s = 18 x 25 GB/s x 2)"),
    GpuFacts(r"\bH200$", 18, "9.0",
             "https://www.nvidia.com/en-us/data-center/h200/ (SXM: NVLink 900GB/s)"),
    GpuFacts(r"\bA100-SXM4", 12, "8.0",
             "https://www.nvidia.com/en-us/data-center/a100/ (SXM: NVLink 600GB/s = 12 x 25 GB/s x 2)"),
    # NVIDIA publishes no H20 page. NV18 between every pair of 8 H20s in two real topo -m captures
    # (tests/captures/topo/h20-8gpu-8nic-pix-... and h20-vm-8gpu-8nic-...), and sglang's environment
    # checks of 8x "NVIDIA H20" / "NVIDIA H20-3e" in sgl-project/sglang issues print "Compute
    # Capability: 9.0" (read 2026-12-02).
    GpuFacts(r"\bH20(?:-3e)?$", 18, "9.0",
             "NV18 in real topo -m captures of 8x H20 (tests/captures/topo); compute capability 9.0 in sglang's "
             "environment checks"),
    # mlcommons/inference_results_v6.0 closed/Nebius/systems/nebius_b200_n1.json: "NVIDIA B200-SXM-180GB",
    # "18x 5th Gen NVLink", "PCIe Gen5 x16"; https://developer.nvidia.com/cuda-gpus: B200 and GB200 are 10.0
    # (read 2026-12-02). GB200's GPUs meet on NVLink switches across the trays of its rack (NVL72).
    GpuFacts(r"\bB200\b", 18, "10.0",
             "18x 5th Gen NVLink (MLCommons inference v6.0, Nebius B200 system); compute capability 10.0 "
             "(https://developer.nvidia.com/cuda-gpus)"),
    GpuFacts(r"\bGB200\b", 18, "10.0",
             "fifth-generation NVLink with NVLink Switch across the rack (docs.nvidia.com mission-control "
             "nvlinkinfo); compute capability 10.0 (https://developer.nvidia.com/cuda-gpus)"),
)

# The name the driver prints for a GPU it has no name for (a new part on an older driver): it says
# nothing of the model (coreweave/nccl-tests' README shows the same GB200 rack as "NVIDIA Graphics
# Device" in one run and "NVIDIA GB200" in another).
GENERIC_GPU_NAMES = ("NVIDIA Graphics Device",)


def generic_gpu_name(name: str) -> bool:
    return name.strip() in GENERIC_GPU_NAMES


def gpu_facts(name: str) -> GpuFacts | None:
    return next((f for f in GPU_FACTS if re.search(f.pattern, name.strip())), None)


def node_from_gpu_names(names: list[str]) -> Topology | None:
    """A node of these GPUs (one host's, as nccl-tests lists them) with the NVLink facts their
    model implies; an 8-GPU SXM node is an HGX board, whose GPUs meet on NVSwitches. None when
    a name is not a part whose NVLink count is fixed (one GPU needs no link facts)."""
    if len(names) == 1:
        return Topology(gpus=[Gpu(index=0, model=names[0].strip())])
    facts = [gpu_facts(n) for n in names]
    if not names or any(f is None for f in facts) or len({f.nvlinks for f in facts if f}) != 1:
        return None
    first = facts[0]
    assert first is not None
    count = len(names)
    links = [[GpuLink(kind="X") if i == j else GpuLink(kind="NV", nvlinks=first.nvlinks)
              for j in range(count)] for i in range(count)]
    return Topology(
        gpus=[Gpu(index=i, model=n.strip(), compute_capability=first.compute_capability)
              for i, n in enumerate(names)],
        gpu_links=links,
        nvswitch=True if count >= 8 else None,
        notes=[f"GPU facts from the model name: {first.source}"],
    )


def _bus_factor(ranks: int) -> float:
    return 2 * (ranks - 1) / ranks


def _nvlinks_per_gpu(topology: Topology) -> int | None:
    counts = [cell.nvlinks for row in topology.gpu_links for cell in row if cell.kind == "NV" and cell.nvlinks]
    return max(counts) if counts else None


def _sm(topology: Topology) -> float | None:
    caps = {g.compute_capability for g in topology.gpus if g.compute_capability}
    return float(next(iter(caps))) if len(caps) == 1 else None


def intra_node(topology: Topology, *, nvls: bool | None = None, gpus: int | None = None) -> Prediction:
    """busbw of an all-reduce over `gpus` GPUs (default: all) of one node."""
    gpus = len(topology.gpus) if gpus is None else gpus
    if gpus < 2:
        return Prediction(0.0, "none", "fewer than 2 GPUs: no intra-node all-reduce")
    links = _nvlinks_per_gpu(topology)
    sm = _sm(topology)
    if links is None:
        bw = PCIE_GEN4_X16_GBPS_DIR * EFF_RING
        return Prediction(bw, "pcie", f"no NVLink: ring over PCIe Gen4 x16 {PCIE_GEN4_X16_GBPS_DIR} GB/s x {EFF_RING}",
                          ["no NV# link between the GPUs"])
    per_link = NVLINK5_GBPS_PER_LINK_DIR if sm is not None and sm >= 10 else NVLINK_GBPS_PER_LINK_DIR
    link_bw = links * per_link
    nvswitch = topology.nvswitch if topology.nvswitch is not None else len(topology.gpus) >= 8
    use_nvls = nvls if nvls is not None else bool(nvswitch and (sm is None or sm >= 9) and links >= 18)
    reasons = [f"{links} NVLinks per GPU at {per_link:g} GB/s per direction"]
    # NVLS pays off from ~5 GPUs on; below that NCCL's ring (or NVLS at ring speed) is as fast
    # (nccl issue 1455: NVLS busbw stays at the ring's 365-370 GB/s on 2-4 H100s).
    if use_nvls and link_bw * _bus_factor(gpus) * EFF_NVLS > link_bw * EFF_RING:
        bw = link_bw * _bus_factor(gpus) * EFF_NVLS
        return Prediction(bw, "nvls", f"NVLS: {links} links x {per_link:g} GB/s x 2({gpus}-1)/{gpus} x {EFF_NVLS}",
                          [*reasons, "NVSwitch with NVLS (sm90+): the switch reduces"])
    bw = link_bw * EFF_RING
    return Prediction(bw, "nvlink-ring", f"ring over NVLink: {links} links x {per_link:g} GB/s x {EFF_RING}",
                      reasons)


# The host link of one GPU, per direction: what a GPU can send to (or take from) its NICs when the
# node's NICs together are faster, e.g. one GPU per node with 4 x 400G NICs. GB/s per direction of a
# x16 link after 128b/130b encoding; NVIDIA's product pages give the bidirectional figure:
# H100 "PCIe Gen5: 128GB/s" (https://www.nvidia.com/en-us/data-center/h100/), A100 "PCIe Gen4:
# 64GB/s" (https://www.nvidia.com/en-us/data-center/a100/), V100 "PCIe 32GB/s" (Gen3,
# https://www.nvidia.com/en-us/data-center/v100/). GH200: NVLink-C2C 900 GB/s to the Grace CPU,
# whose PCIe the NICs hang off (https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/).
PCIE_GEN3_X16_GBPS_DIR = 15.75
PCIE_GEN5_X16_GBPS_DIR = 63.0
C2C_GBPS_DIR = 450.0
# compute capability major -> (GB/s per direction, what the link is); sm100 (Blackwell) is not
# listed: its host link differs between boards, so no cap is applied there.
_HOST_LINK_BY_SM: dict[int, tuple[float, str]] = {
    7: (PCIE_GEN3_X16_GBPS_DIR, "PCIe Gen3 x16"),
    8: (PCIE_GEN4_X16_GBPS_DIR, "PCIe Gen4 x16"),
    9: (PCIE_GEN5_X16_GBPS_DIR, "PCIe Gen5 x16"),
}
# GPU names -> compute capability major, for captures that name the GPU but do not give its sm.
_SM_BY_NAME: tuple[tuple[str, int], ...] = (
    (r"\b(?:H100|H200|H800|H20)\b", 9), (r"\b(?:A100|A800|A30|A10|A40|L40S?|L20|L4|RTX A6000)\b", 8),
    (r"\b(?:V100|T4)\b", 7),
)


def host_link(topology: Topology) -> tuple[float, str] | None:
    """One GPU's link to the host (GB/s per direction, after the ring's protocol efficiency) and
    what it is; None when the GPUs' generation is not known (then no cap is applied)."""
    names = {g.model for g in topology.gpus if g.model}
    if any("GH200" in n or "GB200" in n for n in names):
        return C2C_GBPS_DIR * EFF_RING, f"NVLink-C2C {C2C_GBPS_DIR:g} GB/s per direction x {EFF_RING}"
    sm = _sm(topology)
    major = int(sm) if sm is not None else None
    if major is None and names:
        found = {m for n in names for pattern, m in _SM_BY_NAME if re.search(pattern, n)}
        major = found.pop() if len(found) == 1 else None
    if major is None or major not in _HOST_LINK_BY_SM:
        return None
    gbps, what = _HOST_LINK_BY_SM[major]
    return gbps * EFF_RING, f"{what} {gbps:g} GB/s per direction x {EFF_RING}"


def _injection(topology: Topology, gpus: int, net: float) -> tuple[float, str | None]:
    """What `gpus` GPUs of a node can put on the network: the NICs' line rate x EFF_NET, or less
    where the GPUs' own host links cannot fill them (few GPUs, many NICs); the second value says so."""
    on_wire = net * EFF_NET
    link = host_link(topology)
    if link is None:
        return on_wire, None
    cap = link[0] * max(1, gpus)
    if cap >= on_wire:
        return on_wire, None
    return cap, (f"{max(1, gpus)} GPU(s) per node x {link[1]} = {cap:.1f} GB/s, below the NICs' "
                 f"{net:g} GB/s x {EFF_NET}: the GPUs' host links are the bottleneck")


def _chosen_rails(topology: Topology, rails: list[str] | None, gpus: int) -> list[Nic]:
    """The NICs `gpus` GPUs drive: the given rails, else `select_rails`', else (a capture that
    does not settle the rails, such as NCCL's own topology print) the fastest NICs not known to be
    down.
    A job on k of the node's G GPUs drives its share of them, k/G, the fastest first."""
    by_name = {n.name: n for n in topology.nics}
    names = rails if rails is not None else select_rails(topology).names
    fallback = not names
    if fallback:
        names = [n.name for n in topology.nics if nic_state(n) != "inactive"]
    nics = [by_name[n] for n in dict.fromkeys(names) if n in by_name and by_name[n].rate_gbps]
    if fallback and nics:  # never sum a 25G front-end port with 200G rails: the fastest class only
        top = max(n.rate_gbps or 0.0 for n in nics)
        nics = [n for n in nics if n.rate_gbps == top]
    nics.sort(key=lambda n: -(n.rate_gbps or 0.0))
    node_gpus = max(len(topology.gpus), gpus, 1)
    return nics[: max(1, math.ceil(len(nics) * max(1, gpus) / node_gpus))]


def node_network_gbps(topology: Topology, rails: list[str] | None = None, gpus: int | None = None) -> float:
    """Line rate, GB/s, of the rails `gpus` GPUs of the node drive (sum of rate_gbps / 8)."""
    count = len(topology.gpus) if gpus is None else gpus
    return sum((n.rate_gbps or 0.0) / 8 for n in _chosen_rails(topology, rails, count))


def all_reduce_busbw(topology: Topology, nodes: int, *, rails: list[str] | None = None,
                     nvls: bool | None = None, gpus_per_node: int | None = None) -> Prediction:
    """Large-message all-reduce busbw over `nodes` nodes shaped like `topology`, with
    `gpus_per_node` of its GPUs each (default all). `rails` defaults to `select_rails`."""
    gpus = len(topology.gpus) if gpus_per_node is None else gpus_per_node
    inside = intra_node(topology, nvls=nvls, gpus=gpus)
    if nodes <= 1:
        return inside
    nics = _chosen_rails(topology, rails, gpus)
    net = sum((n.rate_gbps or 0.0) / 8 for n in nics)
    if net <= 0:
        return Prediction(0.0, "none", "no NIC line rate known: cannot predict across nodes",
                          ["no rail with a known rate"])
    ranks = nodes * max(1, gpus)
    reasons = [f"{len(nics)} rail(s) ({', '.join(n.name for n in nics)}) = {net:g} GB/s line rate per node"]
    ring_net, host_bound = _injection(topology, gpus, net)
    if host_bound is not None:
        reasons.append(host_bound)
        ring = Prediction(ring_net, "pcie", f"host link: {host_bound}", reasons)
    else:
        ring = Prediction(ring_net, "network", f"ring: {net:g} GB/s line rate x {EFF_NET}", reasons)
    ring = (ring if gpus < 2 or ring_net < inside.busbw_gbps else
            Prediction(inside.busbw_gbps, inside.limit, inside.explanation
                       + f" (the network, {ring_net:.0f} GB/s, is not the bottleneck)",
                       [*inside.reasons, *reasons]))
    if nodes != 2 or gpus < 2:
        return ring  # from 3 nodes on, the ring bound: every ring crosses each node boundary once
    # Two nodes: tree / NVLS-tree. Each node moves 2(N-1)/N of its data over the network, not
    # 2(R-1)/R, so the network allows N/(N-1)*(R-1)/R x line rate; inside, NVLS runs at its own
    # figure, a plain tree at EFF_TREE x (R-1)/R of the ring's (NCCL's own tuning model).
    factor = (nodes / (nodes - 1)) * ((ranks - 1) / ranks)
    tree_net = ring_net * factor
    if inside.limit == "nvls":
        tree_inside, how_inside = inside.busbw_gbps, inside.explanation
    else:
        tree_inside = inside.busbw_gbps * EFF_TREE * (ranks - 1) / ranks
        how_inside = f"tree: {inside.explanation} x {EFF_TREE} x (R-1)/R"
    if tree_net < tree_inside:
        tree = Prediction(tree_net, "network", (
            f"network: {net:g} GB/s line rate x {EFF_NET} x N/(N-1)*(R-1)/R = {factor:.3f} "
            f"(N={nodes}, R={ranks}, tree on 2 nodes); above line rate on 2 nodes is expected"), reasons)
    else:
        tree = Prediction(tree_inside, inside.limit if inside.limit == "nvls" else "tree",
                          how_inside + f" (the network allows {tree_net:.0f} GB/s on 2 nodes)",
                          [*inside.reasons, *reasons])
    return tree if tree.busbw_gbps >= ring.busbw_gbps else ring


def collective_busbw(topology: Topology, nodes: int, collective: str, *,
                     rails: list[str] | None = None, gpus_per_node: int | None = None) -> Prediction:
    """Large-message busbw of `collective` (nccl-tests name without `_perf`)."""
    gpus = len(topology.gpus) if gpus_per_node is None else gpus_per_node
    if collective == ALL_REDUCE:
        return all_reduce_busbw(topology, nodes, rails=rails, gpus_per_node=gpus)
    if collective not in (*LINK_BOUND, ALLTOALL):
        return Prediction(0.0, "none", f"the model does not describe {collective}")
    # Inside a node a link-bound collective runs at the GPU's ring rate (no NVLS reduction).
    inside = intra_node(topology, nvls=False, gpus=gpus) if gpus >= 2 else None
    if nodes <= 1:
        return inside or Prediction(0.0, "none", "one GPU on one node: nothing to measure")
    nics = _chosen_rails(topology, rails, gpus)
    net = sum((n.rate_gbps or 0.0) / 8 for n in nics)
    if net <= 0:
        return Prediction(0.0, "none", "no NIC line rate known: cannot predict across nodes",
                          ["no rail with a known rate"])
    per_gpu = net / max(1, gpus)
    ranks = nodes * max(1, gpus)
    factor = 1.0
    if collective == ALLTOALL:  # only the (R-k)/R of each GPU's data that leaves the node
        factor = (ranks - 1) / (ranks - gpus)
    reasons = [f"{len(nics)} rail(s) ({', '.join(n.name for n in nics)}) = {net:g} GB/s line rate "
               f"per node, {per_gpu:g} GB/s per GPU"]
    own = net
    if collective == "sendrecv":
        # sendrecv_perf: rank r sends to r+1 and takes from r-1, so one GPU per node boundary crosses
        # it: over that GPU's own share of the rails (NCCL's p2p uses the NICs local to the GPU), and
        # bounded by its host link.
        crossing = _chosen_rails(topology, rails, 1)
        own = sum((n.rate_gbps or 0.0) / 8 for n in crossing)
        reasons.append(f"the crossing GPU's own rail(s) ({', '.join(n.name for n in crossing)}) = {own:g} GB/s")
        on_wire, host_bound = _injection(topology, 1, own)
        across = on_wire
    else:
        on_wire, host_bound = _injection(topology, gpus, net)
        across = on_wire / max(1, gpus) * factor
    if host_bound is not None:
        reasons.append(host_bound)
    if inside is None or across < inside.busbw_gbps:
        how = f" x (R-1)/(R-k) = {factor:.3f}" if factor != 1.0 else ""
        if host_bound is not None:
            return Prediction(across, "pcie", f"host link: {host_bound}{how}", reasons)
        if collective == "sendrecv":
            return Prediction(across, "network", f"network: one GPU per node boundary crosses it: {own:g} GB/s x "
                                                 f"{EFF_NET}", reasons)
        return Prediction(across, "network", f"network: {per_gpu:g} GB/s per GPU x {EFF_NET}{how}",
                          reasons)
    return Prediction(inside.busbw_gbps, inside.limit, inside.explanation, [*inside.reasons, *reasons])
