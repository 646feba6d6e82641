"""Provider `alicloud`: Alibaba Cloud GPU clusters with eRDMA, driven through Pulumi."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit.providers.base import PlannedResource, Provider, ProviderDriver, volume_detail
from toolkit.spec.models import ClusterSpec

if TYPE_CHECKING:
    from toolkit.catalog.result import CheckResult


class AlicloudProvider(Provider):
    name = "alicloud"
    drivable = True
    pulumi_backed = True

    def driver(self, backend_url: str | None = None) -> ProviderDriver:
        from toolkit.providers.alicloud.driver import AlicloudDriver

        return AlicloudDriver(backend_url=backend_url)

    def planned_resources(self, spec: ClusterSpec, check: CheckResult) -> list[PlannedResource]:
        from toolkit.providers.alicloud.plan import planned_resources

        return planned_resources(spec, check) + planned_storage(spec)

    def check_catalog(self, spec: ClusterSpec, result: CheckResult) -> None:
        from toolkit.providers.alicloud.checks import check_catalog

        check_catalog(spec, result)


def planned_storage(spec: ClusterSpec) -> list[PlannedResource]:
    """The storage stack's volumes (`<cluster>_storage`) and, in the cluster's stack, the NAS mount
    targets (toolkit/providers/alicloud/storage.py); an existing volume creates only its mount target."""
    if not spec.storage:
        return []
    from toolkit.providers.alicloud import storage

    args = storage.StorageArgs.from_spec(spec)
    out: list[PlannedResource] = []
    for volume in spec.storage:
        prefix = f"{spec.name}-{volume.name}"
        where = volume_detail(volume)
        if volume.kind == "nas":
            if volume.existing is None:
                out.append(PlannedResource(
                    type=storage.FILE_SYSTEM, name=f"{prefix}-nas",
                    detail=f"NAS {storage.PROTOCOL}, {args.storage_type(volume)}, in {spec.zone}; {where}",
                ))
            source = "existing " + volume.existing if volume.existing is not None else "the volume"
            out += [
                PlannedResource(type=storage.ACCESS_GROUP, name=f"{prefix}-access",
                                detail=f"VPC permission group {spec.name}-<cluster id>-{volume.name}"),
                PlannedResource(type=storage.ACCESS_RULE, name=f"{prefix}-access-rule",
                                detail=f"read-write from {args.subnet_cidr} only"),
                PlannedResource(type=storage.MOUNT_TARGET, name=f"{prefix}-mount",
                                detail=f"{source} in the cluster's vSwitch; removed with the cluster"),
            ]
        elif volume.existing is None:
            out += [
                PlannedResource(type=storage.BUCKET, name=f"{prefix}-bucket",
                                detail=f"OSS bucket {volume.bucket_name(spec.name)}; {where}"),
                PlannedResource(type=storage.BUCKET_ACL, name=f"{prefix}-bucket-acl", detail="private"),
                PlannedResource(type=storage.BUCKET_PUBLIC_ACCESS_BLOCK, name=f"{prefix}-bucket-block",
                                detail="public access blocked"),
            ]
    return out
