"""Provider `tencentcloud`: Tencent Cloud GPU clusters with HCC RDMA, driven through Pulumi.

Catalog checks (validate and plan refuse what Tencent does not sell), the plan's resource list
(`plan.py`, tested against the component's graph), the driver (`driver.py`) and the tag search
(`leftovers.py`, through the SDK).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit import hints
from toolkit.errors import GpuctlError
from toolkit.providers.base import PlannedResource, Provider, ProviderDriver, volume_detail
from toolkit.providers.tags import TAG_KEEP_ON_DOWN
from toolkit.providers.tencentcloud.args import IMAGE_ID, IMAGE_PATTERNS, PROVIDER
from toolkit.spec.models import ClusterSpec

if TYPE_CHECKING:
    from toolkit.catalog.models import Catalog, InstanceType
    from toolkit.catalog.result import CheckResult

# System disk types, CVM data type SystemDisk.DiskType (LOCAL_BASIC ... CLOUD_TSSD):
#   https://cloud.tencent.com/document/api/213/15753#SystemDisk
#   (SDK copy: https://www.rubydoc.info/gems/tencentcloud-sdk-cvm/TencentCloud/Cvm/V20170312/SystemDisk;
#   tencentcloud-sdk-python-cvm 3.1.178 models.py:23041; the provider validates system_disk_type against
#   the same list, tencentcloudstack/terraform-provider-tencentcloud@v1.82.42:tencentcloud/services/cvm/
#   extension_cvm.go:108, resource_tc_instance.go:283). Which of them a type takes is the catalog row's
#   `system_disks`.
DISK_CATEGORIES = (
    "CLOUD_PREMIUM", "CLOUD_SSD", "CLOUD_BSSD", "CLOUD_HSSD", "CLOUD_TSSD", "CLOUD_BASIC",
    "LOCAL_BASIC", "LOCAL_SSD",
)
# ImportKeyPair's PublicKey: "密钥对的公钥内容，`OpenSSH RSA` 格式" (tencentcloud-sdk-python-cvm 3.1.178
# models.py:11485); any other key is InvalidPublicKey.Malformed, "不符合`OpenSSH RSA`格式要求"
# (errorcodes.py:716-717). Read 2026-12-01.
KEY_TYPES = frozenset({"ssh-rsa"})
KEY_COMMAND = "ssh-keygen -t rsa -b 4096"
# tencentcloud_instance validates instance_type with ValidateInstanceType: a name without "." is refused
# ("it should be like S1.SMALL1"), tencentcloudstack/terraform-provider-tencentcloud@v1.82.42:
# tencentcloud/common/validators.go:36-40, used at services/cvm/resource_tc_instance.go:77.
TYPE_NAME_FORM = "FAMILY.SIZE (GT4.41XLARGE948)"
# Where to list the sizes a zone sells of a family (DescribeZoneInstanceConfigInfos, filter instance-family).
SIZES_COMMAND = ("tccli cvm DescribeZoneInstanceConfigInfos --Filters "
                 "'[{{\"Name\":\"instance-family\",\"Values\":[\"{family}\"]}}]'")


def explain_type(name: str, catalog: Catalog) -> str | None:
    """Why a name is no Tencent instance type: a family without its size, or no FAMILY.SIZE form at all."""
    family_name = name.split(".", 1)[0]
    family = catalog.find_family(family_name)
    sizes = [row.name for row in catalog.instance_types if row.family == family_name]
    if "." not in name:
        what = f"{name} is an instance family" if family or sizes else "it has no size"
        return (f"{what}; the API and the provider take only {TYPE_NAME_FORM} names (the provider refuses a name "
                "without '.')" + ("" if sizes else f"; `{SIZES_COMMAND.format(family=family_name)}` lists its sizes"))
    if family is not None and not sizes:
        rdma = f", {family.rdma.gbps:g} Gbps RDMA" if family.rdma and family.rdma.gbps else ""
        return (f"gpuctl's catalog has no size of {family_name} ({'HCC' if family.hcc else 'family'}{rdma}, "
                f"{family.source.url}) yet: the pages read name the family, not its sizes; "
                f"`{SIZES_COMMAND.format(family=family_name)}` lists them")
    return None


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
        problem = no_rdma_nics(row, where, "use an HCC type "
                               f"(`{hints.command('catalog', spec.provider, '--fabric', 'rdma')}` lists them)")
        if problem is not None:
            result.problems.append(problem)
        elif not row.hcc:
            result.problems.append(
                f"{where}.instance_type: {row.name} is not an HCC type; "
                "Tencent RDMA needs an HCC instance in an HCC cluster"
            )


def check_zones(spec: ClusterSpec, result: CheckResult) -> None:
    """The zone against Tencent's zone page and each pool's family page: dated lists (a zone opened
    since is on neither), so a warning that the preflight's DescribeZoneInstanceConfigInfos decides."""
    from toolkit.catalog.store import load_catalog

    zones = load_catalog(PROVIDER).zones
    region, zone = spec.region or "", spec.zone or ""
    listed = zones.regions.get(region) if zones is not None else None
    if zones is not None and listed is not None and zone not in listed:
        result.warnings.append(
            f"zone: {zone} is not among the zones Tencent's zone page lists for {region} ({', '.join(listed)}; "
            f"{zones.source.url}, read {zones.source.read}); `up` asks the API whether it sells there"
        )
    for index, pool in enumerate(spec.node_pools):
        row = result.rows.get(pool.name)
        if row is not None and row.zones is not None and zone not in row.zones:
            here = [z for z in row.zones if z.startswith(f"{region}-")]
            result.warnings.append(
                f"node_pools[{index}] ({pool.name}): the {row.family} page lists it in "
                f"{', '.join(here) if here else 'no zone of ' + region} (a dated list), not in {zone}; "
                "`up` asks the API whether the zone sells it now"
            )


# "No Charges When Shut Down only applies to pay-as-you-go instances whose system disk and data disks
# are both cloud disks. [...] not available for: [...] Instances attached with local disks. Spot
# instances." (tencentyun/intlcloud-documents@b7e17ea691c4ad7ae878e00e9d6dc37ff7ae1f1c:yehe_doc/计算/
# 云服务器/购买指南/按量计费实例关机不收费说明_intl_en.md:5-9, page 213/19918, read 2026-12-01); StoppedMode
# is "按量计费实例关机收费模式", for pay-as-you-go instances only (SDK models.py:22623-22625).
STOP_CHARGING_PAGE = "https://www.tencentcloud.com/document/product/213/19918"


def check_idle_stop(spec: ClusterSpec, result: CheckResult) -> None:
    """`idle_action: stop` where Tencent cannot stop charging saves nothing: refuse it (release works);
    a type whose local disks the catalog does not know gets a warning."""
    lifecycle = spec.lifecycle
    if lifecycle.idle_stop_minutes is None or lifecycle.idle_action != "stop":
        return
    fix = "set lifecycle.idle_action: release (the node is terminated when idle) or remove idle_stop_minutes"
    for index, pool in enumerate(spec.node_pools):
        where = f"node_pools[{index}] ({pool.name})"
        row = result.rows.get(pool.name)
        why = None
        if pool.billing.mode == "spot":
            why = "Tencent does not stop charging a stopped spot instance"
        elif pool.billing.mode == "monthly":
            why = "a monthly (PREPAID) instance is paid up front, so stopping it saves nothing"
        elif row is not None and row.local_disks:
            why = f"{row.name} has local disks, and Tencent does not stop charging a stopped instance with them"
        if why is not None:
            result.problems.append(f"lifecycle.idle_action: stop on {where}: {why} ({STOP_CHARGING_PAGE}); {fix}")
        elif row is not None and row.local_disks is None:
            result.warnings.append(
                f"lifecycle.idle_action: stop on {where}: the catalog does not know whether {row.name} has local "
                f"disks, which Tencent's no-charge stop excludes ({STOP_CHARGING_PAGE}); should Tencent refuse, the "
                "agent leaves the node running and says so"
            )


# "创建 GPU 型 HCCPNV4sne 或 GPU 型 HCCPNV4sn 高性能计算集群实例" is the first step of TCCL's installation
# (https://cloud.tencent.com/document/product/1646/93319, 2024-12-16, and 1573/93190, read 2026-12-01):
# the families its StarPulse network and TCCL are documented for.
TCCL_FAMILIES = ("HCCPNV4sne", "HCCPNV4sn")
TCCL_PAGE = "https://cloud.tencent.com/document/product/1646/93319"


def check_tccl(spec: ClusterSpec, result: CheckResult) -> None:
    """software.tccl only where every pool is of a family Tencent documents TCCL for."""
    if not spec.software.tccl:
        return
    for index, pool in enumerate(spec.node_pools):
        row = result.rows.get(pool.name)
        family = row.family if row is not None else pool.instance_type.split(".", 1)[0]
        if family not in TCCL_FAMILIES:
            result.problems.append(
                f"software.tccl: node_pools[{index}] ({pool.name}) is {pool.instance_type}; Tencent documents TCCL for "
                f"{' and '.join(TCCL_FAMILIES)} instances only ({TCCL_PAGE}); remove software.tccl or use one of them"
            )


def check_pools(spec: ClusterSpec, result: CheckResult) -> None:
    """Billing Tencent sells (subscription lengths, a spot ceiling) and a TTL its ActionTimer takes, on
    every pool whose row was found; the zone against the pages that list zones."""
    from toolkit.providers.tencentcloud.args import check_billing, ttl_problem

    check_zones(spec, result)
    check_idle_stop(spec, result)
    check_tccl(spec, result)
    for pool in spec.node_pools:
        row = result.rows.get(pool.name)
        if row is None:
            continue
        try:
            check_billing(pool, row, spec.region)
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
            key_types=KEY_TYPES,
            key_types_refusal="which Tencent's ImportKeyPair does not accept (it takes OpenSSH RSA keys only)",
            key_command=KEY_COMMAND,
            explain_type=explain_type,
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
