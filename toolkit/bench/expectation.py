"""An nccl-tests run against the expected-busbw model (`toolkit.tuning.expected_bw`).

The node's shape comes from, in this order: the topology the user passed (`--topology`); the GPU
names nccl-tests printed (an SXM part fixes its NVLink count); NIC line rates from the NCCL log in
the same file (`NET[50.0]` in its topology print). A run that failed is a failure, never a
bandwidth of 0; a run the model cannot describe (a collective it does not cover, a TCP transport,
no NIC rate for a multi-node run) gets no expectation rather than a guessed one.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.bench.nccl_tests import NcclTestsResult, collective
from toolkit.topology.model import Nic, Topology
from toolkit.topology.nccl_log import NcclLogSummary
from toolkit.tuning.expected_bw import collective_busbw, generic_gpu_name, node_from_gpu_names

TOLERANCE = 0.15  # the model's stated accuracy: a run more than this below it is a problem
# Net plugins / networks whose transport is TCP: outside what the model describes.
TCP_NETWORKS = ("Socket", "FasTrak", "GPUDirectTCPX", "TCPX", "TCPXO")

RunVerdict = Literal["pass", "below", "failed", "unknown"]


class RunExpectation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    op: str | None  # "all_reduce", ... (None where the output does not say and the table cannot tell)
    verdict: RunVerdict
    peak_busbw_gbps: float | None = None
    peak_size_bytes: int | None = None
    expected_busbw_gbps: float | None = None
    margin: float | None = None  # measured / expected - 1
    limit: str | None = None  # what the model says bounds the run: "nvls", "network", ...
    explanation: str | None = None
    reasons: list[str] = Field(default_factory=list)
    message: str


def _nics_from_log(summary: NcclLogSummary | None) -> list[Nic]:
    """The NICs of NCCL's own topology print: `+ NET[50.0] - NET/0-c (...)` is a 400 Gb/s port."""
    if summary is None or summary.system is None:
        return []
    nics: dict[str, Nic] = {}
    for link in summary.system.links:
        if link.kind == "NET" and link.target.startswith("NET/"):
            nics.setdefault(link.target, Nic(name=link.target, rate_gbps=link.bw_gbps * 8))
    return list(nics.values())


def _tcp_transport(summary: NcclLogSummary | None) -> str | None:
    if summary is None:
        return None
    names = [*summary.networks, *(c.net or "" for c in summary.net_connections)]
    if summary.net_plugin is not None and summary.net_plugin.name:
        names.append(summary.net_plugin.name)
    return next((n for n in names if any(t.lower() in n.lower() for t in TCP_NETWORKS)), None)


def node_shape(result: NcclTestsResult, topology: Topology | None = None,
               summary: NcclLogSummary | None = None) -> tuple[Topology | None, list[str]]:
    """The node to model, and where each part came from."""
    notes: list[str] = []
    host = result.hosts[0] if result.hosts else None
    names = [d.name for d in result.devices if d.host == host]
    node = topology
    if (node is None or not node.gpus) and any(generic_gpu_name(n) for n in names):
        notes.append("GPUs: named only \"NVIDIA Graphics Device\" by the driver: model unknown")
    elif node is None or not node.gpus:
        from_names = node_from_gpu_names(names)
        if from_names is not None:
            notes.append(f"GPUs: {len(names)} x {names[0].strip()} per node"
                         + (", NVLink from the model name" if len(names) > 1 else ""))
            nics = node.nics if node is not None else []
            node = from_names.model_copy(update={"nics": nics})
    elif topology is not None:
        notes.append("GPUs and NICs: --topology")
    if node is not None and not any(n.rate_gbps for n in node.nics):
        log_nics = _nics_from_log(summary)
        if log_nics:
            node = node.model_copy(update={"nics": log_nics, "rails": [], "gpu_nic_distance": {}})
            notes.append(f"NICs: {len(log_nics)} from NCCL's topology print (NET[x] GB/s)")
    return node, notes


def judge_run(result: NcclTestsResult, topology: Topology | None = None,
              summary: NcclLogSummary | None = None) -> RunExpectation:
    """`pass`, `below` (more than TOLERANCE under the model), `failed`, or `unknown`."""
    op = collective(result)
    if result.failed:
        where = (f" at {result.failed_at_size_bytes} B" if result.failed_at_size_bytes is not None
                 else "")
        first = result.errors[0] if result.errors else "no detail"
        return RunExpectation(op=op, verdict="failed",
                              message=f"the run failed{where}: {first}"
                                      + (f" (+{len(result.errors) - 1} more)" if len(result.errors) > 1 else ""))
    base = {"op": op, "peak_busbw_gbps": result.peak_busbw_gbps, "peak_size_bytes": result.peak_size_bytes}
    if result.peak_busbw_gbps is None:
        return RunExpectation(**base, verdict="unknown", message="no result row: nothing measured")
    if not result.hosts:
        return RunExpectation(**base, verdict="unknown",
                              message="the output has no `# Using devices` list: how many nodes "
                                      "and GPUs ran is unknown, so no expectation")
    if result.ranks > len(result.devices):
        return RunExpectation(**base, verdict="unknown",
                              message=f"the output lists {len(result.devices)} of its {result.ranks} ranks' devices "
                                      "(an excerpt): how many GPUs each node ran is unknown, so no expectation")
    if op is None:
        return RunExpectation(**base, verdict="unknown",
                              message="the output does not name the collective and its table does "
                                      "not identify it: no expectation")
    tcp = _tcp_transport(summary)
    if tcp is not None:
        return RunExpectation(**base, verdict="unknown",
                              message=f"the run used {tcp}, a TCP-based transport the model does "
                                      "not describe: no expectation")
    node, notes = node_shape(result, topology, summary)
    if node is None:
        generic = next((d.name for d in result.devices if generic_gpu_name(d.name)), None)
        why = (f"the output names the GPUs only \"{generic.strip()}\", the name the driver prints for a GPU it "
               "has no name for, so its model is unknown" if generic else "no GPU facts")
        return RunExpectation(**base, verdict="unknown",
                              message=f"{why} (pass --topology with the node's capture): no expectation")
    nodes = len(result.hosts)
    per_node = sum(1 for d in result.devices if d.host == result.hosts[0])
    prediction = collective_busbw(node, nodes, op, gpus_per_node=per_node)
    reasons = [*notes, *prediction.reasons]
    if prediction.busbw_gbps <= 0:
        return RunExpectation(**base, verdict="unknown", explanation=prediction.explanation,
                              reasons=reasons, message=f"no expectation: {prediction.explanation}")
    margin = result.peak_busbw_gbps / prediction.busbw_gbps - 1
    if margin < -TOLERANCE and result.truncated:
        return RunExpectation(
            **base, verdict="unknown", expected_busbw_gbps=round(prediction.busbw_gbps, 2),
            margin=round(margin, 4), limit=prediction.limit, explanation=prediction.explanation,
            reasons=reasons,
            message=f"{result.peak_busbw_gbps:g} GB/s is {margin:+.1%} against the expected "
                    f"{prediction.busbw_gbps:.1f} GB/s, but the table stops at "
                    f"{result.rows[-1].size_bytes} B: the large messages that reach the peak "
                    "are missing")
    verdict: RunVerdict = "below" if margin < -TOLERANCE else "pass"
    word = "below expectation" if verdict == "below" else "pass"
    return RunExpectation(
        **base, verdict=verdict, expected_busbw_gbps=round(prediction.busbw_gbps, 2),
        margin=round(margin, 4), limit=prediction.limit, explanation=prediction.explanation,
        reasons=reasons,
        message=f"{word}: {result.peak_busbw_gbps:g} GB/s is {margin:+.1%} against the expected "
                f"{prediction.busbw_gbps:.1f} GB/s ({prediction.explanation})")
