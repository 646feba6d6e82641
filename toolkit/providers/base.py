"""The interface every provider implements, and the outputs every provider produces.

`ClusterOutputs` is what the configure step (Ansible) needs and nothing more: which nodes exist,
how to reach them over SSH, and which interfaces and addresses carry the fabric. The local lab and
the clouds produce the same shape, so one configure step serves all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from toolkit.spec.models import ClusterSpec


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FabricInterface(_Out):
    name: str  # interface name on the node (eth1, erdma_0's netdev, a lab veth)
    ipv4: str | None = None  # address on the fabric, CIDR form
    rdma_device: str | None = None  # erdma_0, mlx5_0 ... where known before configure


class NodeOutput(_Out):
    name: str  # hostname: <cluster>-<pool>-<n>
    pool: str
    instance_id: str
    instance_type: str
    private_ip: str
    public_ip: str | None = None
    ssh_host: str  # what Ansible connects to
    ssh_port: int = 22
    ssh_user: str = "root"
    fabric_interfaces: list[FabricInterface] = Field(default_factory=list)
    # Local lab only: the capture bundle this node replays in place of real GPUs.
    replay_capture: str | None = None


class ClusterOutputs(_Out):
    cluster: str
    provider: Literal["alicloud", "tencentcloud", "local"]
    fabric: Literal["erdma", "rdma", "tcp"]
    mtu: int
    nodes: list[NodeOutput]
    ssh_private_key: Path | None = None  # None: the user's own agent/key is used
    known_hosts: Path | None = None  # pinned host keys; None means the provider cannot pin them


ProgressCallback = Callable[[str], None]


class ProviderDriver(Protocol):
    """What `gpuctl up/status/outputs/down` call; one implementation per provider module."""

    name: str

    def up(self, spec: ClusterSpec, progress: ProgressCallback) -> ClusterOutputs: ...

    def outputs(self, spec: ClusterSpec) -> ClusterOutputs: ...

    def status(self, spec: ClusterSpec) -> dict[str, object]: ...

    def down(self, spec: ClusterSpec, progress: ProgressCallback) -> None: ...
