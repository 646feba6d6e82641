"""The interface every provider implements, and the outputs every provider produces.

`Provider` is everything provider-specific gpuctl asks of one provider (its package in
`toolkit/providers/<name>/`, found through `registry.get_provider`): the driver, the resources a
plan lists, the catalog checks, and whether gpuctl can drive it yet (the leftover search is its
driver's, run by `down`).
`ProviderDriver` is what `up/status/outputs/down` call.

`ClusterOutputs` is what the configure step (Ansible) needs and nothing more: which nodes exist,
how to reach them over SSH, and which interfaces and addresses carry the fabric. The local lab and
the clouds produce the same shape, so one configure step serves all of them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from toolkit.errors import UsageError
from toolkit.spec.models import ClusterSpec, Fabric, StorageVolume
from toolkit.vocabulary import ProviderName

if TYPE_CHECKING:
    from toolkit.catalog.checks import CheckResult


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


# What reaches ssh and Ansible from a provider's outputs is checked for shape here, whatever the
# provider: an address or host name (never something ssh could read as an option), a login name.
SshHost = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9.:-]{0,252}$")]
LoginName = Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")]
NodeName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")]
# A Linux interface name (IFNAMSIZ: 15 characters) that no command can read as an option. The same
# rule serves the provider's outputs and the interfaces configure finds on a node (discovered.py).
INTERFACE_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,14}$"
InterfaceName = Annotated[str, StringConstraints(pattern=INTERFACE_NAME)]


def node_name(cluster: str, pool: str, index: int) -> str:
    """A node's name and hostname on every provider: <cluster>-<pool>-<n>."""
    return f"{cluster}-{pool}-{index}"


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
    provider: ProviderName
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

    def revive(self, spec: ClusterSpec, progress: ProgressCallback) -> list[str]:
        """Restart what a reboot would restart on a real host (the lab's sshd) before configure;
        the nodes revived. A cloud revives nothing: it returns []."""
        ...


class PlannedResource(_Out):
    """One line of `gpuctl plan`: what the provider will create (the plan's JSON form, too)."""

    type: str  # the provider's resource type, as Pulumi names it
    name: str
    count: int = 1
    detail: str = ""


def volume_detail(volume: StorageVolume) -> str:
    """The end of a storage plan line: where the volume is mounted and whether `down` keeps it."""
    kept = "kept by down (own stack, protected)" if volume.keep_on_down else "deleted by down"
    return f"mounted at {volume.mount_path}; {kept}"


class Provider(ABC):
    """Everything provider-specific, behind one interface; `registry.get_provider(name)` gives it.

    Loading the object loads nothing heavy: a cloud's SDK and Pulumi packages are imported by the
    methods that need them.
    """

    name: ClassVar[ProviderName]
    # gpuctl can create and remove this provider's resources (`up`/`down`); when not, validate
    # warns, plan marks it and `up` refuses.
    drivable: ClassVar[bool]
    # Its state lives in a Pulumi backend, so `--backend URL` means something.
    pulumi_backed: ClassVar[bool]
    # Its nodes are billed cloud instances with GPUs, priced from the catalog. Not the lab: its
    # nodes run on this machine, cost nothing and replay GPU captures instead of having GPUs.
    paid: ClassVar[bool] = True
    free_basis: ClassVar[str] = ""  # the plan's cost basis where `paid` is off
    # The Python Ansible runs on the nodes (the inventory's ansible_python_interpreter).
    python_interpreter: ClassVar[str] = "auto_silent"

    def driver(self, backend_url: str | None = None) -> ProviderDriver:
        """The driver of `up/status/outputs/down`; `backend_url` (from `--backend`) where `pulumi_backed`."""
        raise UsageError(f"provider '{self.name}' cannot be driven by gpuctl yet")

    @abstractmethod
    def planned_resources(self, spec: ClusterSpec, check: CheckResult) -> list[PlannedResource]:
        """What `up` will create, from the spec and its catalog rows (`check.rows`); nothing contacted."""

    @abstractmethod
    def check_catalog(self, spec: ClusterSpec, result: CheckResult) -> None:
        """Add the provider's refusals and warnings about `spec` to `result` (rows found, too)."""
