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
  (https://cloud.tencent.com/document/api/213/15730, DryRun). It needs the pool's image id, which
  the caller resolves (`images`: pool name -> img-...); without one the dry run of that pool is skipped
  and a note says so.

Every problem is collected and reported at once (CatalogError, exit 4: the spec asks for what the
cloud does not sell now). An API failure that stops every check (credentials, network) is raised
as it is (sdk.ApiError, exit 6).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolkit.errors import CatalogError
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


def check_hpc_clusters(spec: ClusterSpec, api: TencentApi, limit: int | None, report: PreflightReport) -> None:
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


def dry_run_params(spec: ClusterSpec, pool: NodePool, image_id: str) -> dict[str, Any]:
    """RunInstances arguments of one pool as `up` would send them, with DryRun. The network (VPC,
    subnet, security group) does not exist before `up`, so VirtualPrivateCloud is left out; should the
    API refuse the dry run for that (an account without a default VPC), the problem shows its words."""
    charge = CHARGE_TYPES[pool.billing.mode]
    params: dict[str, Any] = {
        "Placement": {"Zone": spec.zone},
        "InstanceType": pool.instance_type,
        "InstanceChargeType": charge,
        "ImageId": image_id,
        "SystemDisk": {"DiskType": pool.system_disk.category, "DiskSize": pool.system_disk.size_gb},
        "InstanceCount": pool.count,
        "DryRun": True,
    }
    if charge == "PREPAID":
        params["InstanceChargePrepaid"] = {"Period": pool.billing.months, "RenewFlag": "NOTIFY_AND_MANUAL_RENEW"}
    if charge == "SPOTPAID":
        spot: dict[str, Any] = {"SpotInstanceType": "one-time"}
        if pool.billing.spot_max_price_per_hour is not None:
            spot["MaxPrice"] = f"{pool.billing.spot_max_price_per_hour:g}"
        params["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": spot}
    return params


def dry_run(spec: ClusterSpec, pool: NodePool, image_id: str, api: TencentApi, sold_in: list[str],
            report: PreflightReport) -> None:
    try:
        api.call("cvm", "RunInstances", dry_run_params(spec, pool, image_id))
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
    if spec.network.fabric == "rdma":
        check_hpc_clusters(spec, api, hpc_cluster_limit, report)
    for pool in spec.node_pools:
        if pool.name not in rows:
            continue  # not sold: the dry run would only say it again
        image_id = (images or {}).get(pool.name)
        if image_id is None:
            report.notes.append(f"node pool {pool.name}: no image id given, RunInstances dry run skipped")
            continue
        dry_run(spec, pool, image_id, api, sold_in[pool.name], report)
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
