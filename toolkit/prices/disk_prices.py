"""Public per-GB prices of the system disks gpuctl creates, where a cloud publishes a table of them.

Tencent's CBS "价格总览" (tencentyun/qcloud-documents @ 9aa6dcef6c3affe8b9f7c78b008845e1f21f8d80,
product/计算与网络/云硬盘/购买指导/价格总览.md, read 2026-12-02; the commit date is not in the stored
copy): 按量计费价格, 单位 元/GB/小时, by region and disk type (高性能云硬盘 CLOUD_PREMIUM, SSD 云硬盘
CLOUD_SSD, 增强型 SSD CLOUD_HSSD, 极速型 SSD CLOUD_TSSD; "-" where the type is not offered). Regions
by the zone page's names (广州 ap-guangzhou ...). Alibaba publishes only examples ("表中价格仅为示例"),
so it has no table here and the plan says so.
"""

from __future__ import annotations

from dataclasses import dataclass

TENCENT_DISK_PRICE_SOURCE = (
    "https://github.com/tencentyun/qcloud-documents/blob/9aa6dcef6c3affe8b9f7c78b008845e1f21f8d80/product/"
    "%E8%AE%A1%E7%AE%97%E4%B8%8E%E7%BD%91%E7%BB%9C/%E4%BA%91%E7%A1%AC%E7%9B%98/"
    "%E8%B4%AD%E4%B9%B0%E6%8C%87%E5%AF%BC/%E4%BB%B7%E6%A0%BC%E6%80%BB%E8%A7%88.md"
)
TENCENT_DISK_PRICE_READ = "2026-12-02"
_TYPES = ("CLOUD_PREMIUM", "CLOUD_SSD", "CLOUD_HSSD", "CLOUD_TSSD")
# 按量计费, 元/GB/小时, in the page's column order; None where it says "-".
_HOURLY: dict[str, tuple[float | None, ...]] = {
    "ap-guangzhou": (0.0009, 0.0025, 0.0021, 0.0021),
    "ap-shanghai": (0.0009, 0.0025, 0.0021, 0.0021),
    "ap-nanjing": (0.0005, 0.0014, 0.0021, 0.0021),
    "ap-beijing": (0.0009, 0.0025, 0.0021, 0.0021),
    "ap-chengdu": (0.0009, 0.0025, 0.0021, None),
    "ap-chongqing": (0.0009, 0.0025, 0.0021, None),
    "ap-hongkong": (0.0005, 0.0025, 0.0021, None),
    "na-toronto": (0.0005, 0.0025, None, None),
    "ap-singapore": (0.0005, 0.0027, 0.0033, None),
    "ap-jakarta": (0.0005, 0.0024, 0.0033, None),
    "na-siliconvalley": (0.0005, 0.0025, 0.0033, None),
    "eu-frankfurt": (0.0005, 0.0025, 0.0033, None),
    "ap-seoul": (0.0005, 0.0025, 0.0033, None),
    "ap-mumbai": (0.0005, 0.0025, 0.0033, None),
    "na-ashburn": (0.0007, 0.0023, 0.0033, None),
    "ap-bangkok": (0.0007, 0.0024, 0.0033, None),
    "ap-tokyo": (0.0006, 0.0024, 0.0033, None),
    "sa-saopaulo": (0.0006, 0.0024, 0.0033, None),
}


@dataclass(frozen=True)
class DiskPrice:
    per_gb_hour: float  # CNY
    source: str
    read: str


def tencent_disk_price(region: str | None, disk_type: str) -> DiskPrice | None:
    """The pay-as-you-go price of one GB of `disk_type` for an hour in `region`; None where the table
    has none (another region, a type the page does not list, or "-")."""
    if region is None or region not in _HOURLY or disk_type not in _TYPES:
        return None
    value = _HOURLY[region][_TYPES.index(disk_type)]
    return None if value is None else DiskPrice(value, TENCENT_DISK_PRICE_SOURCE, TENCENT_DISK_PRICE_READ)
