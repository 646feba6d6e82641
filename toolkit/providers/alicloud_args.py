"""The typed arguments of the Alibaba Cloud component, computed from a ClusterSpec and the catalog.

Pure: no Pulumi, no cloud. Everything the Pulumi program decides (billing arguments, release time,
how many ERIs, which image lookup, tags) is decided here, so it can be tested with literal values
and read by `plan` without building a program.
"""

from __future__ import annotations

import getpass
import ipaddress
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from toolkit import hints
from toolkit.catalog.models import Catalog, InstanceType
from toolkit.errors import CatalogError, SpecError, UsageError
from toolkit.spec.models import ClusterSpec, Fabric, NodePool

# Alibaba refuses an AutoReleaseTime sooner than 30 minutes after the API call (ModifyInstance-
# AutoReleaseTime / RunInstances docs). The call comes some minutes after the program is built
# (VPC, vSwitch and security group first), so gpuctl keeps a margin on top.
AUTO_RELEASE_MIN_LEAD = timedelta(minutes=30)
CREATE_MARGIN = timedelta(minutes=10)
RELEASE_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # yyyy-MM-ddTHH:mm:ssZ, UTC, as the ECS API wants it

# Tags gpuctl writes on every resource that takes tags (the reaper and `down` look for them).
TAG_CLUSTER = "gpuctl:cluster"
# The cluster's unique id, made by the first `gpuctl up` and kept in the stack's config: two clusters
# of the same name (two teams, two backends) differ by it, so `down` never takes another's resources.
TAG_CLUSTER_ID = "gpuctl:cluster-id"
TAG_OWNER = "gpuctl:owner"
TAG_EXPIRES = "gpuctl:expires"
TAG_MANAGED_BY = "gpuctl:managed-by"
CLUSTER_ID_LENGTH = 12
_CLUSTER_ID = re.compile(r"[0-9a-z][0-9a-z-]{0,63}")

# Image aliases -> a name pattern of Alibaba's public (owners=system) images. Image names look like
# `ubuntu_22_04_x64_20G_alibase_20240220.vhd` and `aliyun_3_x64_20G_alibase_20240528.vhd`.
IMAGE_PATTERNS: dict[str, str] = {
    "ubuntu_22_04": r"^ubuntu_22_04_x64",
    "ubuntu_24_04": r"^ubuntu_24_04_x64",
    "alinux_3": r"^aliyun_3_(\d+_)?x64",
}
IMAGE_ID_PREFIX = "m-"

PUBLIC_BANDWIDTH_MBPS = 100  # pay-by-traffic: the cap costs nothing by itself
JUMBO_MTU_ABOVE = 1500

ChargeType = Literal["PostPaid", "PrePaid"]
SpotStrategy = Literal["SpotWithPriceLimit", "SpotAsPriceGo"]


@dataclass(frozen=True)
class ImageRef:
    """Either a fixed image id, or a lookup among the region's public images."""

    image_id: str | None = None
    name_regex: str | None = None
    owners: str = "system"

    @property
    def key(self) -> str:
        return self.image_id or f"{self.owners}:{self.name_regex}"


@dataclass(frozen=True)
class BillingArgs:
    instance_charge_type: ChargeType
    spot_strategy: SpotStrategy | None = None
    spot_price_limit: float | None = None
    period: int | None = None
    period_unit: Literal["Month"] | None = None
    auto_release_time: str | None = None  # None for monthly (PrePaid) instances


@dataclass(frozen=True)
class PoolArgs:
    name: str
    instance_type: str
    count: int
    image: ImageRef
    system_disk_category: str
    system_disk_size_gb: int
    billing: BillingArgs
    eri_count: int  # ERIs per node, the primary included; 0 when the fabric is not erdma
    # Physical network cards of the type where the catalog knows more than one: ERIs are spread
    # over their card indexes (ebmgn7ex reaches 160 Gbit/s only with one ERI per card).
    network_cards: int | None = None
    queue_pair_number: int | None = None  # None: the cloud's default for the type
    jumbo_frames: bool = False

    def hostnames(self, cluster: str) -> list[str]:
        return [node_name(cluster, self.name, index) for index in range(self.count)]

    @property
    def secondary_eri_count(self) -> int:
        return max(self.eri_count - 1, 0)

    def network_card_index(self, eri_index: int) -> int | None:
        """Card index for ERI `eri_index` (0 = primary); None where the type has one card."""
        if self.network_cards is None or self.network_cards < 2:
            return None
        return eri_index % self.network_cards


@dataclass(frozen=True)
class GpuClusterArgs:
    cluster: str
    region: str
    zone: str
    fabric: Fabric
    mtu: int
    vpc_cidr: str
    subnet_cidr: str
    admin_cidr: str
    allow_world_ssh: bool
    public_ip: bool
    public_key: str
    created_at: str  # the anchor of the release time, UTC, RELEASE_TIME_FORMAT
    expires_at: str
    cluster_id: str | None = None  # None only where no stack holds one (bench, plan); tagged when set
    tags: dict[str, str] = field(default_factory=dict)
    pools: tuple[PoolArgs, ...] = ()

    @property
    def subnet_prefixlen(self) -> int:
        return ipaddress.ip_network(self.subnet_cidr).prefixlen

    @property
    def node_count(self) -> int:
        return sum(pool.count for pool in self.pools)

    @classmethod
    def from_spec(
        cls,
        spec: ClusterSpec,
        catalog: Catalog,
        *,
        now: datetime,
        created_at: datetime | None = None,
        public_key: str | None = None,
        cluster_id: str | None = None,
    ) -> GpuClusterArgs:
        """Compute the component's arguments; refuse (CatalogError) what Alibaba cannot build.

        `created_at` anchors the release time and expiry tag; it is pinned on the first `up` so a
        second `up` changes nothing. `now` is the real time, used only to check that the release
        time is still far enough ahead to be accepted. `cluster_id` (made by the first `up`, kept
        in the stack's config) goes on every taggable resource as `gpuctl:cluster-id`.
        """
        if spec.provider != "alicloud":
            raise UsageError(f"spec {spec.name} is for provider {spec.provider}, not alicloud")
        assert spec.region is not None  # ClusterSpec requires region and zone for clouds
        assert spec.zone is not None
        anchor = _utc(created_at or now)
        expires = release_time(anchor, spec.lifecycle.ttl_delta)
        if expires < _utc(now) + AUTO_RELEASE_MIN_LEAD + CREATE_MARGIN:
            raise UsageError(
                f"cluster {spec.name} was created at {anchor:{RELEASE_TIME_FORMAT}} with ttl "
                f"{spec.lifecycle.ttl}; it expires at {expires:{RELEASE_TIME_FORMAT}}, too soon for "
                "Alibaba to accept a release time",
                hint=f"run `{hints.spec_command(spec.name, 'down')}` and start again, or raise lifecycle.ttl",
            )
        pools = tuple(
            _pool_args(spec, pool, catalog, release_at=expires) for pool in spec.node_pools
        )
        return cls(
            cluster=spec.name,
            region=spec.region,
            zone=spec.zone,
            fabric=spec.network.fabric,
            mtu=spec.network.mtu,
            vpc_cidr=spec.network.vpc_cidr,
            subnet_cidr=spec.network.effective_subnet_cidr,
            admin_cidr=spec.network.admin_cidr,
            allow_world_ssh=spec.network.allow_world_ssh,
            public_ip=spec.network.public_ip,
            public_key=public_key if public_key is not None else read_public_key(spec),
            created_at=f"{anchor:{RELEASE_TIME_FORMAT}}",
            expires_at=f"{expires:{RELEASE_TIME_FORMAT}}",
            cluster_id=cluster_id,
            tags=cluster_tags(spec, expires_at=f"{expires:{RELEASE_TIME_FORMAT}}", cluster_id=cluster_id),
            pools=pools,
        )


def node_name(cluster: str, pool: str, index: int) -> str:
    return f"{cluster}-{pool}-{index}"


def release_time(anchor: datetime, ttl: timedelta) -> datetime:
    """anchor + ttl, on a whole minute (rounded up), and never sooner than the API accepts.

    ECS drops the seconds of a release time (it rounds down to the minute), which could bring a
    30-minute TTL under the 30-minute minimum; rounding up keeps the user's TTL as a floor.
    """
    anchor = _utc(anchor)
    release = anchor + max(ttl, AUTO_RELEASE_MIN_LEAD + CREATE_MARGIN)
    if release.second or release.microsecond:
        release = release.replace(second=0, microsecond=0) + timedelta(minutes=1)
    return release


def cluster_tags(spec: ClusterSpec, *, expires_at: str, cluster_id: str | None = None) -> dict[str, str]:
    owner = spec.owner or _local_user()
    tags = {
        **spec.tags,
        TAG_CLUSTER: spec.name,
        TAG_OWNER: owner,
        TAG_EXPIRES: expires_at,
        TAG_MANAGED_BY: "gpuctl",
    }
    if cluster_id is not None:
        tags[TAG_CLUSTER_ID] = check_cluster_id(cluster_id)
    return tags


def new_cluster_id() -> str:
    """A fresh cluster id: 12 hex digits (48 random bits), made once, at the first `up`."""
    return uuid.uuid4().hex[:CLUSTER_ID_LENGTH]


def check_cluster_id(value: str) -> str:
    """A cluster id as gpuctl writes it into tags: [0-9a-z-], 1 to 64 characters."""
    if not _CLUSTER_ID.fullmatch(value):
        raise UsageError(
            f"cluster id {value!r} is not usable as a tag value",
            hint="a cluster id is 1-64 characters of a-z, 0-9 and '-' (gpuctl makes 12 hex digits)",
        )
    return value


def read_public_key(spec: ClusterSpec) -> str:
    path = spec.ssh.public_key
    if path is None:
        raise SpecError([f"{spec.name}: ssh.public_key is required for provider alicloud"])
    from toolkit.spec.files import MAX_PUBLIC_KEY_BYTES, read_small_file

    hint = "give the path of your .pub file, e.g. ~/.ssh/id_ed25519.pub"
    try:
        # A regular file of bounded size only: /dev/zero, a FIFO or a directory is refused, not read.
        raw = read_small_file(Path(path), limit=MAX_PUBLIC_KEY_BYTES, what="public key file (.pub)", hint=hint)
    except SpecError as error:
        raise SpecError([f"ssh.public_key: {problem}" for problem in error.problems], hint=hint) from None
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise SpecError([f"ssh.public_key: {path}: is not UTF-8 text, not an OpenSSH public key"], hint=hint) from None
    if not text.startswith(("ssh-", "ecdsa-", "sk-")) or "PRIVATE KEY" in text:
        raise SpecError(
            [f"ssh.public_key: {path}: is not an OpenSSH public key (ssh-ed25519 / ssh-rsa ...)"],
            hint="point it at the .pub file, never at the private key",
        )
    if any(not (char.isprintable() or char == " ") for char in text):
        # The key goes into the cloud's key pair and authorized_keys: one key, one line.
        raise SpecError(
            [f"ssh.public_key: {path}: holds more than one line or control characters; one OpenSSH key per file"],
            hint=hint,
        )
    return text


def image_ref(image: str) -> ImageRef:
    if image.startswith(IMAGE_ID_PREFIX):
        return ImageRef(image_id=image)
    pattern = IMAGE_PATTERNS.get(image)
    if pattern is None:
        known = ", ".join(sorted(IMAGE_PATTERNS))
        raise CatalogError(
            [f"image '{image}' is not available on Alibaba Cloud through gpuctl"],
            hint=f"use one of {known}, or an image id (m-...) from your region",
        )
    return ImageRef(name_regex=pattern)


def billing_args(pool: NodePool, *, release_at: datetime) -> BillingArgs:
    billing = pool.billing
    release = f"{release_at:{RELEASE_TIME_FORMAT}}"
    if billing.mode == "monthly":
        assert billing.months is not None  # Billing checks this
        return BillingArgs(instance_charge_type="PrePaid", period=billing.months, period_unit="Month")
    if billing.mode == "spot":
        if billing.spot_max_price_per_hour is not None:
            # ECS accepts three decimals at most.
            limit = round(billing.spot_max_price_per_hour, 3)
            return BillingArgs(
                instance_charge_type="PostPaid", spot_strategy="SpotWithPriceLimit",
                spot_price_limit=limit, auto_release_time=release,
            )
        return BillingArgs(
            instance_charge_type="PostPaid", spot_strategy="SpotAsPriceGo", auto_release_time=release,
        )
    return BillingArgs(instance_charge_type="PostPaid", auto_release_time=release)


def eri_count(spec: ClusterSpec, pool: NodePool, row: InstanceType) -> int:
    """ERIs per node for this pool: all the type supports when the fabric is erdma, else none.

    How many: `InstanceType.eris_per_node`, the rule `gpuctl plan` shows too.
    """
    if spec.network.fabric != "erdma":
        return 0
    rdma = row.rdma
    if rdma is None or rdma.kind != "erdma" or rdma.eri_quantity == 0:
        raise CatalogError(
            [
                f"node pool {pool.name}: {pool.instance_type} has no eRDMA (no ERI) according to the "
                "catalog, but network.fabric is erdma"
            ],
            hint=f"pick a type with eRDMA (`{hints.command('catalog', 'alicloud', '--fabric', 'erdma')}`) "
            "or set network.fabric: tcp",
        )
    return row.eris_per_node()[0]


def _pool_args(spec: ClusterSpec, pool: NodePool, catalog: Catalog, *, release_at: datetime) -> PoolArgs:
    row = catalog.find(pool.instance_type)
    if row is None:
        raise CatalogError(
            [f"node pool {pool.name}: instance type {pool.instance_type} is not in the alicloud catalog"],
            hint="check the spelling (ecs.<family>.<size>) or list types with "
            f"`{hints.command('catalog', 'alicloud')}`",
        )
    return PoolArgs(
        name=pool.name,
        instance_type=pool.instance_type,
        count=pool.count,
        image=image_ref(pool.image),
        system_disk_category=pool.system_disk.category,
        system_disk_size_gb=pool.system_disk.size_gb,
        billing=billing_args(pool, release_at=release_at),
        eri_count=eri_count(spec, pool, row),
        network_cards=row.rdma.nics if row.rdma is not None and spec.network.fabric == "erdma" else None,
        # Sent only where the catalog says the type carries jumbo frames; elsewhere the type's
        # default stands and configure checks the MTU the path really carries.
        jumbo_frames=spec.network.mtu > JUMBO_MTU_ABOVE and (row.max_mtu or 0) > JUMBO_MTU_ABOVE,
    )


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError("times given to gpuctl's Alibaba program must carry a time zone")
    return moment.astimezone(UTC)


def _local_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
