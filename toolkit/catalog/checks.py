"""Checks that need the catalog: does the cloud sell what the spec asks for, and is it wise.

`check_spec` returns refusals (problems) and warnings separately: a problem stops `validate`,
`plan` and `up`; a warning is printed and the user decides. Checks are pure: they read the spec and
the catalog, and the spec's key file, nothing else.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from toolkit import hints
from toolkit.catalog.models import Catalog, InstanceType
from toolkit.catalog.names import nearest
from toolkit.catalog.result import CheckResult
from toolkit.catalog.store import load_catalog
from toolkit.errors import SpecError
from toolkit.spec.files import MAX_PUBLIC_KEY_BYTES, read_small_file
from toolkit.spec.models import ClusterSpec, NodePool

LONG_TTL = timedelta(hours=24)
STANDARD_MTU = 1500


@dataclass(frozen=True)
class CloudRules:
    """What the shared cloud checks need to know of one cloud; each cloud's package gives its own
    (`toolkit/providers/<cloud>/`), so this module names no provider.

    A row hook (`check_row`) adds the cloud's fabric rules for each pool's catalog row; `check_pools`
    runs after every pool was looked up (limits over the whole cluster).
    """

    label: str  # the cloud as a user reads it: "Alibaba Cloud"
    zone_suffix: Callable[[str], str]  # region id -> regex of what follows it in a zone id
    zone_example: str
    # Images a pool may name: a gpuctl alias the provider's program knows how to look up, or an
    # image id of the provider's own form.
    image_aliases: tuple[str, ...]
    image_id: re.Pattern[str]
    image_id_form: str
    disk_categories: tuple[str, ...]  # system disk categories, spelled as the cloud's API spells them
    max_mtu: int | None = None  # the largest MTU the cloud's network carries, where it is known
    key_types: frozenset[str] | None = None  # OpenSSH key types the cloud imports; None: any
    key_types_refusal: str = ""  # what to say of another key type
    key_command: str = "ssh-keygen -t ed25519"  # makes a key of a type the cloud imports
    # Why an instance type not in the catalog cannot be one of the cloud's names (its name rule, a
    # family given without a size), or None: the cloud's own words, added to the nearest real names.
    explain_type: Callable[[str, Catalog], str | None] | None = None
    check_row: Callable[[ClusterSpec, InstanceType, str, CheckResult], None] | None = None
    check_pools: Callable[[ClusterSpec, CheckResult], None] | None = None
    # The form every instance type name of the cloud has (a name outside it cannot exist), and how to say it.
    type_name: re.Pattern[str] | None = None
    type_name_form: str = ""
    # What the cloud does with a jumbo MTU on a type whose jumbo frames the catalog does not know
    # (spec, row) -> the one message; None: configure verifies it with a do-not-fragment ping.
    jumbo_unknown: Callable[[ClusterSpec, InstanceType], str] | None = None


def check_spec(spec: ClusterSpec, *, source: str = "<spec>") -> CheckResult:
    from toolkit.providers.registry import get_provider

    result = CheckResult()
    provider = get_provider(spec.provider)
    provider.check_catalog(spec, result)
    _check_lifecycle_and_access(spec, result, paid=provider.paid)
    if spec.software.tccl and spec.provider != "tencentcloud":
        result.problems.append(f"software.tccl: TCCL is Tencent Cloud's library for its HCC network; provider "
                               f"{spec.provider} cannot use it: remove software.tccl")
    if not provider.drivable:
        result.warnings.append(
            f"provider: gpuctl cannot create {spec.provider} resources yet: validate and plan work, "
            "`up` refuses"
        )
    _check_nccl_names(spec, result)
    # Each message names the spec so a user running validate on several files knows which one; one
    # thing said once (two pools of one type would otherwise repeat the type's MTU warning).
    result.problems = [f"{source}: {p}" for p in dict.fromkeys(result.problems)]
    result.warnings = [f"{source}: {w}" for w in dict.fromkeys(result.warnings)]
    return result


def check_cloud(spec: ClusterSpec, result: CheckResult, rules: CloudRules) -> None:
    """The checks every cloud shares, in this order: zone, each pool (image, disk, catalog row,
    fabric, MTU, billing), the cloud's whole-cluster limits, the public key."""
    catalog = load_catalog(spec.provider)
    _check_zone(spec, rules, result)
    for index, pool in enumerate(spec.node_pools):
        where = f"node_pools[{index}] ({pool.name})"
        _check_image(spec, pool, rules, where, result)
        _check_disk(spec, pool, rules, where, result)
        row = catalog.find(pool.instance_type)
        if row is None:
            result.problems.append(_unknown_type(spec, catalog, pool, where, rules))
            continue
        result.rows[pool.name] = row
        _check_row_disk(pool, row, rules, where, result)
        _check_fabric(spec, row, rules, where, result)
        _check_mtu(spec, row, rules, where, result)
        _check_billing(spec, pool, row, where, result)
    if rules.check_pools is not None:
        rules.check_pools(spec, result)
    _check_key(spec, rules, result)


def _check_zone(spec: ClusterSpec, rules: CloudRules, result: CheckResult) -> None:
    region, zone = spec.region, spec.zone
    if region is None or zone is None:  # ClusterSpec requires both for a cloud
        return
    if not re.fullmatch(re.escape(region) + rules.zone_suffix(region), zone):
        result.problems.append(
            f"zone: {zone} is not a zone of region {region}; {spec.provider} zone ids are the region id "
            f"and a zone suffix, e.g. {rules.zone_example}: set zone to one in {region} "
            "or region to the zone's region"
        )


def _check_image(spec: ClusterSpec, pool: NodePool, rules: CloudRules, where: str, result: CheckResult) -> None:
    if pool.gpu_stack == "image" and pool.image in rules.image_aliases:
        # gpuctl's aliases name the clouds' plain OS images (providers/*/args.py IMAGE_PATTERNS).
        result.problems.append(
            f"{where}.gpu_stack: image says the image carries the GPU driver, but '{pool.image}' is gpuctl's name "
            f"for {spec.provider}'s plain OS image, which has none; set {where}.image to the id of an image that "
            f"carries it ({rules.image_id_form}: a GPU image of the cloud's, or one you made) or gpu_stack: install"
        )
        return
    if pool.image in rules.image_aliases or rules.image_id.fullmatch(pool.image):
        return
    result.problems.append(
        f"{where}.image: '{pool.image}' is neither an image gpuctl knows for {spec.provider} "
        f"({', '.join(rules.image_aliases)}) nor an image id of the form {rules.image_id_form}; use one of those"
    )


def _check_disk(spec: ClusterSpec, pool: NodePool, rules: CloudRules, where: str, result: CheckResult) -> None:
    categories = rules.disk_categories
    category = pool.system_disk.category
    if category in categories:
        return
    if "category" not in pool.system_disk.model_fields_set:
        return  # the default (cloud_essd) is Alibaba's name; a cloud without it chooses its own
    close = nearest(category, categories, limit=1)
    hint = f"did you mean {close[0]}? " if close else ""
    result.problems.append(
        f"{where}.system_disk.category: '{category}' is not a system disk category of {spec.provider}; "
        f"{hint}use one of {', '.join(categories)}"
    )


def _check_row_disk(pool: NodePool, row: InstanceType, rules: CloudRules, where: str, result: CheckResult) -> None:
    """The system disk against what the type's own source allows (where it states it); a category the
    cloud does not have at all is _check_disk's to refuse."""
    if row.system_disks is None or "category" not in pool.system_disk.model_fields_set:
        return
    category = pool.system_disk.category
    if category in row.system_disks or category not in rules.disk_categories:
        return
    close = nearest(category, row.system_disks, limit=1)
    hint = f"did you mean {close[0]}? " if close else ""
    result.problems.append(
        f"{where}.system_disk.category: {row.name} does not take a {category} system disk ({row.source.url}); "
        f"{hint}use one of {', '.join(row.system_disks)}"
    )


def _unknown_type(spec: ClusterSpec, catalog: Catalog, pool: NodePool, where: str,
                  rules: CloudRules | None = None) -> str:
    names = [row.name for row in catalog.instance_types]
    close = nearest(pool.instance_type, names)
    why = rules.explain_type(pool.instance_type, catalog) if rules and rules.explain_type else None
    if why:  # the cloud said what the name is: only names of the same family are worth offering
        family = pool.instance_type.split(".", 1)[0].lower()
        close = [name for name in close if name.lower().split(".", 1)[0] == family]
    listing = hints.command("catalog", spec.provider)
    hint = f"; did you mean {', '.join(close)}?" if close else ("" if why else f"; `{listing}` lists them")
    if rules is not None and rules.type_name is not None and not rules.type_name.fullmatch(pool.instance_type):
        return (f"{where}.instance_type: '{pool.instance_type}' cannot be an instance type of {rules.label}: their "
                f"names are {rules.type_name_form}{hint}")
    return (
        f"{where}.instance_type: '{pool.instance_type}' is not a GPU instance type gpuctl knows "
        f"for {spec.provider}{f': {why}' if why else ''}{hint}"
    )


def _check_fabric(spec: ClusterSpec, row: InstanceType, rules: CloudRules, where: str, result: CheckResult) -> None:
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
    if rules.check_row is not None:
        rules.check_row(spec, row, where, result)


def no_rdma_nics(row: InstanceType, where: str, fix: str) -> str | None:
    """The problem of a row without RoCE/InfiniBand NICs under fabric rdma (None when it has them)."""
    if row.rdma is not None and row.rdma.kind in ("roce", "ib"):
        return None
    kind = f" (it has {row.rdma.kind})" if row.rdma else ""
    return f"{where}.instance_type: {row.name} has no RoCE/InfiniBand RDMA NICs{kind}; {fix}"


# Alibaba, "Configure eRDMA on GPU instances": with jumbo frames NCCL's LL128 needs MTU 8500;
# without them the MTU must be 1400, and any other MTU risks data consistency problems.
ERDMA_MTU_SOURCE = "https://www.alibabacloud.com/help/id/ecs/user-guide/on-the-gpu-instance-configuration-erdma"
ERDMA_MTUS = (1400, 8500)


def _check_mtu(spec: ClusterSpec, row: InstanceType, rules: CloudRules, where: str, result: CheckResult) -> None:
    mtu = spec.network.mtu
    if spec.network.fabric == "erdma" and mtu not in ERDMA_MTUS:
        result.problems.append(
            f"network.mtu: {mtu} with eRDMA: Alibaba requires 8500 (jumbo frames) or 1400 without them; "
            f"other MTUs risk data consistency problems ({ERDMA_MTU_SOURCE})"
        )
        return
    if rules.max_mtu is not None and mtu > rules.max_mtu:
        result.problems.append(f"network.mtu: {mtu} is above {rules.label}'s jumbo frame size {rules.max_mtu}")
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
            rules.jumbo_unknown(spec, row) if rules.jumbo_unknown is not None else
            f"network.mtu: {mtu}: the catalog does not know whether {row.name} carries jumbo frames; "
            "configure verifies it with a do-not-fragment ping"
        )
    elif row.max_mtu < mtu:
        # eRDMA without jumbo frames runs at 1400, never at the VPC's 1500 (ERDMA_MTU_SOURCE).
        fix = ERDMA_MTUS[0] if spec.network.fabric == "erdma" and row.max_mtu < ERDMA_MTUS[1] else row.max_mtu
        source = f"; {row.max_mtu_source.url}" if row.max_mtu_source is not None else ""
        carried = f"{row.name} carries ({row.max_mtu}: no jumbo frames on {row.family}{source})"
        if "mtu" in spec.network.model_fields_set:  # asked for: refused, never quietly lowered
            result.problems.append(f"network.mtu: {mtu} is larger than {carried}; set network.mtu: {fix}")
        else:  # the default: said once, with what is configured instead
            result.warnings.append(f"network.mtu: not set, and its default {mtu} is larger than {carried}; gpuctl "
                                   f"configures and exports {fix}; set network.mtu: {fix} to say so in the spec")


def _check_billing(spec: ClusterSpec, pool: NodePool, row: InstanceType, where: str, result: CheckResult) -> None:
    billing = pool.billing
    # Only a figure that stands for the spec's region, named with its kind.
    price = row.price_in(spec.region)
    payg = price.pay_as_you_go_per_hour if price else None
    if billing.mode == "spot":
        if billing.spot_max_price_per_hour is None:
            result.warnings.append(
                f"{where}.billing: spot without spot_max_price_per_hour: you pay the market price, up to the "
                "pay-as-you-go price; set a ceiling"
            )
        elif payg is not None and billing.spot_max_price_per_hour > payg:
            result.warnings.append(
                f"{where}.billing.spot_max_price_per_hour: {billing.spot_max_price_per_hour} is above the "
                f"pay-as-you-go price {payg} ({price.kind if price else 'catalog'}); spot will never be cheaper "
                "than that ceiling suggests"
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


def _check_key(spec: ClusterSpec, rules: CloudRules, result: CheckResult) -> None:
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
    elif rules.key_types is not None and text.split()[0] not in rules.key_types:
        result.problems.append(f"ssh.public_key: {key} is a {text.split()[0]} key, {rules.key_types_refusal}; "
                               f"make one with `{rules.key_command}`")
    elif any(text.split()[:2] == example.read_text().split()[:2] for example in EXAMPLE_KEYS):
        result.warnings.append(
            f"ssh.public_key: {key} is the example key shipped in examples/ssh/ (a placeholder: you do not hold "
            "its private key); "
            f"give your own .pub file (`{rules.key_command}` makes one)"
        )


# The example specs' placeholders: keys nobody holds the private half of, and address ranges
# reserved for documentation.
EXAMPLE_KEYS = tuple((Path(__file__).resolve().parents[2] / "examples" / "ssh").glob("example_*.pub"))
# A public admin_cidr wider than this warns (validate refuses wider than /8 outright): a /16 is
# already 65,536 addresses, more than any office or VPN needs.
PUBLIC_ADMIN_WARN_PREFIX = 16
DOCUMENTATION_RANGES = tuple(ipaddress.ip_network(n) for n in
                             ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32"))


def _check_lifecycle_and_access(spec: ClusterSpec, result: CheckResult, *, paid: bool) -> None:
    if spec.lifecycle.ttl_delta > LONG_TTL and paid:
        result.warnings.append(
            f"lifecycle.ttl: {spec.lifecycle.ttl} is longer than a day; a forgotten GPU cluster bills until then"
        )
    admin = ipaddress.ip_network(spec.network.admin_cidr)
    if paid and any(admin.subnet_of(doc) for doc in DOCUMENTATION_RANGES  # type: ignore[arg-type]
                                        if doc.version == admin.version):
        result.warnings.append(
            f"network.admin_cidr: {spec.network.admin_cidr} is a documentation range (RFC 5737/3849): nobody "
            "can SSH in from it; set your office or VPN range"
        )
    wide_public = not admin.is_private and admin.prefixlen < PUBLIC_ADMIN_WARN_PREFIX
    if paid and wide_public and not spec.network.allow_world_ssh:
        result.warnings.append(
            f"network.admin_cidr: {spec.network.admin_cidr} opens SSH to {admin.num_addresses:,} public addresses, "
            f"a range wider than /{PUBLIC_ADMIN_WARN_PREFIX} of someone else's network; an office or VPN range is "
            "a /24 to a /32"
        )
    if spec.network.allow_world_ssh:
        result.warnings.append(
            f"network.admin_cidr: {spec.network.admin_cidr} with allow_world_ssh: SSH is open to the whole internet"
        )
    if paid and spec.lifecycle.idle_stop_minutes is None:
        result.warnings.append("lifecycle.idle_stop_minutes is not set: idle GPUs keep billing until the TTL")


def _check_nccl_names(spec: ClusterSpec, result: CheckResult) -> None:
    """An nccl_overrides key one typo away from an NCCL variable gpuctl knows is most likely that
    variable misspelt, and any other key NCCL does not read is written as a plain value only: warn
    (NCCL ignores a variable it does not know, silently)."""
    from toolkit.tuning.variables import unknown_note

    for name in spec.nccl_overrides:
        typo = hints.unknown_nccl_variable(name)
        note = unknown_note(name)
        if typo is not None:
            result.warnings.append(f"nccl_overrides.{name}: {typo} (written as given)")
        elif note is not None:
            result.warnings.append(f"nccl_overrides.{name}: {note}")
