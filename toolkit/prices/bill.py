"""The rest of the bill: what a cluster pays for besides the instances, as plan notes with sources.

The instance price is the plan's number; disks and public traffic are billed apart and depend on
use (traffic) or on prices no public page gave, so they are notes, not totals. Each figure below was
read from a public page (URL and date beside it); where none was found the note says so rather than
guess. A cheap GPU with expensive egress is a classic surprise, hence the per-GB figure up front.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolkit.providers.tencentcloud.args import system_disk_type
from toolkit.spec.models import ClusterSpec, NodePool

# Tencent's "独享型公网网络计费" (dedicated public network billing), read 2026-12-01 as stored in
# github.com/tencentyun/qcloud-documents (a secondary copy of Tencent's own doc; the commit date is
# not in the stored copy, so the figures may be old): 按流量计费 大陆 0.80 元/GB, 香港 1.00 元/GB;
# 按量计费按带宽 大陆 0.063 元/Mbps/小时 up to 5 Mbps, 0.25 元/Mbps/小时 above.
TENCENT_NETWORK_SOURCE = (
    "https://github.com/tencentyun/qcloud-documents/blob/2efa60a6ba34cc902955252d966f526ac6eb42d3/product/"
    "%E8%AE%A1%E7%AE%97%E4%B8%8E%E7%BD%91%E7%BB%9C/%E4%BA%91%E6%9C%8D%E5%8A%A1%E5%99%A8/"
    "%E8%B4%AD%E4%B9%B0%E6%8C%87%E5%8D%97/%E8%B4%AD%E4%B9%B0%E5%85%AC%E7%BD%91%E7%BD%91%E7%BB%9C/"
    "%E7%8B%AC%E4%BA%AB%E5%9E%8B%E5%85%AC%E7%BD%91%E7%BD%91%E7%BB%9C%E8%AE%A1%E8%B4%B9.md"
)
# Tencent's disk "价格总览" (same repository @ 65985d01e471863c74638176a7d114f1b3057067, read
# 2026-12-01): system and data disks are priced alike and apart from the instance, 元/GB*小时 for
# pay-as-you-go, no per-GB figure on the page itself.
TENCENT_DISK_SOURCE = (
    "https://github.com/tencentyun/qcloud-documents/blob/65985d01e471863c74638176a7d114f1b3057067/product/"
    "%E8%AE%A1%E7%AE%97%E4%B8%8E%E7%BD%91%E7%BB%9C/%E4%BA%91%E6%9C%8D%E5%8A%A1%E5%99%A8/"
    "%E8%B4%AD%E4%B9%B0%E6%8C%87%E5%8D%97/%E8%B4%AD%E4%B9%B0%E4%BA%91%E7%A1%AC%E7%9B%98/"
    "%E4%BB%B7%E6%A0%BC%E6%80%BB%E8%A7%88.md"
)
READ = "2026-12-01"


@dataclass(frozen=True)
class Egress:
    per_gb: float | None  # CNY per GB out to the internet, mainland China; None: no public figure found
    source: str | None
    read: str | None


# What gpuctl creates: a public IP per node billed by traffic with a 100 Mbit/s cap (Alibaba
# PayByTraffic, Tencent TRAFFIC_POSTPAID_BY_HOUR; providers/*/args.py PUBLIC_BANDWIDTH_MBPS).
EGRESS = {
    "alicloud": Egress(per_gb=None, source=None, read=None),
    "tencentcloud": Egress(per_gb=0.80, source=TENCENT_NETWORK_SOURCE, read=READ),
}
TRAFFIC_BILLING = {"alicloud": "PayByTraffic", "tencentcloud": "TRAFFIC_POSTPAID_BY_HOUR"}


def _disk_type(spec: ClusterSpec, pool: NodePool) -> str:
    """The system disk's category as the cloud will make it: on Tencent, a spec that names none gets
    the type Tencent has in stock (providers/tencentcloud/args.py system_disk_type), never the spec's
    default, which is Alibaba's cloud_essd."""
    if spec.provider == "tencentcloud" and system_disk_type(pool) is None:
        return "(the type Tencent has in stock: the spec names none)"
    return pool.system_disk.category


def bill_notes(spec: ClusterSpec, includes: dict[str, str | None] | None = None) -> list[str]:
    """Notes on disks and public traffic for a paid cloud; none for the lab. `includes`: per pool,
    what its catalog price covers beyond the instance (Price.includes), where it says so."""
    if spec.provider not in EGRESS:
        return []
    notes: list[str] = []
    disks = ", ".join(f"{p.name}: {p.count} x {p.system_disk.size_gb} GiB {_disk_type(spec, p)}"
                      for p in spec.node_pools)
    covered = "; ".join(f"pool {pool}'s price already includes {what}" for pool, what in (includes or {}).items()
                        if what)
    if spec.provider == "tencentcloud":
        notes.append(f"system disks ({disks}) are billed apart from the instance, per GB-hour; the instance "
                     f"price above leaves them out (Tencent disk price overview, read {READ}: {TENCENT_DISK_SOURCE})")
    else:
        notes.append(f"system disks ({disks}) are billed apart from the instance; the instance price above "
                     "leaves them out (a live Alibaba price keeps the system disk's part beside it in the cache)"
                     + (f", except: {covered}, so that part is counted once already" if covered else ""))
    if not spec.network.public_ip:
        notes.append("no public IP (network.public_ip: false): no public traffic is billed")
        return notes
    egress = EGRESS[spec.provider]
    billing = TRAFFIC_BILLING[spec.provider]
    if egress.per_gb is not None:
        notes.append(f"public traffic: each node's public IP is billed by traffic ({billing}, capped at 100 Mbit/s); "
                     f"egress to the internet {egress.per_gb:.2f} CNY/GB in mainland China (1.00 in Hong Kong; "
                     "pay-by-bandwidth instead: 0.063 CNY/Mbit/s/h up to 5 Mbit/s, 0.25 above), from a copy of "
                     f"Tencent's public network billing page of unknown date, read {egress.read}: {egress.source}")
    else:
        notes.append(f"public traffic: each node's public IP is billed by traffic ({billing}, capped at 100 Mbit/s); "
                     "no public Alibaba page with the per-GB egress price was found, so it is not shown: "
                     "check the ECS price page before moving large data out")
    return notes
