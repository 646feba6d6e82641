"""The plan of one local lab and its state file.

Every name the lab will use (namespaces, bridges, veths, node directories, pidfiles) is derived
from the spec alone and written to `<cluster_dir>/lab-state.json` BEFORE anything is created. So
`down` after a crash, a Ctrl-C or a `kill -9` of `up` knows everything that might exist, and
removes it whether or not it was ever created.

The state file is input like any other, and gpuctl runs the lab as root: a name in it is never
taken on trust. Each name is one the plan rules below derive from the cluster's name (the tag
`gl-<hash>`, `<tag>-n<i>`, `<tag>-m<i>`, `<cluster_dir>/nodes/<node>`, addresses in the lab's
ranges); `load` refuses a file holding any other, naming the entry (`foreign_entries`). What the
file may still tell is which of those names were used: the node list, the subnet, the layout.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit import hints
from toolkit.errors import ProviderError
from toolkit.files import FileError, read_bounded, write_atomic
from toolkit.images.store import baked_name
from toolkit.providers.base import node_name
from toolkit.spec.models import ClusterSpec, Version
from toolkit.state import cluster_dir, home_dir, own_dir

STATE_FILE = "lab-state.json"
# A lab of the largest spec (a few hundred nodes) records well under 1 MiB.
MAX_STATE_BYTES = 4 * 1024 * 1024
MGMT_IFACE = "mgmt0"  # names inside a node's namespace; the same on every node
FABRIC_IFACE = "fab0"
FIRST_HOST = 10  # node i gets .(10+i) on both networks; .1 is the host's end of the management bridge
MAX_INDEX = 240  # .(10+240) = .250: the last host address the plan gives in a /24
MGMT_RANGE = "10.213"  # the lab's management /24s are 10.213.<octet>.0/24, its fabric ones 10.214.<octet>.0/24
FABRIC_RANGE = "10.214"


class StandIn(BaseModel):
    """The versions the lab's stand-in of an image carrying the GPU stack has;
    toolkit/providers/lab/gpu_stack.py lays it into a node."""
    model_config = ConfigDict(extra="forbid")

    driver: Version
    cuda: Version
    nccl: Version


# The lab's stand-in GPU image: a 550-series driver with CUDA 12.4 and NCCL 2.21.5, a combination of
# the age cloud GPU images ship (the versions are the lab's choice, older than gpuctl's default pins,
# so that a lab run shows the image path keeping versions the spec does not pin).
STANDIN_IMAGE = StandIn(driver="550.127.08", cuda="12.4", nccl="2.21.5")


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
    # The stand-in GPU stack of a pool with gpu_stack image (toolkit/providers/lab/gpu_stack.py).
    gpu_stack: StandIn | None = None
    # The baked image the node starts from (a pool with `image: baked:<name>`), else the base root.
    image: str | None = None


class LabState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cluster: str
    tag: str  # "gl-<hash>": the prefix of every kernel object the lab creates
    phase: Literal["planned", "creating", "up", "removing"] = "planned"
    layout: Literal["overlay", "copy"] = "overlay"  # node roots: on the cached base, or cp -a --reflink
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


def own_link(tag: str, name: str) -> bool:
    """Whether `name` is a host link the plan of the lab tagged `tag` makes: its two bridges
    (`<tag>-m`, `<tag>-f`) and the host ends of its veths (`<tag>-m<i>`, `<tag>-f<i>`)."""
    return re.fullmatch(re.escape(tag) + r"-[mf]([1-9][0-9]{0,2})?", name) is not None


def own_netns(tag: str, name: str) -> bool:
    """Whether `name` is a network namespace the plan of the lab tagged `tag` makes (`<tag>-n<i>`)."""
    return re.fullmatch(re.escape(tag) + r"-n[1-9][0-9]{0,2}", name) is not None


def nodes_dir(cluster: str) -> Path:
    """The one directory under which the plan puts every node's directory."""
    return cluster_dir(cluster) / "nodes"


def _subnet_octet(cluster: str, taken: set[int]) -> int:
    start = int(hashlib.sha256(cluster.encode()).hexdigest()[5:9], 16) % 250
    for step in range(250):
        octet = (start + step) % 250 + 1
        if octet not in taken:
            return octet
    raise RuntimeError("no free /24 left in 10.213.0.0/16 for another lab")


def plan(spec: ClusterSpec, taken_octets: set[int] | None = None, *, octet: int | None = None) -> LabState:
    """Every name and address of the lab; pure, so tests can check it without root. `octet`: the
    subnet an existing lab already has (growing it keeps every address it gave)."""
    tag = lab_tag(spec.name)
    octet = octet or _subnet_octet(spec.name, taken_octets or set())
    mgmt = ipaddress.ip_network(f"{MGMT_RANGE}.{octet}.0/24")
    fabric = ipaddress.ip_network(f"{FABRIC_RANGE}.{octet}.0/24")
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
                node_dir=str(nodes_dir(spec.name) / name),
                replay_capture=str(pool.capture.resolve()) if pool.capture is not None else None,
                gpu_stack=STANDIN_IMAGE if pool.gpu_stack == "image" else None,
                image=baked_name(pool.image),
            ))
    return LabState(
        cluster=spec.name, tag=tag, mgmt_bridge=f"{tag}-m", fabric_bridge=f"{tag}-f",
        mgmt_cidr=str(mgmt), fabric_cidr=str(fabric),
        host_mgmt_ip=f"{mgmt.network_address + 1}/{mgmt.prefixlen}",
        nodes=nodes, dirs=[str(nodes_dir(spec.name))],
    )


def subnet_octet(state: LabState) -> int | None:
    """The third octet of a lab's management subnet, as plan() chose it; None when unreadable."""
    match = re.fullmatch(re.escape(MGMT_RANGE) + r"\.([0-9]{1,3})\.0/24", state.mgmt_cidr)
    return int(match.group(1)) if match and 1 <= int(match.group(1)) <= 250 else None


def foreign_entries(state: LabState, cluster: str) -> list[str]:
    """Every entry of `state` that gpuctl's plan for `cluster` would not produce, each named with
    what the plan gives there; empty for a state gpuctl wrote. Pure: reads nothing from the host."""
    tag = lab_tag(cluster)
    found: list[str] = []

    def expect(entry: str, value: object, planned: object) -> None:
        if value != planned:
            found.append(f"{entry} {_shown(value)} (gpuctl's plan has {_shown(planned)})")

    expect("cluster", state.cluster, cluster)
    expect("tag", state.tag, tag)
    expect("mgmt_bridge", state.mgmt_bridge, f"{tag}-m")
    expect("fabric_bridge", state.fabric_bridge, f"{tag}-f")
    expect("dirs", state.dirs, [str(nodes_dir(cluster))])
    match = re.fullmatch(re.escape(MGMT_RANGE) + r"\.([0-9]{1,3})\.0/24", state.mgmt_cidr)
    octet = int(match.group(1)) if match else 0
    if not 1 <= octet <= 250:
        found.append(f"mgmt_cidr {_shown(state.mgmt_cidr)} (gpuctl's plan has {MGMT_RANGE}.<1-250>.0/24)")
        return found  # every address below is derived from it
    expect("mgmt_cidr", state.mgmt_cidr, f"{MGMT_RANGE}.{octet}.0/24")  # written as the plan writes it
    expect("fabric_cidr", state.fabric_cidr, f"{FABRIC_RANGE}.{octet}.0/24")
    expect("host_mgmt_ip", state.host_mgmt_ip, f"{MGMT_RANGE}.{octet}.1/24")
    if len(state.nodes) > MAX_INDEX:
        found.append(f"nodes: {len(state.nodes)} entries (gpuctl's plan has at most {MAX_INDEX})")
        return found
    names = re.compile(re.escape(cluster) + r"-([a-z]([a-z0-9-]{0,14}[a-z0-9])?)-(0|[1-9][0-9]{0,2})")
    seen: set[str] = set()
    for position, node in enumerate(state.nodes):
        index = position + 1
        where = f"nodes[{position}]"
        named = names.fullmatch(node.name)
        if named is None or named.group(1) != node.pool or node.name in seen:
            found.append(f"{where}.name {_shown(node.name)} of pool {_shown(node.pool)} (gpuctl's plan names "
                         f"each node once, as {cluster}-<its pool>-<n>)")
        seen.add(node.name)
        expect(f"{where}.index", node.index, index)
        expect(f"{where}.netns", node.netns, f"{tag}-n{index}")
        expect(f"{where}.mgmt_veth", node.mgmt_veth, f"{tag}-m{index}")
        expect(f"{where}.fabric_veth", node.fabric_veth, f"{tag}-f{index}")
        expect(f"{where}.mgmt_ip", node.mgmt_ip, f"{MGMT_RANGE}.{octet}.{FIRST_HOST + index}")
        expect(f"{where}.fabric_ip", node.fabric_ip, f"{FABRIC_RANGE}.{octet}.{FIRST_HOST + index}/24")
        if named is not None:
            expect(f"{where}.node_dir", node.node_dir, str(nodes_dir(cluster) / node.name))
        if node.replay_capture is not None and not os.path.isabs(node.replay_capture):
            found.append(f"{where}.replay_capture {_shown(node.replay_capture)} (gpuctl records an absolute path)")
    return found


def _shown(value: object) -> str:
    """A value for a message: repr (control characters stay visible), cut to a readable size."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


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


def load(cluster: str, *, set_aside: bool = False,
         progress: Callable[[str], None] | None = None) -> LabState | None:
    """The recorded state, or None when there is none.

    A damaged file (truncated, junk, another schema, another cluster's, or naming anything gpuctl's
    plan for this cluster would not: `foreign_entries`) is refused, naming `down` as the way out;
    with `set_aside` (what `down` asks for) it is moved aside, kept for a post-mortem, said so on
    `progress`, and the caller goes on as if there were none: a damaged state must never block the
    cleanup, and nothing it names is acted on.
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
            foreign = foreign_entries(state, cluster)
            if not foreign:
                return state
            if state.cluster != cluster:
                problem = f"belongs to cluster {_shown(state.cluster)}"
            else:
                problem = ("names what gpuctl's plan for this lab does not, so gpuctl acts on none of it: "
                           + "; ".join(foreign[:6]) + (f"; and {len(foreign) - 6} more" if len(foreign) > 6 else ""))
        except ValueError as exc:
            problem = f"is damaged ({str(exc).splitlines()[0][:120]})"
    if not set_aside:
        raise ProviderError(f"the lab state {path} {problem}",
                            hint=f"`{hints.spec_command(cluster, 'down')}` removes the lab anyway; "
                            "it sets the damaged file aside")
    kept = damaged_dir() / f"{cluster}-{time.strftime('%Y%m%dT%H%M%S')}-{STATE_FILE}"
    path.replace(kept)  # a link is moved as the link, never followed
    if progress is not None:
        progress(f"the lab state {path} {problem}; set aside as {kept}")
    return None


def damaged_dir() -> Path:
    """Where damaged state files are kept: outside the cluster's directory, which `down` removes."""
    return home_dir("damaged")
