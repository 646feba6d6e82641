"""What both clouds' storage programs decide from the spec the same way (docs/storage.md).

Each cloud's `storage.py` extends `StorageArgs` with what only it needs (PROVIDER, and e.g. which
volumes get a mount target); the volumes' own resources stay in the cloud's package.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Self

from toolkit.errors import UsageError
from toolkit.providers.tags import storage_tags
from toolkit.spec.models import DEFAULT_STORAGE_TYPE, ClusterSpec, StorageVolume


@dataclass(frozen=True)
class StorageArgs:
    """Every decision of the storage program, made from the spec; the components only build it."""

    PROVIDER: ClassVar[str]  # the spec's provider this cloud's program builds for

    cluster: str
    region: str
    zone: str
    subnet_cidr: str  # the cluster's subnet (vSwitch) CIDR: the only clients of a file system's permission group
    volumes: tuple[StorageVolume, ...]
    tags: Mapping[str, Mapping[str, str]]  # per volume name
    # `gpuctl down --delete-storage` only: drop protect so that a destroy of the storage stack can run.
    unprotect: bool = False

    @classmethod
    def from_spec(
        cls, spec: ClusterSpec, *, cluster_id: str | None = None, owner: str | None = None, unprotect: bool = False
    ) -> Self:
        if spec.provider != cls.PROVIDER:
            raise UsageError(f"spec {spec.name} is for provider {spec.provider}, not {cls.PROVIDER}")
        assert spec.region is not None  # ClusterSpec requires region and zone for clouds
        assert spec.zone is not None
        return cls(
            cluster=spec.name,
            region=spec.region,
            zone=spec.zone,
            subnet_cidr=spec.network.effective_subnet_cidr,
            volumes=tuple(spec.storage),
            tags={
                v.name: storage_tags(spec, keep_on_down=v.keep_on_down, cluster_id=cluster_id, owner=owner)
                for v in spec.storage
            },
            unprotect=unprotect,
        )

    def protect(self, volume: StorageVolume) -> bool:
        return volume.keep_on_down and not self.unprotect

    def storage_type(self, volume: StorageVolume) -> str:
        return volume.storage_type or DEFAULT_STORAGE_TYPE[self.PROVIDER]


def volume_outputs(volume: StorageVolume) -> dict[str, object]:
    """The keys every volume's stack output has, whatever its kind and cloud (docs/storage.md)."""
    return {
        "name": volume.name,
        "kind": volume.kind,
        "mountPath": volume.mount_path,
        "keepOnDown": volume.keep_on_down,
        "existing": volume.existing is not None,
    }
