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

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal, Protocol

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, model_validator

from toolkit.errors import UsageError
from toolkit.spec.models import BUCKET_NAME, VOLUME_NAME, ClusterSpec, Fabric, StorageVolume, mount_path_problem
from toolkit.vocabulary import ProviderName

if TYPE_CHECKING:
    from toolkit.catalog.result import CheckResult


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


def _checked_mount_path(value: str) -> str:
    # The spec's own rule: a provider's output reaches systemd unit names and mount commands too.
    problem = mount_path_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _pattern(regex: re.Pattern[str], what: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not regex.fullmatch(value):
            raise ValueError(f"{value!r} is not {what}")
        return value
    return check


# `<server>:/<path>`: a mount target's domain or address, then the exported path (never an option).
NFS_SOURCE = r"^[A-Za-z0-9][A-Za-z0-9.-]{0,252}:/[A-Za-z0-9._/-]{0,255}$"
# An object store's endpoint as the FUSE clients take it in `url=`: optional scheme, host, optional port.
ENDPOINT_URL = r"^(https?://)?[A-Za-z0-9][A-Za-z0-9.-]{0,252}(:[0-9]{1,5})?$"
# A RAM (Alibaba) or CAM (Tencent) role name: letters, digits and the few marks both clouds allow.
ROLE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._@+=,-]{0,63}$"


class VolumeOutput(_Out):
    """One shared volume as the nodes mount it (docs/storage.md): what the storage role reads.

    nas: `source` is `<mount target>:/` and `nfs_version` the protocol the cloud recommends for it.
    object: `bucket` and `endpoint` (the cloud's internal one; the lab's store on its management
    network). On a cloud, nodes reach the bucket with the instance's own role (`instance_role`,
    the RAM/CAM role attached to the instances): no key is ever copied to a node. Only the lab sets
    `lab_key_pair`: the fixed "id:secret" its fake S3 accepts, which is not a credential
    (providers/lab/object_store.py); ClusterOutputs refuses it from any other provider.
    """

    name: Annotated[str, AfterValidator(_pattern(VOLUME_NAME, "a volume name"))]
    kind: Literal["nas", "object"]
    mount_path: Annotated[str, AfterValidator(_checked_mount_path)]
    source: Annotated[str, StringConstraints(pattern=NFS_SOURCE)] | None = None
    nfs_version: Literal["3", "4.0"] | None = None
    bucket: Annotated[str, AfterValidator(_pattern(BUCKET_NAME, "a bucket name"))] | None = None
    endpoint: Annotated[str, StringConstraints(pattern=ENDPOINT_URL)] | None = None
    instance_role: Annotated[str, StringConstraints(pattern=ROLE_NAME)] | None = None
    lab_key_pair: Annotated[str, StringConstraints(pattern=r"^[a-z-]{1,32}:[a-z-]{1,32}$")] | None = None

    @model_validator(mode="after")
    def _fields_fit_kind(self) -> VolumeOutput:
        if self.kind == "nas" and (self.source is None or self.nfs_version is None):
            raise ValueError(f"volume {self.name}: a nas volume needs its mount source and NFS version")
        if self.kind == "object" and (self.bucket is None or self.endpoint is None):
            raise ValueError(f"volume {self.name}: an object volume needs its bucket and endpoint")
        return self


class ClusterOutputs(_Out):
    cluster: str
    provider: ProviderName
    fabric: Fabric
    mtu: int
    nodes: list[NodeOutput]
    ssh_private_key: Path | None = None  # None: the user's own agent/key is used
    known_hosts: Path | None = None  # pinned host keys; None means the provider cannot pin them
    # The spec's shared volumes, in its order, as the storage role mounts them; none by default.
    volumes: list[VolumeOutput] = Field(default_factory=list)

    @model_validator(mode="after")
    def _lab_keys_only_in_the_lab(self) -> ClusterOutputs:
        # A cloud's nodes reach buckets with their instance role; a key pair from a cloud's outputs
        # would be a real credential on its way to the nodes.
        for volume in self.volumes:
            if volume.lab_key_pair is not None and self.provider != "local":
                raise ValueError(f"volume {volume.name}: a key pair in {self.provider}'s outputs; "
                                 "cloud nodes use their instance role")
        return self


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

    # After `down`: the kept volumes, one line each, and the volumes `delete_storage` removed.
    kept: list[str]
    deleted_storage: list[str]

    def down(self, spec: ClusterSpec, progress: ProgressCallback, *, delete_storage: bool = False) -> bool:
        """Remove everything and verify; False when there was nothing to remove. Shared volumes with
        keep_on_down stay (`kept` says which) unless `delete_storage`, which the CLI has the operator
        confirm with the cluster's name."""
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
