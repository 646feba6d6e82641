"""The interface every provider implements, and the outputs every provider produces.

`ClusterOutputs` is what the configure step (Ansible) needs and nothing more: which nodes exist,
how to reach them over SSH, and which interfaces and addresses carry the fabric. The local lab and
the clouds produce the same shape, so one configure step serves all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Protocol

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from toolkit.spec.models import ClusterSpec, Fabric, Provider


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


# What reaches ssh and Ansible from a provider's outputs is checked for shape here, whatever the
# provider: an address or host name (never something ssh could read as an option), a login name.
SshHost = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9.:-]{0,252}$")]
LoginName = Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")]
NodeName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")]
InterfaceName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,15}$")]


class FabricInterface(_Out):
    name: InterfaceName  # interface name on the node (eth1, erdma_0's netdev, a lab veth)
    ipv4: str | None = None  # address on the fabric, CIDR form
    rdma_device: str | None = None  # erdma_0, mlx5_0 ... where known before configure


class NodeOutput(_Out):
    name: NodeName  # hostname: <cluster>-<pool>-<n>
    pool: str
    instance_id: str
    instance_type: str
    private_ip: str
    public_ip: str | None = None
    ssh_host: SshHost  # what Ansible connects to
    ssh_port: int = Field(default=22, ge=1, le=65535)
    ssh_user: LoginName = "root"
    fabric_interfaces: list[FabricInterface] = Field(default_factory=list)
    # Local lab only: the capture bundle this node replays in place of real GPUs.
    replay_capture: str | None = None


class ClusterOutputs(_Out):
    cluster: str
    provider: Provider
    fabric: Fabric
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

    def exists(self, spec: ClusterSpec) -> bool:
        """Whether anything of the cluster exists already (an earlier `up`, complete or not)."""
        ...

    def down(self, spec: ClusterSpec, progress: ProgressCallback) -> bool:
        """Remove everything and verify; False when there was nothing to remove."""
        ...
