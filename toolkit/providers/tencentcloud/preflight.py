"""Before `up` spends money on Tencent Cloud: is every pool's type sold in the zone now, and may we have it?

The catalog check (`validate`) knows what a type is; only the cloud knows whether it is for sale in
the zone today, with stock, within the account's quota. Asked through the SDK (sdk.py):

- Sold: `DescribeZoneInstanceConfigInfos` filtered by instance type and charge type (the pool's
  billing mode), for the whole region: the zone's row must be `Status: SELL` and its stock
  (`StatusCategory`) not `WithoutStock`; otherwise the problem names the zones of the region where
  the type is sold now. `UnderStock` ("about to sell out") is a note, not a refusal.
- Quota: `DescribeAccountQuota` for the zone: pay-as-you-go and monthly quotas count instances,
  the spot quota counts vCPUs (its documented unit); the pools' needs of each mode are summed.
- HPC clusters (fabric rdma: every HCC node sits in one): Tencent publishes no API for the HPC
  cluster quota and no fixed number (API 213/83220 DescribeHpcClusters and the CVM error codes
  name only LimitExceeded.HpcClusterQuota; DescribeAccountQuota has no HPC set); preflight counts
  the zone's clusters and refuses only against a limit the caller knows (`hpc_cluster_limit`, e.g.
  from the account's quota page).
- The account can create it: `RunInstances` with `DryRun: true` and each pool's real arguments
  checks parameters, CAM permission, business limits and stock without buying anything
  (https://cloud.tencent.com/document/api/213/15730, DryRun: "检查项包括是否填写了必需参数，请求格式，业务
  限制和云服务器库存", tencentcloud-sdk-python-cvm 3.1.178 models.py:21659). The arguments are the ones
  tencentcloud_instance sends for the pool (resource_tc_instance.go:600-700 at v1.82.42): the image the
  program would pick (`resolve_images`: DescribeImages as the images data source asks it, the same
  newest-first choice), the system disk, the billing from `args.billing_args` (the spot ceiling the
  program sets, the spec's or the catalog's; the prepaid period), the public address, and for an HCC
  type an HpcClusterId: "若创建的实例为高性能计算实例，需指定实例放置的集群" (models.py:21665), refused
  without one as InvalidParameterValue.InstanceTypeRequiredHpcCluster (errorcodes.py:467-468). The
  cluster's own HPC cluster does not exist before `up`, so the dry run names one that exists in the zone
  (a dry run places nothing); where the zone has none, the HCC pools' dry run is skipped with a note.
  The VPC, subnet and security group do not exist before `up` either and are left out.

Every problem is collected and reported at once (CatalogError, exit 4: the spec asks for what the
cloud does not sell now). An API failure that stops every check (credentials, network) is raised
as it is (sdk.ApiError, exit 6).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from toolkit.catalog.store import load_catalog
from toolkit.errors import CatalogError
from toolkit.providers.tencentcloud import args as tencent_args
from toolkit.providers.tencentcloud.sdk import ApiError, TencentApi, describe_error, filters
from toolkit.spec.models import BillingMode, ClusterSpec, NodePool

# gpuctl's billing modes -> the API's InstanceChargeType.
CHARGE_TYPES: dict[BillingMode, str] = {
    "pay_as_you_go": "POSTPAID_BY_HOUR",
    "spot": "SPOTPAID",
    "monthly": "PREPAID",
}
# DescribeAccountQuota's set for each charge type, and what its numbers count.
QUOTA_SETS = {
    "POSTPAID_BY_HOUR": ("PostPaidQuotaSet", "instances"),
    "SPOTPAID": ("SpotPaidQuotaSet", "vCPUs"),
    "PREPAID": ("PrePaidQuotaSet", "instances"),
}
SELL = "SELL"
NO_STOCK = "WithoutStock"
LOW_STOCK = "UnderStock"
# A dry run that passes: the API's common error code "DryRunOperation" (or a plain answer).
DRY_RUN_PASSED = "DryRunOperation"


@dataclass
class PreflightReport:
    problems: list[str] = field(default_factory=list)  # each refuses `up`
    notes: list[str] = field(default_factory=list)  # worth saying, not worth refusing


def sold_zones(offers: list[dict[str, Any]]) -> list[str]:
    """The zones where a row says the type is for sale with stock, sorted."""
    return sorted({str(o.get("Zone")) for o in offers
                   if o.get("Status") == SELL and o.get("StatusCategory") != NO_STOCK and o.get("Zone")})


def check_offer(pool: NodePool, zone: str, offers: list[dict[str, Any]],
                report: PreflightReport) -> dict[str, Any] | None:
    """Is `pool`'s type sold in `zone` now (the rows of DescribeZoneInstanceConfigInfos for its
    type and charge type in the region)? Returns the zone's row when it is."""
    charge = CHARGE_TYPES[pool.billing.mode]
    here = [o for o in offers if o.get("Zone") == zone and o.get("InstanceType") == pool.instance_type]
    elsewhere = [z for z in sold_zones(offers) if z != zone]
    sold_in = (f"; sold now in: {', '.join(elsewhere)}" if elsewhere
               else "; not sold in any other zone of the region now")
    what = f"node pool {pool.name}: {pool.instance_type} ({pool.billing.mode}, {charge})"
    if not here:
        report.problems.append(f"{what} is not offered in {zone}{sold_in}")
        return None
    row = here[0]
    if row.get("Status") != SELL or row.get("StatusCategory") == NO_STOCK:
        reason = f" ({row['SoldOutReason']})" if row.get("SoldOutReason") else ""
        report.problems.append(f"{what} is sold out in {zone}{reason}{sold_in}")
        return None
    if row.get("StatusCategory") == LOW_STOCK:
        report.notes.append(f"{what}: stock in {zone} is low (UnderStock); `up` may still fail for lack of it")
    return row


def check_quota(spec: ClusterSpec, rows: Mapping[str, dict[str, Any]], quota: Mapping[str, Any],
                report: PreflightReport) -> None:
    """Sum each charge type's need over the pools and compare with the zone's remaining quota."""
    zone = spec.zone or ""
    need: dict[str, int] = defaultdict(int)
    pools: dict[str, list[str]] = defaultdict(list)
    for pool in spec.node_pools:
        charge = CHARGE_TYPES[pool.billing.mode]
        row = rows.get(pool.name)
        if charge == "SPOTPAID":
            cpu = row.get("Cpu") if row else None
            if not isinstance(cpu, int):
                continue  # not sold here: already a problem; without a vCPU count there is nothing to sum
            need[charge] += cpu * pool.count
        else:
            need[charge] += pool.count
        pools[charge].append(pool.name)
    for charge, amount in need.items():
        set_key, unit = QUOTA_SETS[charge]
        entries = [q for q in quota.get(set_key) or () if isinstance(q, Mapping) and q.get("Zone") == zone]
        if not entries:
            report.notes.append(f"no {set_key} quota reported for {zone}: "
                                f"quota not checked for {', '.join(pools[charge])}")
            continue
        remaining = entries[0].get("RemainingQuota")
        if isinstance(remaining, int) and remaining < amount:
            report.problems.append(
                f"node pools {', '.join(pools[charge])} need {amount} {unit} of {charge} in {zone}, the account "
                f"has {remaining} left (quota {entries[0].get('TotalQuota')}, used {entries[0].get('UsedQuota')}); "
                "raise it at https://console.cloud.tencent.com/cvm/quota or ask for fewer nodes"
            )
        once = entries[0].get("OnceQuota")
        if charge == "PREPAID" and isinstance(once, int):
            for pool in spec.node_pools:
                if CHARGE_TYPES[pool.billing.mode] == charge and pool.count > once:
                    report.problems.append(f"node pool {pool.name}: {pool.count} monthly instances in one purchase, "
                                           f"the account may buy at most {once} at once")


def check_hpc_clusters(spec: ClusterSpec, api: TencentApi, limit: int | None, report: PreflightReport
                       ) -> list[dict[str, Any]]:
    """The zone's HPC clusters (returned: the dry run of an HCC pool names one), against a known limit."""
    clusters = api.pages("cvm", "DescribeHpcClusters", {"Zone": spec.zone}, "HpcClusterSet")
    if limit is not None and len(clusters) >= limit:
        report.problems.append(
            f"{len(clusters)} HPC clusters already exist in {spec.zone}, the account's limit is {limit}: "
            "`up` needs one more for fabric rdma; delete an unused one (tccli cvm DeleteHpcClusters) or raise the quota"
        )
    elif limit is None:
        report.notes.append(
            f"{len(clusters)} HPC cluster(s) exist in {spec.zone}; Tencent publishes no HPC cluster quota to check, "
            "so a full quota shows only when `up` creates one (LimitExceeded.HpcClusterQuota)"
        )
    return clusters


def dry_run_hpc_cluster(clusters: list[dict[str, Any]], zone: str) -> str | None:
    """An HPC cluster of the zone to name in an HCC pool's dry run: a STANDARD one (the type gpuctl
    creates, CreateHpcCluster's default), the lowest id for a stable choice; None when the zone has none."""
    ids = sorted(str(c["HpcClusterId"]) for c in clusters
                 if isinstance(c.get("HpcClusterId"), str) and c["HpcClusterId"] and c.get("Zone", zone) == zone
                 and (c.get("HpcClusterType") or "STANDARD") == "STANDARD")
    return ids[0] if ids else None


def resolve_images(spec: ClusterSpec, pools: list[NodePool], api: TencentApi, report: PreflightReport
                   ) -> dict[str, str]:
    """Each pool's image id, as the program would pick it: an id as given, an alias through DescribeImages
    as tencentcloud_images asks it (filter image-type PUBLIC_IMAGE, the pool's InstanceType, pages of 100:
    services/cvm/service_tencentcloud_cvm.go:1203-1248 at v1.82.42), the name regex matched on ImageName
    (data_source_tc_images.go:243-266) and args.newest_image's choice. A pool with no match gets a note."""
    found: dict[str, str] = {}
    for pool in pools:
        ref = tencent_args.image_ref(pool.image)
        if ref.image_id is not None:
            found[pool.name] = ref.image_id
            continue
        images = api.pages("cvm", "DescribeImages", {"Filters": filters(image_type=tencent_args.PUBLIC_IMAGE),
                                                     "InstanceType": pool.instance_type}, "ImageSet")
        chosen = tencent_args.newest_image(
            [(str(i.get("ImageId") or ""), str(i.get("CreatedTime") or "")) for i in images
             if isinstance(i.get("ImageName"), str) and re.search(ref.name_regex or "", i["ImageName"])])
        if chosen is None:
            report.problems.append(
                f"node pool {pool.name}: no public image matching {ref.name_regex} for {pool.instance_type} in "
                f"{spec.region}; set node_pools[{pool.name}].image to an image id (img-...) from that region")
        else:
            found[pool.name] = chosen
    return found


def dry_run_params(spec: ClusterSpec, pool: NodePool, image_id: str, hpc_cluster_id: str | None = None
                   ) -> dict[str, Any]:
    """RunInstances arguments of one pool as tencentcloud_instance sends them at `up`, with DryRun
    (resource_tc_instance.go:600-700 at v1.82.42). The network (VPC, subnet, security group) does not
    exist before `up`, so VirtualPrivateCloud is left out; should the API refuse the dry run for that
    (an account without a default VPC), the problem shows its words."""
    row = load_catalog(tencent_args.PROVIDER).find(pool.instance_type)
    assert row is not None  # validate refused a type the catalog does not know
    billing = tencent_args.billing_args(pool, row, action_at=datetime(2000, 1, 1, tzinfo=UTC), region=spec.region)
    system_disk: dict[str, Any] = {"DiskSize": pool.system_disk.size_gb}
    disk_type = tencent_args.system_disk_type(pool)
    if disk_type is not None:
        system_disk["DiskType"] = disk_type
    params: dict[str, Any] = {
        "Placement": {"Zone": spec.zone},
        "InstanceType": pool.instance_type,
        "InstanceChargeType": billing.instance_charge_type,
        "ImageId": image_id,
        "SystemDisk": system_disk,
        "InstanceCount": pool.count,
        "DryRun": True,
    }
    if spec.network.public_ip:
        params["InternetAccessible"] = {"InternetChargeType": tencent_args.INTERNET_CHARGE_TYPE,
                                        "InternetMaxBandwidthOut": tencent_args.PUBLIC_BANDWIDTH_MBPS,
                                        "PublicIpAssigned": True}
    if row.hcc and hpc_cluster_id is not None:
        params["HpcClusterId"] = hpc_cluster_id
    if billing.instance_charge_type == "PREPAID":
        params["InstanceChargePrepaid"] = {"Period": billing.prepaid_period, "RenewFlag": billing.prepaid_renew_flag}
    if billing.instance_charge_type == "SPOTPAID":
        # The provider lower-cases spot_instance_type and passes spot_max_price as given
        # (resource_tc_instance.go:643-658).
        spot: dict[str, Any] = {"SpotInstanceType": (billing.spot_instance_type or "").lower()}
        if billing.spot_max_price is not None:
            spot["MaxPrice"] = billing.spot_max_price
        params["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": spot}
    return params


def dry_run(spec: ClusterSpec, pool: NodePool, image_id: str, api: TencentApi, sold_in: list[str],
            report: PreflightReport, hpc_cluster_id: str | None = None) -> None:
    try:
        api.call("cvm", "RunInstances", dry_run_params(spec, pool, image_id, hpc_cluster_id))
    except ApiError as exc:
        if exc.code == DRY_RUN_PASSED:
            return
        if exc.code.startswith(("AuthFailure.SecretIdNotFound", "AuthFailure.Signature", "AuthFailure.Token")):
            raise  # the credentials are wrong: nothing else will answer either
        context = {"action": "RunInstances (dry run)", "zone": spec.zone or "", "instance_type": pool.instance_type}
        if sold_in:
            context["sold_in"] = ", ".join(sold_in)
        what, hint = describe_error(exc.code, exc.api_message, context)
        report.problems.append(f"node pool {pool.name}: {what}" + (f" ({hint})" if hint else ""))


def run_checks(spec: ClusterSpec, api: TencentApi, *, images: Mapping[str, str] | None = None,
               hpc_cluster_limit: int | None = None) -> PreflightReport:
    """Every check, every problem (nothing raised for a problem; ApiError when the API cannot be asked)."""
    report = PreflightReport()
    zone = spec.zone or ""
    rows: dict[str, dict[str, Any]] = {}
    sold_in: dict[str, list[str]] = {}
    for pool in spec.node_pools:
        charge = CHARGE_TYPES[pool.billing.mode]
        answer = api.call("cvm", "DescribeZoneInstanceConfigInfos",
                          {"Filters": filters(instance_type=pool.instance_type, instance_charge_type=charge)},
                          context={"instance_type": pool.instance_type, "zone": zone})
        offers = [o for o in answer.get("InstanceTypeQuotaSet") or () if isinstance(o, dict)]
        sold_in[pool.name] = [z for z in sold_zones(offers) if z != zone]
        row = check_offer(pool, zone, offers, report)
        if row is not None:
            rows[pool.name] = row
    quota = api.call("cvm", "DescribeAccountQuota", {"Filters": filters(zone=zone)})
    overview = quota.get("AccountQuotaOverview") or {}
    check_quota(spec, rows, overview.get("AccountQuota") or {}, report)
    catalog = load_catalog(tencent_args.PROVIDER)
    hcc_pools = [pool.name for pool in spec.node_pools
                 if (found := catalog.find(pool.instance_type)) is not None and found.hcc]
    hpc_cluster_id = None
    if spec.network.fabric == "rdma" or hcc_pools:
        hpc_cluster_id = dry_run_hpc_cluster(check_hpc_clusters(spec, api, hpc_cluster_limit, report), zone)
    selling = [pool for pool in spec.node_pools if pool.name in rows]  # not sold: the dry run would only say it again
    resolved = dict(images) if images is not None else resolve_images(spec, selling, api, report)
    for pool in selling:
        image_id = resolved.get(pool.name)
        if image_id is None:
            report.notes.append(f"node pool {pool.name}: no image id, RunInstances dry run skipped")
            continue
        if pool.name in hcc_pools and hpc_cluster_id is None:
            report.notes.append(
                f"node pool {pool.name}: no HPC cluster exists in {zone} yet (`up` creates one) and RunInstances "
                "refuses an HCC type without one (InvalidParameterValue.InstanceTypeRequiredHpcCluster), so its "
                "dry run is skipped")
            continue
        hpc = hpc_cluster_id if pool.name in hcc_pools else None
        dry_run(spec, pool, image_id, api, sold_in[pool.name], report, hpc)
    return report


def preflight(spec: ClusterSpec, api: TencentApi, *, images: Mapping[str, str] | None = None,
              hpc_cluster_limit: int | None = None) -> PreflightReport:
    """`run_checks`, refusing with every problem at once; returns the report (its notes) when none."""
    report = run_checks(spec, api, images=images, hpc_cluster_limit=hpc_cluster_limit)
    if report.problems:
        raise CatalogError(
            [f"{spec.name}: {len(report.problems)} problem(s) on Tencent Cloud in {spec.zone} before `up`:"]
            + [f"  - {problem}" for problem in report.problems],
            hint="fix them all (another zone or type, more quota, fewer nodes), then run `up` again; "
                 "nothing was created",
        )
    return report
