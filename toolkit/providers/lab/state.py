"""The plan of one local lab and its state file.

Every name the lab will use (namespaces, bridges, veths, node directories, pidfiles) is derived
from the spec alone and written to `<cluster_dir>/lab-state.json` BEFORE anything is created. So
`down` after a crash, a Ctrl-C or a `kill -9` of `up` knows everything that might exist, and
removes it whether or not it was ever created.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from toolkit import hints
from toolkit.errors import ProviderError
from toolkit.files import FileError, read_bounded, write_atomic
from toolkit.providers.base import node_name
from toolkit.spec.models import ClusterSpec
from toolkit.state import cluster_dir, home_dir, own_dir

STATE_FILE = "lab-state.json"
# A lab of the largest spec (a few hundred nodes) records well under 1 MiB.
MAX_STATE_BYTES = 4 * 1024 * 1024
MGMT_IFACE = "mgmt0"  # names inside a node's namespace; the same on every node
FABRIC_IFACE = "fab0"
FIRST_HOST = 10  # node i gets .(10+i) on both networks; .1 is the host's end of the management bridge


class LabNode(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    pool: str
    index: int
    netns: str
    mgmt_veth: str  # host side of the management veth
    fabric_veth: str  # host side of the fabric veth
    mgmt_ip: str  # bare address
    fabric_ip: str  # CIDR form
    node_dir: str  # upper/work/merged (overlay) or root (copy) live here
    replay_capture: str | None = None


class LabState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cluster: str
    tag: str  # "gl-<hash>": the prefix of every kernel object the lab creates
    phase: str = "planned"  # planned -> creating -> up -> removing
    layout: str = "overlay"  # node roots: "overlay" on the cached base, or "copy" (cp -a --reflink)
    mgmt_bridge: str
    fabric_bridge: str
    mgmt_cidr: str
    fabric_cidr: str
    host_mgmt_ip: str
    nodes: list[LabNode] = Field(default_factory=list)
    dirs: list[str] = Field(default_factory=list)
    # When `up` first started creating it, UTC ISO 8601 (`status`: expiry = this + lifecycle.ttl).
    # None in a plan not yet saved and in state files written before gpuctl recorded it.
    created_at: str | None = None

    @property
    def links(self) -> list[str]:
        out = [self.mgmt_bridge, self.fabric_bridge]
        for node in self.nodes:
            out += [node.mgmt_veth, node.fabric_veth]
        return out


def lab_tag(cluster: str) -> str:
    """`gl-` + 5 hex digits of the name: short enough for 15-character link names, unique enough
    that two labs on one machine do not clash (checked again when the subnet is picked)."""
    return "gl-" + hashlib.sha256(cluster.encode()).hexdigest()[:5]


def _subnet_octet(cluster: str, taken: set[int]) -> int:
    start = int(hashlib.sha256(cluster.encode()).hexdigest()[5:9], 16) % 250
    for step in range(250):
        octet = (start + step) % 250 + 1
        if octet not in taken:
            return octet
    raise RuntimeError("no free /24 left in 10.213.0.0/16 for another lab")


def plan(spec: ClusterSpec, taken_octets: set[int] | None = None) -> LabState:
    """Every name and address of the lab; pure, so tests can check it without root."""
    tag = lab_tag(spec.name)
    octet = _subnet_octet(spec.name, taken_octets or set())
    mgmt = ipaddress.ip_network(f"10.213.{octet}.0/24")
    fabric = ipaddress.ip_network(f"10.214.{octet}.0/24")
    base = cluster_dir(spec.name)
    nodes: list[LabNode] = []
    index = 0
    for pool in spec.node_pools:
        for n in range(pool.count):
            index += 1
            host = FIRST_HOST + index
            name = node_name(spec.name, pool.name, n)
            nodes.append(LabNode(
                name=name,
                pool=pool.name,
                index=index,
                netns=f"{tag}-n{index}",
                mgmt_veth=f"{tag}-m{index}",
                fabric_veth=f"{tag}-f{index}",
                mgmt_ip=str(mgmt.network_address + host),
                fabric_ip=f"{fabric.network_address + host}/{fabric.prefixlen}",
                node_dir=str(base / "nodes" / name),
                replay_capture=str(pool.capture.resolve()) if pool.capture is not None else None,
            ))
    return LabState(
        cluster=spec.name, tag=tag, mgmt_bridge=f"{tag}-m", fabric_bridge=f"{tag}-f",
        mgmt_cidr=str(mgmt), fabric_cidr=str(fabric),
        host_mgmt_ip=f"{mgmt.network_address + 1}/{mgmt.prefixlen}",
        nodes=nodes, dirs=[str(base / "nodes")],
    )


def state_path(cluster: str) -> Path:
    return cluster_dir(cluster) / STATE_FILE


def save(state: LabState) -> None:
    """Write atomically (temp file + fsync + rename, never through a link): a kill mid-write never
    leaves half a file.

    The first save of a lab being created (or up) records its creation time, if it has none yet.
    """
    if state.created_at is None and state.phase in ("creating", "up"):
        state.created_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    path = state_path(state.cluster)
    own_dir(path.parent)
    write_atomic(path, json.dumps(state.model_dump(), indent=2) + "\n")


def load(cluster: str, *, set_aside: bool = False) -> LabState | None:
    """The recorded state, or None when there is none.

    A damaged file (truncated, junk, another schema) is refused, naming `down` as the way out;
    with `set_aside` (what `down` asks for) it is moved aside, kept for a post-mortem, and the
    caller goes on as if there were none: a damaged state must never block the cleanup.
    """
    path = state_path(cluster)
    if not os.path.lexists(path):
        return None
    try:
        # Bounded, never through a link, never a FIFO: a state file is input like any other.
        raw, problem = read_bounded(path, limit=MAX_STATE_BYTES, what="lab state file", follow=False), ""
    except FileError as refused:
        raw, problem = b"", refused.reason
    if not problem:
        try:
            state = LabState.model_validate_json(raw)
            if state.cluster == cluster:
                return state
            problem = f"belongs to cluster {state.cluster!r}"
        except ValueError as exc:
            problem = f"is damaged ({str(exc).splitlines()[0][:120]})"
    if not set_aside:
        raise ProviderError(f"the lab state {path} {problem}",
                            hint=f"`{hints.spec_command(cluster, 'down')}` removes the lab anyway; "
                            "it sets the damaged file aside")
    kept = damaged_dir() / f"{cluster}-{time.strftime('%Y%m%dT%H%M%S')}-{STATE_FILE}"
    path.replace(kept)  # a link is moved as the link, never followed
    return None


def damaged_dir() -> Path:
    """Where damaged state files are kept: outside the cluster's directory, which `down` removes."""
    return home_dir("damaged")
