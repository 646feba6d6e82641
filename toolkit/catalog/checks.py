"""Checks that need the catalog: does the cloud sell what the spec asks for, and is it wise.

`check_spec` returns refusals (problems) and warnings separately: a problem stops `validate`,
`plan` and `up`; a warning is printed and the user decides. Checks are pure: they read the spec and
the catalog, and the spec's key file, nothing else.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from toolkit import hints
from toolkit.catalog.models import Catalog, InstanceType
from toolkit.catalog.store import load_catalog
from toolkit.errors import SpecError
from toolkit.providers.alicloud_args import (
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
from toolkit.spec.files import MAX_PUBLIC_KEY_BYTES, read_small_file
from toolkit.spec.models import ClusterSpec, NodePool

LAB_INSTANCE_TYPE = "lab"  # the one instance type of provider local: a namespace on this machine
LAB_IMAGES = ("debian_12",)  # the local lab debootstraps Debian 12 roots, nothing else
LONG_TTL = timedelta(hours=24)
STANDARD_MTU = 1500

# Images a pool may name: a gpuctl alias the provider's program knows how to look up, or an image
# id of the provider's own form. Alibaba: the aliases of toolkit.providers.alicloud_args and ids
# `m-<lower-case letters and digits>`. Tencent: ids `img-xxxxxxxx` (RunInstances, ImageId: "形如
# img-xxx", https://cloud.tencent.com/document/api/213/15730).
IMAGE_ALIASES: dict[str, tuple[str, ...]] = {
    "alicloud": tuple(sorted(IMAGE_PATTERNS)),
    "tencentcloud": ("tencentos_3", "ubuntu_22_04", "ubuntu_24_04"),
}
IMAGE_IDS: dict[str, tuple[re.Pattern[str], str]] = {
    "alicloud": (re.compile(re.escape(IMAGE_ID_PREFIX) + r"[0-9a-z]{6,40}"), f"{IMAGE_ID_PREFIX}xxxxxxxx"),
    "tencentcloud": (re.compile(r"img-[0-9a-z]{6,32}"), "img-xxxxxxxx"),
}

# System disk categories each cloud has, spelled as its API spells them.
# Alibaba, RunInstances SystemDisk.Category (and DescribeAvailableResource's SystemDisk values):
#   https://www.alibabacloud.com/help/en/ecs/developer-reference/api-runinstances
#   (the same list, with cloud_auto and cloud_essd_entry: https://help.aliyun.com/zh/ack/ack-edge/
#   developer-reference/api-cs-2015-12-15-struct-data-disk-edge)
# Tencent, CVM data type SystemDisk.DiskType (LOCAL_BASIC ... CLOUD_TSSD):
#   https://cloud.tencent.com/document/api/213/15753#SystemDisk
#   (SDK copy: https://www.rubydoc.info/gems/tencentcloud-sdk-cvm/TencentCloud/Cvm/V20170312/SystemDisk)
DISK_CATEGORIES: dict[str, tuple[str, ...]] = {
    "alicloud": ("cloud_essd", "cloud_essd_entry", "cloud_auto", "cloud_ssd", "cloud_efficiency", "cloud"),
    "tencentcloud": (
        "CLOUD_PREMIUM", "CLOUD_SSD", "CLOUD_BSSD", "CLOUD_HSSD", "CLOUD_TSSD", "CLOUD_BASIC",
        "LOCAL_BASIC", "LOCAL_SSD",
    ),
}

# A zone id is its region id and a suffix. Alibaba: a letter, after a '-' where the region id ends
# in a letter (cn-beijing-h) and directly where it ends in a digit (ap-southeast-1a). Tencent: '-'
# and a number (ap-shanghai-5).
ZONE_EXAMPLES = {"alicloud": "cn-beijing-h or ap-southeast-1a", "tencentcloud": "ap-shanghai-5"}

# Alibaba refuses an auto-release time sooner than 30 minutes ahead, and gpuctl asks for it some
# minutes after the program starts (network first): the same floor GpuClusterArgs applies.
ALICLOUD_MIN_TTL = AUTO_RELEASE_MIN_LEAD + CREATE_MARGIN


@dataclass
class CheckResult:
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # pool name -> catalog row (absent for the local lab and for unknown types)
    rows: dict[str, InstanceType] = field(default_factory=dict)


def check_spec(spec: ClusterSpec, *, source: str = "<spec>") -> CheckResult:
    result = CheckResult()
    if spec.provider == "local":
        _check_local(spec, result)
    else:
        catalog = load_catalog(spec.provider)
        _check_zone(spec, result)
        for index, pool in enumerate(spec.node_pools):
            where = f"node_pools[{index}] ({pool.name})"
            _check_image(spec, pool, where, result)
            _check_disk(spec, pool, where, result)
            row = catalog.find(pool.instance_type)
            if row is None:
                result.problems.append(_unknown_type(spec, catalog, pool, where))
                continue
            result.rows[pool.name] = row
            _check_fabric(spec, row, where, result)
            _check_mtu(spec, row, where, result)
            _check_billing(spec, pool, row, where, result)
        if spec.provider == "alicloud":
            _check_alicloud(spec, result)
        _check_key(spec, result)
    _check_lifecycle_and_access(spec, result)
    _check_nccl_names(spec, result)
    # Each message names the spec so a user running validate on several files knows which one.
    result.problems = [f"{source}: {p}" for p in result.problems]
    result.warnings = [f"{source}: {w}" for w in result.warnings]
    return result


def _check_zone(spec: ClusterSpec, result: CheckResult) -> None:
    region, zone = spec.region, spec.zone
    if region is None or zone is None:  # ClusterSpec requires both for a cloud
        return
    alicloud_suffix = "[a-z]" if region[-1].isdigit() else "-[a-z]"
    suffix = alicloud_suffix if spec.provider == "alicloud" else "-[0-9]{1,3}"
    if not re.fullmatch(re.escape(region) + suffix, zone):
        result.problems.append(
            f"zone: {zone} is not a zone of region {region}; {spec.provider} zone ids are the region id "
            f"and a zone suffix, e.g. {ZONE_EXAMPLES[spec.provider]}: set zone to one in {region} "
            "or region to the zone's region"
        )


def _check_image(spec: ClusterSpec, pool: NodePool, where: str, result: CheckResult) -> None:
    aliases = IMAGE_ALIASES[spec.provider]
    pattern, form = IMAGE_IDS[spec.provider]
    if pool.image in aliases or pattern.fullmatch(pool.image):
        return
    result.problems.append(
        f"{where}.image: '{pool.image}' is neither an image gpuctl knows for {spec.provider} "
        f"({', '.join(aliases)}) nor an image id of the form {form}; use one of those"
    )


def _check_disk(spec: ClusterSpec, pool: NodePool, where: str, result: CheckResult) -> None:
    if spec.provider != "alicloud" and "category" not in pool.system_disk.model_fields_set:
        return  # the default (cloud_essd) is Alibaba's name; other providers choose their own
    categories = DISK_CATEGORIES[spec.provider]
    category = pool.system_disk.category
    if category in categories:
        return
    close = difflib.get_close_matches(category, categories, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    result.problems.append(
        f"{where}.system_disk.category: '{category}' is not a system disk category of {spec.provider}; "
        f"{hint}use one of {', '.join(categories)}"
    )


def _unknown_type(spec: ClusterSpec, catalog: Catalog, pool: NodePool, where: str) -> str:
    names = [row.name for row in catalog.instance_types]
    close = difflib.get_close_matches(pool.instance_type, names, n=3, cutoff=0.6)
    listing = hints.command("catalog", spec.provider)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; `{listing}` lists them"
    return (
        f"{where}.instance_type: '{pool.instance_type}' is not a GPU instance type gpuctl knows "
        f"for {spec.provider}{hint}"
    )


def _check_fabric(spec: ClusterSpec, row: InstanceType, where: str, result: CheckResult) -> None:
    fabric = spec.network.fabric
    if fabric == "tcp":
        if spec.node_count > 1 and row.rdma is not None:
            result.warnings.append(
                f"{where}: {row.name} has RDMA NICs ({row.rdma.kind}) but network.fabric is tcp; "
                "multi-node NCCL will run over TCP sockets, several times slower"
            )
        return
    if row.gpu is None:
        result.problems.append(
            f"{where}.instance_type: {row.name} has no GPU; network.fabric {fabric} is for GPU nodes"
        )
        return
    if fabric == "erdma":
        if spec.provider != "alicloud":
            result.problems.append(
                f"network.fabric: erdma is Alibaba Cloud's elastic RDMA; provider {spec.provider} cannot provide it "
                "(use rdma on tencentcloud)"
            )
        elif row.rdma is None or row.rdma.kind != "erdma" or row.rdma.eri_quantity == 0:
            result.problems.append(
                f"{where}.instance_type: {row.name} has no eRDMA interface (ERI) support; "
                f"pick a type with eRDMA (`{hints.command('catalog', 'alicloud', '--fabric', 'erdma')}`) "
                "or set network.fabric: tcp"
            )
    elif fabric == "rdma":
        if row.rdma is None or row.rdma.kind not in ("roce", "ib"):
            kind = f" (it has {row.rdma.kind})" if row.rdma else ""
            result.problems.append(
                f"{where}.instance_type: {row.name} has no RoCE/InfiniBand RDMA NICs{kind}; "
                + (
                    "use an HCC type (HCCPNV4h, HCCPNV5 ...)"
                    if spec.provider == "tencentcloud"
                    else "use fabric erdma with an eRDMA type"
                )
            )
        elif spec.provider == "tencentcloud" and not row.hcc:
            result.problems.append(
                f"{where}.instance_type: {row.name} is not an HCC type; "
                "Tencent RDMA needs an HCC instance in an HCC cluster"
            )


# Alibaba, "Configure eRDMA on GPU instances": with jumbo frames NCCL's LL128 needs MTU 8500;
# without them the MTU must be 1400, and any other MTU risks data consistency problems.
ERDMA_MTU_SOURCE = "https://www.alibabacloud.com/help/id/ecs/user-guide/on-the-gpu-instance-configuration-erdma"
ERDMA_MTUS = (1400, 8500)
ALIBABA_MAX_MTU = 8500  # Alibaba's jumbo frames are 8,500 bytes


def _check_mtu(spec: ClusterSpec, row: InstanceType, where: str, result: CheckResult) -> None:
    mtu = spec.network.mtu
    if spec.network.fabric == "erdma" and mtu not in ERDMA_MTUS:
        result.problems.append(
            f"network.mtu: {mtu} with eRDMA: Alibaba requires 8500 (jumbo frames) or 1400 without them; "
            f"other MTUs risk data consistency problems ({ERDMA_MTU_SOURCE})"
        )
        return
    if spec.provider == "alicloud" and mtu > ALIBABA_MAX_MTU:
        result.problems.append(f"network.mtu: {mtu} is above Alibaba Cloud's jumbo frame size {ALIBABA_MAX_MTU}")
        return
    if mtu <= STANDARD_MTU:
        if spec.network.fabric == "erdma":
            result.warnings.append(
                f"network.mtu: {mtu} with eRDMA: Alibaba's eRDMA guidance pairs LL128 with jumbo frames (8500); "
                "gpuctl turns LL128 off at this MTU"
            )
        return
    if row.max_mtu is None:
        result.warnings.append(
            f"network.mtu: {mtu}: the catalog does not know whether {row.name} carries jumbo frames; "
            "configure verifies it with a do-not-fragment ping"
        )
    elif row.max_mtu < mtu:
        result.problems.append(
            f"network.mtu: {mtu} is larger than {row.name} carries ({row.max_mtu}); set network.mtu: {row.max_mtu}"
        )


# Alibaba reserves the first and the last three IPv4 addresses of every vSwitch CIDR block
# (CreateVSwitchCidrReservation: "the first IP address and the last three IP addresses of the vSwitch
# are reserved by the system", https://www.alibabacloud.com/help/en/vpc/api-610154).
ALIBABA_VSWITCH_RESERVED = 4


def _check_alicloud(spec: ClusterSpec, result: CheckResult) -> None:
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
    usable = subnet.num_addresses - ALIBABA_VSWITCH_RESERVED
    if addresses > usable:
        result.problems.append(
            f"network.subnet_cidr: {subnet} has {usable} usable addresses (Alibaba reserves the first and the "
            f"last three of a vSwitch) but the cluster needs {addresses} (each node's primary interface and "
            "one per secondary ERI); set network.subnet_cidr to a larger block inside network.vpc_cidr"
        )


def _check_billing(spec: ClusterSpec, pool: NodePool, row: InstanceType, where: str, result: CheckResult) -> None:
    billing = pool.billing
    payg = row.price.pay_as_you_go_per_hour if row.price else None
    if billing.mode == "spot":
        if billing.spot_max_price_per_hour is None:
            result.warnings.append(
                f"{where}.billing: spot without spot_max_price_per_hour: you pay the market price, up to the "
                "pay-as-you-go price; set a ceiling"
            )
        elif payg is not None and billing.spot_max_price_per_hour > payg:
            result.warnings.append(
                f"{where}.billing.spot_max_price_per_hour: {billing.spot_max_price_per_hour} is above the "
                f"pay-as-you-go price {payg}; spot will never be cheaper than that ceiling suggests"
            )
        if spec.node_count > 1:
            result.warnings.append(
                f"{where}.billing: spot nodes can be reclaimed at any time; "
                "a multi-node job loses all ranks when one node goes"
            )
    if billing.mode == "monthly":
        result.warnings.append(
            f"{where}.billing: monthly subscriptions are paid up front and are not released by lifecycle.ttl; "
            "the cloud's timed release covers pay-as-you-go and spot only"
        )


def _check_key(spec: ClusterSpec, result: CheckResult) -> None:
    key = spec.ssh.public_key
    if key is None:
        return
    try:
        # A regular file of at most MAX_PUBLIC_KEY_BYTES: /dev/zero or a FIFO is refused, not read.
        raw = read_small_file(key, limit=MAX_PUBLIC_KEY_BYTES, what="public key file (.pub)")
    except SpecError as error:
        for problem in error.problems:
            fix = "" if "give the path" in problem else "; give the path of your .pub file"
            result.problems.append(f"ssh.public_key: {problem}{fix}")
        return
    text = raw.decode("utf-8", errors="replace").strip()
    if "PRIVATE KEY" in text:
        result.problems.append(
            f"ssh.public_key: {key} is a PRIVATE key; give the matching .pub file and keep the private key to yourself"
        )
    elif not text.startswith(("ssh-ed25519 ", "ssh-rsa ", "ecdsa-sha2-", "sk-ssh-ed25519@", "sk-ecdsa-sha2-")):
        result.problems.append(f"ssh.public_key: {key} does not look like an OpenSSH public key (ssh-ed25519 AAAA...)")
    elif any(not (char.isprintable() or char == " ") for char in text):
        # A second line would be a second authorized key (or options) on every node.
        result.problems.append(
            f"ssh.public_key: {key} holds more than one line or control characters; give a .pub file with "
            "exactly one OpenSSH public key"
        )
    elif spec.provider == "alicloud" and text.split()[0] not in ALICLOUD_KEY_TYPES:
        result.problems.append(
            f"ssh.public_key: {key} is a {text.split()[0]} key, which Alibaba's ImportKeyPair does not accept (it "
            "takes RSA, DSA and ECDSA keys); make one with `ssh-keygen -t ecdsa` or `ssh-keygen -t rsa -b 4096`"
        )
    elif any(text.split()[:2] == example.read_text().split()[:2] for example in EXAMPLE_KEYS):
        result.warnings.append(
            f"ssh.public_key: {key} is the example key shipped in examples/ssh/ (a placeholder: you do not hold "
            "its private key); "
            "give your own .pub file (ssh-keygen -t ed25519 makes one)"
        )


def _check_local(spec: ClusterSpec, result: CheckResult) -> None:
    if spec.network.fabric != "tcp":
        result.problems.append(
            f"network.fabric: {spec.network.fabric} cannot run in the local lab (no RDMA hardware or Soft-RoCE here); "
            "use fabric: tcp — nodes still replay real RDMA captures for detection and tuning"
        )
    for index, pool in enumerate(spec.node_pools):
        where = f"node_pools[{index}] ({pool.name})"
        if pool.instance_type != LAB_INSTANCE_TYPE:
            result.problems.append(
                f"{where}.instance_type: provider local has one instance type, '{LAB_INSTANCE_TYPE}'"
            )
        # Set explicitly only: the lab ignores the cloud default (ubuntu_22_04) it never builds.
        if "image" in pool.model_fields_set and pool.image not in LAB_IMAGES:
            result.problems.append(
                f"{where}.image: '{pool.image}': the local lab builds {', '.join(LAB_IMAGES)} roots only; "
                f"set image: {LAB_IMAGES[0]} or remove it"
            )
        if pool.billing.mode != "pay_as_you_go":
            result.problems.append(f"{where}.billing: the local lab costs nothing; remove billing")
        if pool.capture is not None and not _is_dir(Path(pool.capture)):
            result.problems.append(f"{where}.capture: {pool.capture} is not a directory of captures")
    if spec.node_count > 16:
        result.problems.append(f"node_pools: {spec.node_count} lab nodes; the local lab runs at most 16 on one machine")


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):  # e.g. a name too long for the file system
        return False


# The example specs' placeholders: keys nobody holds the private half of, and address ranges
# reserved for documentation.
EXAMPLE_KEYS = tuple((Path(__file__).resolve().parents[2] / "examples" / "ssh").glob("example_*.pub"))
# The key types Alibaba's ImportKeyPair accepts: rsa, dsa, ecdsa and their OpenSSH certificates; not
# ed25519 (https://help.aliyun.com/en/ecs/developer-reference/api-ecs-2014-05-26-importkeypair,
# read 2026-12-01).
ALICLOUD_KEY_TYPES = frozenset({
    "ssh-rsa", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
    "ssh-rsa-cert-v01@openssh.com", "ssh-dss-cert-v01@openssh.com", "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ecdsa-sha2-nistp384-cert-v01@openssh.com", "ecdsa-sha2-nistp521-cert-v01@openssh.com",
})
DOCUMENTATION_RANGES = tuple(ipaddress.ip_network(n) for n in
                             ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32"))


def _check_lifecycle_and_access(spec: ClusterSpec, result: CheckResult) -> None:
    if spec.provider == "alicloud" and spec.lifecycle.ttl_delta < ALICLOUD_MIN_TTL:
        floor = format_duration(ALICLOUD_MIN_TTL)
        result.problems.append(
            f"lifecycle.ttl: {spec.lifecycle.ttl} is under {floor} for alicloud: Alibaba refuses an auto-release "
            f"time sooner than {format_duration(AUTO_RELEASE_MIN_LEAD)} ahead and gpuctl keeps a "
            f"{format_duration(CREATE_MARGIN)} margin for creating the network first; set lifecycle.ttl: "
            f"{floor} or more"
        )
    if spec.lifecycle.ttl_delta > LONG_TTL and spec.provider != "local":
        result.warnings.append(
            f"lifecycle.ttl: {spec.lifecycle.ttl} is longer than a day; a forgotten GPU cluster bills until then"
        )
    admin = ipaddress.ip_network(spec.network.admin_cidr)
    if spec.provider != "local" and any(admin.subnet_of(doc) for doc in DOCUMENTATION_RANGES  # type: ignore[arg-type]
                                        if doc.version == admin.version):
        result.warnings.append(
            f"network.admin_cidr: {spec.network.admin_cidr} is a documentation range (RFC 5737/3849): nobody "
            "can SSH in from it; set your office or VPN range"
        )
    if spec.network.allow_world_ssh:
        result.warnings.append(
            f"network.admin_cidr: {spec.network.admin_cidr} with allow_world_ssh: SSH is open to the whole internet"
        )
    if spec.provider != "local" and spec.lifecycle.idle_stop_minutes is None:
        result.warnings.append("lifecycle.idle_stop_minutes is not set: idle GPUs keep billing until the TTL")


def _check_nccl_names(spec: ClusterSpec, result: CheckResult) -> None:
    """An nccl_overrides key one typo away from an NCCL variable gpuctl knows is most likely that
    variable misspelt: warn (NCCL ignores a variable it does not know, silently)."""
    for name in spec.nccl_overrides:
        problem = hints.unknown_nccl_variable(name)
        if problem is not None:
            result.warnings.append(f"nccl_overrides.{name}: {problem} (written as given)")
