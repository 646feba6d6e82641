"""The autotune sweep: which candidates are tried, in what order, and what is kept.

`toolkit.bench.autotune` chooses from measurements; this module says what to measure and turns the
executed runs into those measurements.

The baseline is the node as gpuctl configured it (its nccl.conf), with NCCL choosing algorithm,
protocol, channels, QPs and buffers itself. A candidate is the same run with one documented
setting group added in the ranks' environment (which NCCL reads before nccl.conf). Per repeat and
candidate the order is baseline, candidate, so each candidate is paired with a baseline that ran
next to it. What is kept (autotune.select) must beat its paired baselines by more than the noise.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolkit.bench.autotune import Candidate
from toolkit.bench.launch import PlannedRun

# name -> settings. NCCL's documented values (env.html, NCCL 2.26): NCCL_ALGO Ring/Tree, NCCL_PROTO
# Simple/LL/LL128, NCCL_IB_QPS_PER_CONNECTION (default 1), NCCL_BUFFSIZE (default 4194304).
ALGO_PROTO = {
    "ring-simple": {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"},
    "ring-ll128": {"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL128"},
    "ring-ll": {"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL"},
}
TREE = {
    "tree-simple": {"NCCL_ALGO": "Tree", "NCCL_PROTO": "Simple"},
    "tree-ll128": {"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL128"},
}
TRANSPORT = {
    "qps-2": {"NCCL_IB_QPS_PER_CONNECTION": "2"},  # RDMA fabrics only: more QPs spread flows over paths
    "buffsize-8m": {"NCCL_BUFFSIZE": "8388608"},  # twice the default buffer per channel
}


def candidates_for(collective: str, rdma: bool) -> dict[str, dict[str, str]]:
    """The candidates swept for a collective. Tree exists for all_reduce only; alltoall and
    sendrecv have no algorithm choice (point to point); QPs only matter on an RDMA fabric."""
    chosen: dict[str, dict[str, str]] = {}
    if collective in ("all_reduce", "all_gather", "reduce_scatter"):
        chosen.update(ALGO_PROTO)
    if collective == "all_reduce":
        chosen.update(TREE)
    chosen.update({k: v for k, v in TRANSPORT.items() if rdma or k != "qps-2"})
    return chosen


def plan(collectives: Sequence[str], repeats: int, rdma: bool) -> list[PlannedRun]:
    """Repeat by repeat, collective by collective, candidate by candidate: baseline then candidate."""
    runs: list[PlannedRun] = []
    for repeat in range(repeats):
        for collective in collectives:
            for name, settings in candidates_for(collective, rdma).items():
                runs.append(PlannedRun(collective, "tuned", repeat, label=f"baseline-for-{name}"))
                runs.append(PlannedRun(collective, "tuned", repeat, extra_env=tuple(settings.items()), label=name))
    return runs


def measured(collective: str, rdma: bool, busbw: dict[str, dict[int, dict[int, float]]]) -> list[Candidate]:
    """autotune Candidates from measurements: `busbw[label][repeat]` = size -> busbw GB/s. A repeat
    missing on either side (a failed run) drops that pair."""
    found: list[Candidate] = []
    for name, settings in candidates_for(collective, rdma).items():
        mine, base = busbw.get(name, {}), busbw.get(f"baseline-for-{name}", {})
        pairs = sorted(set(mine) & set(base))
        found.append(Candidate(name=name, settings=dict(settings), runs=[mine[r] for r in pairs],
                               default_runs=[base[r] for r in pairs]))
    return found
