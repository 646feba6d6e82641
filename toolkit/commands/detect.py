"""`gpuctl detect [--json] PATH...`: the node's topology from a gathered bundle or pasted captures."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolkit.topology.model import Topology


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="+", metavar="PATH",
        help="a bundle directory from the gather command, or capture files of any kind "
        "(nvidia-smi topo -m / --query-gpu / -q [-x], NCCL topology XML, ibv_devinfo, ibstat, "
        "show_gids, ibdev2netdev, rdma link, ip -j addr/link, NCCL logs)",
    )
    parser.add_argument("--json", action="store_true", help="print the Topology as JSON")
    parser.add_argument(
        "--strict", action="store_true",
        help="refuse (exit 5) captures that name different hosts, instead of a note",
    )


def run(args: argparse.Namespace) -> int:
    from toolkit.commands._inputs import CAPTURES, require_input
    from toolkit.topology.detect import detect_paths

    paths = [require_input(p, CAPTURES, kind="file or directory") for p in args.paths]
    topo = detect_paths(paths, strict=args.strict)
    if args.json:
        print(json.dumps(topo.model_dump(mode="json"), indent=2))
    else:
        print(render(topo))
    return 0


def _cell(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return lines


def render(topo: Topology) -> str:
    """A compact human view: GPUs, NICs, rails, then the notes."""
    out: list[str] = []
    versions = ", ".join(
        f"{name} {value}" for name, value in (
            ("driver", topo.driver_version), ("CUDA", topo.cuda_version), ("NCCL", topo.nccl_version)
        ) if value
    )
    head = f"host {topo.hostname or '(unknown)'}"
    out.append(head + (f"  ({versions})" if versions else ""))
    nvlink = "NVSwitch" if topo.nvswitch else "not shown (topo -mp)" if topo.pcie_only_view else None
    if topo.gpus:
        links = {link.nvlinks for row in topo.gpu_links for link in row if link.kind == "NV"}
        if nvlink is None and links:
            nvlink = "NVLink NV" + "/".join(str(n) for n in sorted(x for x in links if x))
        out.append(f"\nGPUs: {len(topo.gpus)}" + (f"  interconnect: {nvlink}" if nvlink else ""))
        out += _table(
            ["GPU", "model", "memory MiB", "bus id", "NUMA", "CPUs", "sm"],
            [[str(g.index), _cell(g.model), _cell(g.memory_mib), _cell(g.bus_id), _cell(g.numa),
              _cell(g.cpu_affinity), _cell(g.compute_capability)] for g in topo.gpus],
        )
    else:
        out.append("\nGPUs: none")
    if topo.nics:
        out.append(f"\nRDMA NICs: {len(topo.nics)}")
        out += _table(
            ["NIC", "netdev", "link", "state", "Gb/s", "GID idx", "IPv4", "model"],
            [[n.name + (f"/{n.port}" if n.port and n.port > 1 else ""), _cell(n.netdev),
              _cell(n.link_layer), _cell(n.state),
              _cell(f"{n.rate_gbps:g}" if n.rate_gbps is not None else None),
              _cell(n.gid_index), _cell(n.gid_ipv4), _cell(n.model)] for n in topo.nics],
        )
    else:
        out.append("\nRDMA NICs: none")
    presence = {True: "listed", False: "none (a tool ran and listed none)", None: "not known"}
    out.append(f"RDMA devices: {presence[topo.rdma_devices_listed]}"
               + (f" ({'; '.join(topo.rdma_evidence)})" if topo.rdma_evidence else ""))
    if topo.rails:
        from toolkit.topology.rails import nic_state, rails_near, select_rails

        states: dict[str, str] = {}
        for nic in topo.nics:
            state = nic_state(nic)
            if states.get(nic.name) != "active":
                states[nic.name] = state
        chosen = set(select_rails(topo).names)
        basis = "GPU at PIX/PXB" if rails_near(topo.rails) else "no NIC at PIX/PXB: each GPU's nearest NICs"
        out.append(f"\nRails ({basis}): {len(topo.rails)}, {len(chosen)} known to be up")
        out += _table(["NIC", "GPUs", "distance", "state"],
                      [[r.nic, ",".join(str(g) for g in r.gpus), r.distance, states.get(r.nic, "unknown")]
                       for r in topo.rails])
    if topo.interfaces:
        mtus = ", ".join(f"{i.name} {i.mtu}" for i in topo.interfaces if i.mtu and i.name != "lo")
        if mtus:
            out.append(f"\nMTU: {mtus}")
    if topo.notes:
        out.append("\nNotes:")
        out += [f"  - {note}" for note in topo.notes]
    out.append("\nread: " + ", ".join(topo.sources) if topo.sources else "\nread: nothing usable")
    return "\n".join(out)
