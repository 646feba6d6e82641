"""The typed arguments of the Alibaba Cloud component, computed from a ClusterSpec and the catalog.

Pure: no Pulumi, no cloud. Everything the Pulumi program decides (billing arguments, release time,
how many ERIs, which image lookup, tags) is decided here, so it can be tested with literal values
and read by `plan` without building a program.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from toolkit import hints
from toolkit.catalog.models import Catalog, InstanceType
from toolkit.errors import CatalogError, UsageError
from toolkit.images.store import BAKED_PREFIX, refuse_on_cloud
from toolkit.prices.currency import ExchangeRate
from toolkit.providers.alicloud.site import ceiling_for_spec
from toolkit.providers.base import node_name
from toolkit.providers.tags import (  # noqa: F401  (re-exported: the Alibaba modules' one import)
    CLUSTER_ID_LENGTH,
    TAG_CLUSTER,
    TAG_CLUSTER_ID,
    TAG_EXPIRES,
    TAG_MANAGED_BY,
    TAG_OWNER,
    check_cluster_id,
    cluster_tags,
    default_owner,
    expiry_time,
    new_cluster_id,
    utc,
)
from toolkit.spec.files import read_public_key
from toolkit.spec.models import ClusterSpec, Fabric, NodePool

# Alibaba refuses an AutoReleaseTime sooner than 30 minutes after the API call (ModifyInstance-
# AutoReleaseTime / RunInstances docs). The call comes some minutes after the program is built
# (VPC, vSwitch and security group first), so gpuctl keeps a margin on top.
AUTO_RELEASE_MIN_LEAD = timedelta(minutes=30)
CREATE_MARGIN = timedelta(minutes=10)
RELEASE_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # yyyy-MM-ddTHH:mm:ssZ, UTC, as the ECS API wants it

# Image aliases -> the whole name of Alibaba's public (owners=system) images, anchored at both ends:
# `<os>_<version>_x64_20G_alibase_<yyyymmdd>.vhd`. Alibaba publishes variants beside each image whose
# names start the same way (a GPU-driver build `ubuntu_22_04_x64_100G_with_gpu_driver_and_cuda_alibase_...`,
# `aliyun_3_x64_20G_qboot_alibase_...`, `_scc_`, `_dengbao_`, `_container_optimized_`), and
# `most_recent` would take whichever is newest, so a prefix is not enough. Names as the ECS API lists
# them: `aliyun_3_x64_20G_alibase_20240819.vhd` (aliyun/terraform-provider-alicloud@v1.289.0:
# alicloud/resource_alicloud_cs_kubernetes_test.go:240), `aliyun_3_9_x64_20G_alibase_20231219.vhd`
# (…@v1.289.0:alicloud/resource_alicloud_ess_scaling_configuration_test.go:904),
# `aliyun_3_x64_20G_container_optimized_alibase_20251215.vhd` (a variant, same repository); the Ubuntu
# forms `ubuntu_22_04_x64_20G_alibase_20240322.vhd` and `ubuntu_22_04_uefi_x64_20G_alibase_20230515.vhd`
# from a public DescribeImages listing of us-east-1 (2024-03) and public Terraform code, read
# 2026-12-01 (no Alibaba page lists image names; docs/alicloud.md "verified only on paper").
IMAGE_DATE = r"_alibase_\d{8}\.vhd$"
IMAGE_PATTERNS: dict[str, str] = {
    "ubuntu_22_04": r"^ubuntu_22_04_x64_20G" + IMAGE_DATE,
    "ubuntu_24_04": r"^ubuntu_24_04_x64_20G" + IMAGE_DATE,
    "alinux_3": r"^aliyun_3_(\d+_)?x64_20G" + IMAGE_DATE,
}
# Bare-metal GPU types whose family page says "images must boot in UEFI mode" (the catalog rows'
# notes: ebmgn7ex, ebmgn7ix, ebmgn8is, ebmgn8v). Alibaba publishes UEFI builds of its public images:
# Ubuntu as `ubuntu_22_04_uefi_x64_20G_alibase_<date>.vhd`, Alibaba Cloud Linux 3 as
# `aliyun_3_9_x64_20G_uefi_alibase_<date>.vhd` (the uefi mark after the size; same listing as above).
UEFI_FAMILIES = frozenset({"ebmgn7ex", "ebmgn7ix", "ebmgn8is", "ebmgn8v"})
UEFI_IMAGE_PATTERNS: dict[str, str] = {
    "ubuntu_22_04": r"^ubuntu_22_04_uefi_x64_20G" + IMAGE_DATE,
    "ubuntu_24_04": r"^ubuntu_24_04_uefi_x64_20G" + IMAGE_DATE,
    "alinux_3": r"^aliyun_3_(\d+_)?x64_20G_uefi" + IMAGE_DATE,
}
IMAGE_ID_PREFIX = "m-"

PUBLIC_BANDWIDTH_MBPS = 100  # pay-by-traffic: the cap costs nothing by itself
JUMBO_MTU_ABOVE = 1500
# What the VPC carries where jumbo frames are not enabled. eRDMA: Alibaba's "Configure eRDMA on GPU
# instances" page says the MTU must be 1400 without jumbo frames
# (https://www.alibabacloud.com/help/id/ecs/user-guide/on-the-gpu-instance-configuration-erdma);
# TCP: the VPC's standard 1500.
ERDMA_MTU_WITHOUT_JUMBO = 1400
STANDARD_MTU = 1500

# Create/delete timeouts. pulumi-alicloud's defaults (terraform-provider-alicloud
# resource_alicloud_instance.go: create 10 min, delete 20 min; ENI attachments a few minutes) are
# shorter than a bare-metal GPU host takes to boot and to attach its ERIs. gpuctl's documented default
# for the catalog's `bare_metal: true` rows (the ebm* families); other types keep the provider's.
BARE_METAL_INSTANCE_TIMEOUTS = ("40m", "40m")  # (create, delete)
BARE_METAL_ATTACHMENT_TIMEOUTS = ("15m", "15m")

# RunInstances Period with PeriodUnit=Month: 1-9, 12, 24, 36, 48, 60 (pulumi-alicloud 4.0.0
# ecs.Instance `period` docstring, from the RunInstances API reference
# https://www.alibabacloud.com/help/en/ecs/developer-reference/api-runinstances).
PREPAID_MONTHS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 24, 36, 48, 60)

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
    spot_price_limit: float | None = None  # in the account's currency (site.py): what RunInstances reads
    spot_price_currency: str | None = None
    period: int | None = None
    period_unit: Literal["Month"] | None = None
    auto_release_time: str | None = None  # None for monthly (PrePaid) instances
    # PrePaid instances cannot be deleted unless `force_delete` is set (pulumi-alicloud ecs.Instance:
    # "If it is true, the PrePaid instance will be change to PostPaid and then deleted forcibly").
    force_delete: bool | None = None


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
    bare_metal: bool = False  # the catalog's bare_metal: longer create/delete timeouts
    uefi: bool = False  # the family boots UEFI images only (UEFI_FAMILIES)

    @property
    def instance_timeouts(self) -> tuple[str, str] | None:
        return BARE_METAL_INSTANCE_TIMEOUTS if self.bare_metal else None

    @property
    def attachment_timeouts(self) -> tuple[str, str] | None:
        return BARE_METAL_ATTACHMENT_TIMEOUTS if self.bare_metal else None

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
class InstanceRoleArgs:
    """The RAM role every instance of the cluster carries (docs/lifecycle.md, roles.py builds it).

    The node-side lifecycle agent signs StopInstance/DeleteInstance with it, and ossfs mounts the
    object volumes with it (`ram_role=`): no key is ever copied to a node.
    """

    name: str  # the role's and its policy's name
    cluster_id: str  # the policy allows acting only on instances tagged with it
    stop_instances: bool  # the spec asks for the agent: the node may stop or release itself
    buckets: tuple[str, ...] = ()  # the object volumes' OSS buckets: read and write


def instance_role_args(spec: ClusterSpec, cluster_id: str | None) -> InstanceRoleArgs | None:
    """The instance role, where the spec needs one: the lifecycle agent or an object volume.

    None without a cluster id (bench, plan): the policy's condition is the cluster id tag, and a
    role without it could stop any gpuctl node of the account. gpuctl's `up` and the stack folder
    always have one.
    """
    if cluster_id is None or not needs_instance_role(spec):
        return None
    return InstanceRoleArgs(
        name=instance_role_name(spec.name, cluster_id), cluster_id=check_cluster_id(cluster_id),
        stop_instances=spec.lifecycle.agent_wanted, buckets=object_buckets(spec),
    )


def needs_instance_role(spec: ClusterSpec) -> bool:
    return spec.lifecycle.agent_wanted or bool(object_buckets(spec))


def object_buckets(spec: ClusterSpec) -> tuple[str, ...]:
    return tuple(v.bucket_name(spec.name) for v in spec.storage if v.kind == "object")


def instance_role_name(cluster: str, cluster_id: str | None) -> str:
    """`gpuctl-<cluster>-<cluster id>-node`: RAM role names are unique per account, so two clusters
    of the same name must not share one (at most 57 characters; RAM allows 64)."""
    if cluster_id is None:
        return f"gpuctl-{cluster}-node"
    return f"gpuctl-{cluster}-{cluster_id}-node"


@dataclass(frozen=True)
class GpuClusterArgs:
    cluster: str
    region: str
    zone: str
    fabric: Fabric
    mtu: int  # what the cloud will carry: the spec's MTU only where every pool has jumbo frames
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
    requested_mtu: int | None = None  # the spec's network.mtu, where it differs from `mtu`
    instance_role: InstanceRoleArgs | None = None  # the RAM role the instances carry; None: no role

    @property
    def key_pair_name(self) -> str:
        """Key pair names are unique per region: two clusters of the same name (two teams) would
        collide on `<cluster>-key`, so the cluster id is part of it where there is one."""
        if self.cluster_id is None:
            return f"{self.cluster}-key"
        return f"{self.cluster}-{self.cluster_id}-key"

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
        owner: str | None = None,
        env: Mapping[str, str] | None = None,
        rate: ExchangeRate | None = None,
    ) -> GpuClusterArgs:
        """Compute the component's arguments; refuse (CatalogError) what Alibaba cannot build.

        `created_at` anchors the release time and expiry tag; it is pinned on the first `up` so a
        second `up` changes nothing. `now` is the real time, used only to check that the release
        time is still far enough ahead to be accepted. `cluster_id` (made by the first `up`, kept
        in the stack's config) goes on every taggable resource as `gpuctl:cluster-id`. `owner`
        (pinned in the stack's config at the first `up`) wins over the spec's and the local user.
        A spot ceiling is sent in the account's currency: `env`'s ALIBABA_CLOUD_ACCOUNT_TYPE says which
        (site.py; the process environment when not given), `rate` converts (the user's when not given);
        without the account type a ceiling is refused (MissingToolError), never sent in a guessed currency.
        """
        if spec.provider != "alicloud":
            raise UsageError(f"spec {spec.name} is for provider {spec.provider}, not alicloud")
        assert spec.region is not None  # ClusterSpec requires region and zone for clouds
        assert spec.zone is not None
        anchor = utc(created_at or now)
        expires = release_time(anchor, spec.lifecycle.ttl_delta)
        if expires < utc(now) + AUTO_RELEASE_MIN_LEAD + CREATE_MARGIN:
            raise UsageError(
                f"cluster {spec.name} was created at {anchor:{RELEASE_TIME_FORMAT}} with ttl "
                f"{spec.lifecycle.ttl}; it expires at {expires:{RELEASE_TIME_FORMAT}}, too soon for "
                "Alibaba to accept a release time",
                hint=f"run `{hints.spec_command(spec.name, 'down')}` and start again, or raise lifecycle.ttl",
            )
        pools = tuple(
            _pool_args(spec, pool, catalog, release_at=expires, env=env, rate=rate) for pool in spec.node_pools
        )
        mtu = effective_mtu(spec, pools)
        return cls(
            cluster=spec.name,
            region=spec.region,
            zone=spec.zone,
            fabric=spec.network.fabric,
            mtu=mtu,
            requested_mtu=spec.network.mtu if mtu != spec.network.mtu else None,
            vpc_cidr=spec.network.vpc_cidr,
            subnet_cidr=spec.network.effective_subnet_cidr,
            admin_cidr=spec.network.admin_cidr,
            allow_world_ssh=spec.network.allow_world_ssh,
            public_ip=spec.network.public_ip,
            public_key=public_key if public_key is not None else read_public_key(spec),
            created_at=f"{anchor:{RELEASE_TIME_FORMAT}}",
            expires_at=f"{expires:{RELEASE_TIME_FORMAT}}",
            cluster_id=cluster_id,
            tags=cluster_tags(
                spec, expires_at=f"{expires:{RELEASE_TIME_FORMAT}}", cluster_id=cluster_id, owner=owner
            ),
            pools=pools,
            instance_role=instance_role_args(spec, cluster_id),
        )


def release_time(anchor: datetime, ttl: timedelta) -> datetime:
    """anchor + ttl, on a whole minute (rounded up), and never sooner than the API accepts.

    ECS drops the seconds of a release time (it rounds down to the minute), which could bring a
    30-minute TTL under the 30-minute minimum; rounding up keeps the user's TTL as a floor.
    """
    return expiry_time(anchor, max(ttl, AUTO_RELEASE_MIN_LEAD + CREATE_MARGIN))


def effective_mtu(spec: ClusterSpec, pools: tuple[PoolArgs, ...]) -> int:
    """The MTU the cloud will carry between the nodes, which is what gpuctl exports and configures.

    The spec's MTU where it is standard (<= 1500) or where every pool has jumbo frames enabled;
    otherwise 1400 for eRDMA (Alibaba's eRDMA page: 1400 without jumbo frames) and 1500 for TCP.
    Never a jumbo MTU on an interface whose jumbo frames were not enabled.
    """
    mtu = spec.network.mtu
    if mtu <= JUMBO_MTU_ABOVE or all(pool.jumbo_frames for pool in pools):
        return mtu
    return ERDMA_MTU_WITHOUT_JUMBO if spec.network.fabric == "erdma" else STANDARD_MTU


def image_ref(image: str, *, uefi: bool = False) -> ImageRef:
    if image.startswith(IMAGE_ID_PREFIX):
        return ImageRef(image_id=image)
    pattern = (UEFI_IMAGE_PATTERNS if uefi else IMAGE_PATTERNS).get(image)
    if pattern is None and image.startswith(BAKED_PREFIX):
        refuse_on_cloud(image, "Alibaba Cloud", "m-...")
    if pattern is None:
        known = ", ".join(sorted(IMAGE_PATTERNS))
        raise CatalogError(
            [f"image '{image}' is not available on Alibaba Cloud through gpuctl"],
            hint=f"use one of {known}, or an image id (m-...) from your region",
        )
    return ImageRef(name_regex=pattern)


def billing_args(pool: NodePool, *, release_at: datetime, env: Mapping[str, str] | None = None,
                 rate: ExchangeRate | None = None) -> BillingArgs:
    billing = pool.billing
    release = f"{release_at:{RELEASE_TIME_FORMAT}}"
    if billing.mode == "monthly":
        assert billing.months is not None  # Billing checks this
        if billing.months not in PREPAID_MONTHS:
            raise CatalogError(
                [f"node pool {pool.name}: billing.months: {billing.months} is not a subscription length Alibaba "
                 f"sells; RunInstances takes {', '.join(map(str, PREPAID_MONTHS))} months"],
                hint="set billing.months to one of those",
            )
        return BillingArgs(
            instance_charge_type="PrePaid", period=billing.months, period_unit="Month", force_delete=True
        )
    if billing.mode == "spot":
        if billing.spot_max_price_per_hour is not None:
            # In the account's currency, three decimals at most, never above the spec's ceiling (site.py).
            ceiling = ceiling_for_spec(billing.spot_max_price_per_hour, env, rate)
            return BillingArgs(
                instance_charge_type="PostPaid", spot_strategy="SpotWithPriceLimit",
                spot_price_limit=ceiling.value, spot_price_currency=ceiling.currency, auto_release_time=release,
            )
        return BillingArgs(
            instance_charge_type="PostPaid", spot_strategy="SpotAsPriceGo", auto_release_time=release,
        )
    return BillingArgs(instance_charge_type="PostPaid", auto_release_time=release)


def eri_count(spec: ClusterSpec, pool: NodePool, row: InstanceType) -> int:
    """ERIs per node for this pool: all the type supports when the fabric is erdma, else none.

    How many: `eris_per_node` below.
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
    return eris_per_node(row)


def eris_per_node(row: InstanceType) -> int:
    """The catalog's one answer (`InstanceType.eris_per_node`): one ERI per network card, capped by
    the type's ERI quota."""
    return row.eris_per_node()[0]


def _pool_args(spec: ClusterSpec, pool: NodePool, catalog: Catalog, *, release_at: datetime,
               env: Mapping[str, str] | None, rate: ExchangeRate | None) -> PoolArgs:
    row = catalog.find(pool.instance_type)
    if row is None:
        raise CatalogError(
            [f"node pool {pool.name}: instance type {pool.instance_type} is not in the alicloud catalog"],
            hint="check the spelling (ecs.<family>.<size>) or list types with "
            f"`{hints.command('catalog', 'alicloud')}`",
        )
    uefi = row.family in UEFI_FAMILIES
    return PoolArgs(
        name=pool.name,
        instance_type=pool.instance_type,
        count=pool.count,
        image=image_ref(pool.image, uefi=uefi),
        system_disk_category=pool.system_disk.category,
        system_disk_size_gb=pool.system_disk.size_gb,
        billing=billing_args(pool, release_at=release_at, env=env, rate=rate),
        eri_count=eri_count(spec, pool, row),
        network_cards=row.rdma.nics if row.rdma is not None and spec.network.fabric == "erdma" else None,
        # Sent only where the catalog says the type carries jumbo frames; elsewhere the type's
        # default stands and configure checks the MTU the path really carries.
        jumbo_frames=spec.network.mtu > JUMBO_MTU_ABOVE and (row.max_mtu or 0) > JUMBO_MTU_ABOVE,
        bare_metal=row.bare_metal,
        uefi=uefi,
    )
