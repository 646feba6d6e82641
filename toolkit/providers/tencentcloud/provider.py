"""Provider `tencentcloud`: Tencent Cloud GPU clusters with HCC RDMA, driven through Pulumi.

Catalog checks (validate and plan refuse what Tencent does not sell), the plan's resource list
(`plan.py`, tested against the component's graph), the driver (`driver.py`) and the tag search
(`leftovers.py`, through the SDK).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit.errors import GpuctlError
from toolkit.providers.base import PlannedResource, Provider, ProviderDriver, volume_detail
from toolkit.providers.tags import TAG_KEEP_ON_DOWN
from toolkit.providers.tencentcloud.args import IMAGE_ID, IMAGE_PATTERNS
from toolkit.spec.models import ClusterSpec

if TYPE_CHECKING:
    from toolkit.catalog.models import InstanceType
    from toolkit.catalog.result import CheckResult

# System disk types, CVM data type SystemDisk.DiskType (LOCAL_BASIC ... CLOUD_TSSD):
#   https://cloud.tencent.com/document/api/213/15753#SystemDisk
#   (SDK copy: https://www.rubydoc.info/gems/tencentcloud-sdk-cvm/TencentCloud/Cvm/V20170312/SystemDisk)
DISK_CATEGORIES = (
    "CLOUD_PREMIUM", "CLOUD_SSD", "CLOUD_BSSD", "CLOUD_HSSD", "CLOUD_TSSD", "CLOUD_BASIC",
    "LOCAL_BASIC", "LOCAL_SSD",
)


def check_row(spec: ClusterSpec, row: InstanceType, where: str, result: CheckResult) -> None:
    """The fabric on one pool's catalog row: no eRDMA here; rdma needs an HCC type."""
    from toolkit.catalog.checks import no_rdma_nics

    fabric = spec.network.fabric
    if fabric == "erdma":
        result.problems.append(
            f"network.fabric: erdma is Alibaba Cloud's elastic RDMA; provider {spec.provider} cannot provide it "
            "(use rdma on tencentcloud)"
        )
    elif fabric == "rdma":
        problem = no_rdma_nics(row, where, "use an HCC type (HCCPNV4h, HCCPNV5 ...)")
        if problem is not None:
            result.problems.append(problem)
        elif not row.hcc:
            result.problems.append(
                f"{where}.instance_type: {row.name} is not an HCC type; "
                "Tencent RDMA needs an HCC instance in an HCC cluster"
            )


def check_pools(spec: ClusterSpec, result: CheckResult) -> None:
    """Billing Tencent sells (subscription lengths, a spot ceiling) and a TTL its ActionTimer takes, on
    every pool whose row was found."""
    from toolkit.providers.tencentcloud.args import check_billing, ttl_problem

    for pool in spec.node_pools:
        row = result.rows.get(pool.name)
        if row is None:
            continue
        try:
            check_billing(pool, row)
        except GpuctlError as exc:
            result.problems += getattr(exc, "problems", None) or [exc.message]
        problem = ttl_problem(spec, pool, row)
        if problem is not None:
            result.problems.append(problem)


class TencentcloudProvider(Provider):
    name = "tencentcloud"
    drivable = True
    pulumi_backed = True

    def driver(self, backend_url: str | None = None) -> ProviderDriver:
        from toolkit.providers.tencentcloud.driver import TencentcloudDriver

        return TencentcloudDriver(backend_url=backend_url)

    def planned_resources(self, spec: ClusterSpec, check: CheckResult) -> list[PlannedResource]:
        from toolkit.providers.tencentcloud.plan import planned_resources

        return planned_resources(spec) + planned_storage(spec)

    def check_catalog(self, spec: ClusterSpec, result: CheckResult) -> None:
        from toolkit.catalog.checks import CloudRules, check_cloud

        rules = CloudRules(
            label="Tencent Cloud",
            # A zone id is its region id, '-' and a number (ap-shanghai-5).
            zone_suffix=lambda _region: "-[0-9]{1,3}",
            zone_example="ap-shanghai-5",
            image_aliases=tuple(sorted(IMAGE_PATTERNS)),
            image_id=IMAGE_ID,
            image_id_form="img-xxxxxxxx",
            disk_categories=DISK_CATEGORIES,
            check_row=check_row,
            check_pools=check_pools,
        )
        check_cloud(spec, result, rules)


def planned_storage(spec: ClusterSpec) -> list[PlannedResource]:
    """The storage stack's volumes (`<cluster>_storage`, toolkit/providers/tencentcloud/storage.py),
    and the cluster's VPC and subnet where it creates a CFS; an existing volume creates nothing."""
    if not spec.storage:
        return []
    from toolkit.providers.tencentcloud import storage
    from toolkit.providers.tencentcloud.args import storage_owns_network
    from toolkit.providers.tencentcloud.plan import planned_network

    args = storage.StorageArgs.from_spec(spec)
    out: list[PlannedResource] = []
    if storage_owns_network(spec):
        kept = "kept by down with the CFS" if args.network_tags()[TAG_KEEP_ON_DOWN] == "true" else "deleted by down"
        out += planned_network(spec, f"; storage stack (the CFS lives in it), {kept}")
    for volume in spec.storage:
        if volume.existing is not None:
            continue
        prefix = f"{spec.name}-{volume.name}"
        where = volume_detail(volume)
        if volume.kind == "nas":
            out += [
                PlannedResource(type=storage.ACCESS_GROUP, name=f"{prefix}-access", detail="CFS permission group"),
                PlannedResource(type=storage.ACCESS_RULE, name=f"{prefix}-access-rule",
                                detail=f"read-write from {args.subnet_cidr} only"),
                PlannedResource(
                    type=storage.FILE_SYSTEM, name=f"{prefix}-nas",
                    detail=f"CFS {storage.PROTOCOL}, {args.storage_type(volume)}, in {spec.name}-subnet; {where}",
                ),
            ]
        else:
            out.append(PlannedResource(
                type=storage.BUCKET, name=f"{prefix}-bucket",
                detail=f"COS bucket {volume.bucket_name(spec.name)}-<APPID>, private; {where}",
            ))
    return out
