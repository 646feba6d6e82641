"""Alibaba Cloud's own catalog checks, run by `toolkit.catalog.checks.check_spec` through the provider.

The checks every cloud shares live in `toolkit/catalog/checks.py`; this module gives them Alibaba's
data (`RULES`: zone ids, images, disks, key types, MTU) and adds what only Alibaba has: eRDMA on
the catalog row, subscription lengths, vSwitch addresses, the shortest TTL its timed release takes.
"""

from __future__ import annotations

import ipaddress
import re

from toolkit import hints
from toolkit.catalog.checks import STANDARD_MTU, CheckResult, CloudRules, check_cloud, no_rdma_nics
from toolkit.catalog.models import InstanceType
from toolkit.providers.alicloud.args import (
    AUTO_RELEASE_MIN_LEAD,
    CREATE_MARGIN,
    ERDMA_MTU_WITHOUT_JUMBO,
    IMAGE_ID_PREFIX,
    IMAGE_PATTERNS,
    JUMBO_MTU_ABOVE,
    PREPAID_MONTHS,
    eris_per_node,
)
from toolkit.spec.duration import format_duration
from toolkit.spec.models import ClusterSpec

# Alibaba refuses an auto-release time sooner than 30 minutes ahead, and gpuctl asks for it some
# minutes after the program starts (network first): the same floor GpuClusterArgs applies.
MIN_TTL = AUTO_RELEASE_MIN_LEAD + CREATE_MARGIN
MAX_MTU = 8500  # Alibaba's jumbo frames are 8,500 bytes
# Alibaba reserves the first and the last three IPv4 addresses of every vSwitch CIDR block
# (CreateVSwitchCidrReservation: "the first IP address and the last three IP addresses of the vSwitch
# are reserved by the system", https://www.alibabacloud.com/help/en/vpc/api-610154).
VSWITCH_RESERVED = 4
# System disk categories, RunInstances SystemDisk.Category (and DescribeAvailableResource's
# SystemDisk values): https://www.alibabacloud.com/help/en/ecs/developer-reference/api-runinstances
# (the same list, with cloud_auto and cloud_essd_entry: https://help.aliyun.com/zh/ack/ack-edge/
# developer-reference/api-cs-2015-12-15-struct-data-disk-edge)
DISK_CATEGORIES = ("cloud_essd", "cloud_essd_entry", "cloud_auto", "cloud_ssd", "cloud_efficiency", "cloud")
# The key types Alibaba's ImportKeyPair accepts: rsa, dsa, ecdsa and their OpenSSH certificates; not
# ed25519 (https://help.aliyun.com/en/ecs/developer-reference/api-ecs-2014-05-26-importkeypair,
# read 2026-12-01).
KEY_TYPES = frozenset({
    "ssh-rsa", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
    "ssh-rsa-cert-v01@openssh.com", "ssh-dss-cert-v01@openssh.com", "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ecdsa-sha2-nistp384-cert-v01@openssh.com", "ecdsa-sha2-nistp521-cert-v01@openssh.com",
})


def zone_suffix(region: str) -> str:
    """A zone id is its region id and a letter: after a '-' where the region id ends in a letter
    (cn-beijing-h), directly where it ends in a digit (ap-southeast-1a)."""
    return "[a-z]" if region[-1].isdigit() else "-[a-z]"


def check_row(spec: ClusterSpec, row: InstanceType, where: str, result: CheckResult) -> None:
    """The fabric on one pool's catalog row: eRDMA needs ERI support; rdma needs RoCE/IB NICs."""
    fabric = spec.network.fabric
    if fabric == "erdma" and (row.rdma is None or row.rdma.kind != "erdma" or row.rdma.eri_quantity == 0):
        result.problems.append(
            f"{where}.instance_type: {row.name} has no eRDMA interface (ERI) support; "
            f"pick a type with eRDMA (`{hints.command('catalog', 'alicloud', '--fabric', 'erdma')}`) "
            "or set network.fabric: tcp"
        )
    elif fabric == "rdma":
        problem = no_rdma_nics(row, where, "use fabric erdma with an eRDMA type")
        if problem is not None:
            result.problems.append(problem)


def check_pools(spec: ClusterSpec, result: CheckResult) -> None:
    """Alibaba-only limits: subscription lengths, vSwitch addresses, the MTU the VPC carries."""
    addresses = 0
    for index, pool in enumerate(spec.node_pools):
        where = f"node_pools[{index}] ({pool.name})"
        row = result.rows.get(pool.name)
        months = pool.billing.months
        if pool.billing.mode == "monthly" and months is not None and months not in PREPAID_MONTHS:
            result.problems.append(
                f"{where}.billing.months: {months} is not a subscription length Alibaba sells; RunInstances "
                f"takes {', '.join(map(str, PREPAID_MONTHS))} months"
            )
        erdma = spec.network.fabric == "erdma" and row is not None and row.rdma is not None and row.rdma.kind == "erdma"
        # Each node: its primary interface, plus one ENI per secondary ERI.
        addresses += pool.count * (eris_per_node(row) if erdma and row is not None else 1)
        if (
            spec.network.mtu > JUMBO_MTU_ABOVE and row is not None
            and (row.max_mtu or 0) <= JUMBO_MTU_ABOVE
        ):
            carried = ERDMA_MTU_WITHOUT_JUMBO if spec.network.fabric == "erdma" else STANDARD_MTU
            result.warnings.append(
                f"{where}: jumbo frames are not enabled on {row.name} (the catalog states no jumbo MTU for it); "
                f"gpuctl configures and exports MTU {carried}, not network.mtu {spec.network.mtu}"
            )
    subnet = ipaddress.ip_network(spec.network.effective_subnet_cidr)
    usable = subnet.num_addresses - VSWITCH_RESERVED
    if addresses > usable:
        result.problems.append(
            f"network.subnet_cidr: {subnet} has {usable} usable addresses (Alibaba reserves the first and the "
            f"last three of a vSwitch) but the cluster needs {addresses} (each node's primary interface and "
            "one per secondary ERI); set network.subnet_cidr to a larger block inside network.vpc_cidr"
        )


RULES = CloudRules(
    label="Alibaba Cloud",
    zone_suffix=zone_suffix,
    zone_example="cn-beijing-h or ap-southeast-1a",
    # The aliases of toolkit.providers.alicloud.args and ids `m-<lower-case letters and digits>`.
    image_aliases=tuple(sorted(IMAGE_PATTERNS)),
    image_id=re.compile(re.escape(IMAGE_ID_PREFIX) + r"[0-9a-z]{6,40}"),
    image_id_form=f"{IMAGE_ID_PREFIX}xxxxxxxx",
    disk_categories=DISK_CATEGORIES,
    max_mtu=MAX_MTU,
    key_types=KEY_TYPES,
    key_types_refusal="which Alibaba's ImportKeyPair does not accept (it takes RSA, DSA and ECDSA keys)",
    key_command="ssh-keygen -t ecdsa",
    check_row=check_row,
    check_pools=check_pools,
)


def check_catalog(spec: ClusterSpec, result: CheckResult) -> None:
    check_cloud(spec, result, RULES)
    if spec.lifecycle.ttl_delta < MIN_TTL:
        floor = format_duration(MIN_TTL)
        result.problems.append(
            f"lifecycle.ttl: {spec.lifecycle.ttl} is under {floor} for alicloud: Alibaba refuses an auto-release "
            f"time sooner than {format_duration(AUTO_RELEASE_MIN_LEAD)} ahead and gpuctl keeps a "
            f"{format_duration(CREATE_MARGIN)} margin for creating the network first; set lifecycle.ttl: "
            f"{floor} or more"
        )
