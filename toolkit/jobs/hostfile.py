"""The ready nodes of a cluster, as the launchers that start jobs on them read them.

A node is ready when its last configure succeeded and its converge record stands (`gpuctl status`
says `ok` or `verified`); a failed node, or one never configured, is left out and named with why.
Each ready node is given by its fabric-side address (the first fabric interface's, or the first
address its own run found on it, as on Tencent HCC; the private address where it has none) and its
GPUs, counted from the topology its last configure gathered.

Formats (each launcher's own documented form):
- `mpirun`: Open MPI's hostfile, `<host> slots=<n>` per line (mpirun(1), "Hostfiles").
- `deepspeed`: DeepSpeed's hostfile, the same `<host> slots=<n>` lines (DeepSpeed "Getting
  Started", resource configuration (multi-node)).
- `torchrun`: the arguments torchrun takes instead of a file: `--nnodes`, `--nproc-per-node` and a
  c10d rendezvous on the first ready node, at port 29400 (PyTorch elastic quickstart,
  https://pytorch.org/docs/1.10/elastic/quickstart.html, read 2026-12-02: "If no port number is
  specified HOST_NODE_ADDR defaults to 29400"); every node must have the same GPU count.
- `plain`: one address per line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from toolkit import hints
from toolkit.errors import UsageError
from toolkit.paths import Paths
from toolkit.providers.base import ClusterOutputs, NodeOutput
from toolkit.vocabulary import HostfileFormat as Format

# torchrun's c10d rendezvous port where --rdzv-endpoint names none (see above), written out.
RDZV_PORT = 29400


@dataclass(frozen=True)
class Host:
    name: str
    address: str
    slots: int


@dataclass
class Ready:
    hosts: list[Host]
    left_out: dict[str, str]  # node -> why it is not in the hostfile


def fabric_address(node: NodeOutput, found: Sequence[str]) -> str:
    """The address the node's peers reach it at over the fabric: what its run found on it, else its
    first fabric interface's, else its private address."""
    if found:
        return str(found[0])
    first = node.fabric_interfaces[0].ipv4 if node.fabric_interfaces else None
    return (first or node.private_ip).split("/")[0]


def ready_hosts(outputs: ClusterOutputs, paths: Paths) -> Ready:
    from toolkit.bench.run import node_facts
    from toolkit.commands.status import last_configure
    from toolkit.configure import converge
    from toolkit.errors import GpuctlError

    ready = Ready(hosts=[], left_out={})
    for node in outputs.nodes:
        last = last_configure(outputs.cluster, node.name)
        if last.result not in ("ok", "verified"):
            ready.left_out[node.name] = last.text
            continue
        try:
            facts = node_facts(outputs.model_copy(update={"nodes": [node]}), paths)[0]
        except GpuctlError as exc:
            ready.left_out[node.name] = exc.message
            continue
        record = converge.load_record(paths.base, node.name)
        found = [str(a) for a in (record or {}).get("expect", {}).get("addresses") or []]
        ready.hosts.append(Host(node.name, fabric_address(node, found), facts.slots))
    return ready


def render(hosts: Sequence[Host], form: Format) -> str:
    if not hosts:
        raise UsageError("no node of the cluster is ready (every one failed or was never configured)",
                         hint=f"`{hints.command('status', 'SPEC')}` says why each is not; configure them first")
    if form in ("mpirun", "deepspeed"):
        return "".join(f"{host.address} slots={host.slots}\n" for host in hosts)
    if form == "plain":
        return "".join(f"{host.address}\n" for host in hosts)
    counts = sorted({host.slots for host in hosts})
    if len(counts) != 1:
        shown = ", ".join(map(str, counts))
        raise UsageError(f"--format torchrun: the ready nodes have different GPU counts ({shown}); torchrun "
                         "starts the same number of processes on every node",
                         hint="use --format mpirun, or pools of one instance type")
    return (f"--nnodes={len(hosts)} --nproc-per-node={counts[0]} --rdzv-backend=c10d "
            f"--rdzv-endpoint={hosts[0].address}:{RDZV_PORT}\n")
