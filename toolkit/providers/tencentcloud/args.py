"""The typed arguments of the Tencent Cloud component, computed from a ClusterSpec and the catalog.

Pure: no Pulumi, no cloud. Everything the Pulumi program decides (billing arguments, the
ActionTimer's time, whether an HPC cluster is needed, which image lookup, the login user, tags) is
decided here, so it can be tested with literal values and read by `plan` without building a program.

Refusals raise the same error types as the Alibaba arguments: CatalogError (exit 4) for what Tencent
cannot build from this spec, UsageError for a cluster too close to its expiry, SpecError for the key.
`check_fabric` and `check_billing` are the pure checks `validate` can call on their own.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from toolkit import hints
from toolkit.catalog.models import Catalog, InstanceType
from toolkit.errors import CatalogError, UsageError
from toolkit.images.store import BAKED_PREFIX, refuse_on_cloud
from toolkit.providers.base import node_name
from toolkit.providers.tags import check_cluster_id, cluster_tags, expiry_time, utc
from toolkit.spec.files import read_public_key
from toolkit.spec.models import ClusterSpec, Fabric, NodePool

PROVIDER = "tencentcloud"

# ActionTimer (CVM ImportInstancesActionTimer, https://cloud.tencent.com/document/api/213/103949, read
# 2026-12-01): ActionTime "执行时间必须大于当前时间5分钟", the execution time must be more than 5 minutes
# after the current time (the SDK's ActionTimer model, rubydoc tencentcloud-sdk-cvm V20170312::ActionTimer;
# tencentcloud-iac-pulumi's cvm.ActionTimer docstring says the same).
# The timer is created once its instance exists, so the time must also outlast the instance's creation:
# the create timeout of that instance (below) is the latest the call can come.
ACTION_TIMER_MIN_LEAD = timedelta(minutes=5)
ACTION_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # YYYY-MM-DDThh:mm:ssZ, UTC, as ActionTime wants it
TIMER_ACTION = "TerminateInstances"  # the only action ActionTimer takes

# Instance create timeouts. terraform-provider-tencentcloud's tencentcloud_instance declares a 15-minute
# create timeout (and no delete timeout); HCC nodes are bare-metal hosts (the catalog's bare_metal), which
# gpuctl gives the same 40 minutes as Alibaba's bare-metal types: its choice, not a measured boot time.
DEFAULT_CREATE_TIMEOUT = timedelta(minutes=15)
BARE_METAL_CREATE_TIMEOUT = timedelta(minutes=40)

# Image aliases -> a name pattern among Tencent's public images (image_types PUBLIC_IMAGE). Public image
# names as Tencent lists them: "Ubuntu Server 22.04 LTS 64位" (console, China site; "64bit" on the
# international site) and "TencentOS Server 3.1(TK4)" (DescribeImages output seen in public tccli notes,
# e.g. img-487zeit5 / img-eb30mz89). `$` leaves out the "... 64位 UEFI 版" builds of the same release.
IMAGE_PATTERNS: dict[str, str] = {
    "ubuntu_22_04": r"^Ubuntu Server 22\.04 LTS 64(位|bit)$",
    "ubuntu_24_04": r"^Ubuntu Server 24\.04 LTS 64(位|bit)$",
    "tencentos_3": r"^TencentOS Server 3\.\d+ ?\(TK4\)$",
}
IMAGE_ID = re.compile(r"img-[0-9a-z]{6,32}")  # RunInstances ImageId, "形如 img-xxx"
PUBLIC_IMAGE = "PUBLIC_IMAGE"
# The login user of each public image family: Tencent's Ubuntu images log in as `ubuntu` (root login
# is off), TencentOS as root. An image id: root unless the spec's ssh.user says otherwise.
IMAGE_LOGIN_USERS: dict[str, str] = {"ubuntu_22_04": "ubuntu", "ubuntu_24_04": "ubuntu", "tencentos_3": "root"}
DEFAULT_LOGIN_USER = "root"

# Key pair names: "numbers, letters and underscores, at most 25 characters", unique per account
# (ImportKeyPair KeyName, https://cloud.tencent.com/document/api/213/15703).
KEY_NAME_MAX = 25
KEY_NAME_PREFIX = "gpuctl_"
_KEY_NAME = re.compile(r"[0-9A-Za-z_]{1,25}")

PUBLIC_BANDWIDTH_MBPS = 100  # charged by traffic: the cap costs nothing by itself
INTERNET_CHARGE_TYPE = "TRAFFIC_POSTPAID_BY_HOUR"
JUMBO_MTU_ABOVE = 1500
STANDARD_MTU = 1500

# tencentcloud_instance instance_charge_type_prepaid_period: 1-12, 24, 36, 48, 60 months
# (tencentcloud-iac-pulumi 0.2.3 instance.Instance docstring).
PREPAID_MONTHS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 24, 36, 48, 60)
# Never renewed behind the user's back: notify, renew by hand (the provider's default, said explicitly).
PREPAID_RENEW_FLAG = "NOTIFY_AND_MANUAL_RENEW"
# "Type of spot instance, only support ONE-TIME now" (instance.Instance spot_instance_type).
SPOT_INSTANCE_TYPE = "ONE-TIME"

ChargeType = Literal["POSTPAID_BY_HOUR", "SPOTPAID", "PREPAID"]


@dataclass(frozen=True)
class ImageRef:
    """Either a fixed image id, or a lookup among the region's public images."""

    image_id: str | None = None
    name_regex: str | None = None

    @property
    def key(self) -> str:
        return self.image_id or f"{PUBLIC_IMAGE}:{self.name_regex}"


@dataclass(frozen=True)
class BillingArgs:
    instance_charge_type: ChargeType
    spot_instance_type: str | None = None
    spot_max_price: str | None = None  # a decimal string, as the provider wants it
    spot_price_basis: str | None = None  # where the ceiling came from (the spec, or the catalog)
    prepaid_period: int | None = None
    prepaid_renew_flag: str | None = None
    # PREPAID instances go to the recycle bin on delete unless `force_delete` is set ("the instance
    # will be permanently deleted instead of being moved into the recycle bin. Note: only works for
    # PREPAID instance").
    force_delete: bool | None = None
    action_time: str | None = None  # the ActionTimer's time; None for PREPAID (paid for the months)


@dataclass(frozen=True)
class PoolArgs:
    name: str
    instance_type: str
    count: int
    image: ImageRef
    login_user: str
    # None: the spec names none, and Tencent picks a type it has in stock (SystemDisk.DiskType "默认取值：
    # 当前有库存的硬盘类型"; system_disk_type is Optional+Computed in the provider). Never the spec's
    # default category, which is Alibaba's cloud_essd and no Tencent disk type.
    system_disk_type: str | None
    system_disk_size_gb: int
    billing: BillingArgs
    hcc: bool  # placed in the cluster's HPC cluster (hpc_cluster_id)
    bare_metal: bool = False

    @property
    def create_timeout(self) -> timedelta:
        return create_timeout(bare_metal=self.bare_metal)

    @property
    def custom_create_timeout(self) -> str | None:
        """What goes into custom_timeouts: only where gpuctl waits longer than the provider."""
        return f"{int(BARE_METAL_CREATE_TIMEOUT.total_seconds() // 60)}m" if self.bare_metal else None

    def hostnames(self, cluster: str) -> list[str]:
        return [node_name(cluster, self.name, index) for index in range(self.count)]


@dataclass(frozen=True)
class NetworkIds:
    """A VPC and subnet the cluster joins instead of creating its own: the storage stack's, where the
    spec creates a CFS (a general-series CFS stays in the subnet it was made in, docs/storage.md)."""

    vpc_id: str
    subnet_id: str


@dataclass(frozen=True)
class GpuClusterArgs:
    cluster: str
    region: str
    zone: str
    fabric: Fabric
    mtu: int  # what the VPC will carry: the spec's MTU only where the catalog says every type takes it
    vpc_cidr: str
    subnet_cidr: str
    admin_cidr: str
    allow_world_ssh: bool
    public_ip: bool
    public_key: str
    created_at: str  # the anchor of the ActionTimer time, UTC, ACTION_TIME_FORMAT
    expires_at: str
    cluster_id: str | None = None  # None only where no stack holds one (bench, plan); tagged when set
    tags: dict[str, str] = field(default_factory=dict)
    pools: tuple[PoolArgs, ...] = ()
    requested_mtu: int | None = None  # the spec's network.mtu, where it differs from `mtu`
    warnings: tuple[str, ...] = ()  # told to the user (pulumi.log.warn in the program)
    instance_role: InstanceRoleArgs | None = None  # the CAM role the instances carry; None: no role
    existing_network: NetworkIds | None = None  # None: the cluster creates its VPC and subnet

    @property
    def key_name(self) -> str:
        return key_pair_name(self.cluster, self.cluster_id)

    @property
    def hpc_cluster_name(self) -> str:
        """The HPC cluster takes no tags through the provider: its name carries the cluster id
        so that the leftover search can still prove it is this cluster's (CreateHpcCluster Name: 1-60)."""
        return self.cluster if self.cluster_id is None else f"{self.cluster}-{self.cluster_id}"

    @property
    def needs_hpc_cluster(self) -> bool:
        return any(pool.hcc for pool in self.pools)

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
        existing_network: NetworkIds | None = None,
    ) -> GpuClusterArgs:
        """Compute the component's arguments; refuse (CatalogError) what Tencent cannot build.

        `created_at` anchors the ActionTimer time and the expiry tag; it is pinned on the first `up`
        so a second `up` changes nothing. `now` is the real time, used only to check that the timer
        time is still far enough ahead to be accepted. `cluster_id` and `owner` as on Alibaba: made
        and pinned by the first `up`, tagged on every taggable resource. `existing_network`: the storage
        stack's VPC and subnet, where it creates a CFS (the driver reads them from its outputs).
        """
        if spec.provider != PROVIDER:
            raise UsageError(f"spec {spec.name} is for provider {spec.provider}, not {PROVIDER}")
        assert spec.region is not None  # ClusterSpec requires region and zone for clouds
        assert spec.zone is not None
        rows = {pool.name: _row(pool, catalog) for pool in spec.node_pools}
        check_fabric(spec, rows)
        anchor = utc(created_at or now)
        expires = expiry_time(anchor, spec.lifecycle.ttl_delta)
        pools = tuple(_pool_args(spec, pool, rows[pool.name], action_at=expires) for pool in spec.node_pools)
        _check_timer_lead(spec, pools, anchor=anchor, expires=expires, now=utc(now))
        mtu = effective_mtu(spec, tuple(rows.values()))
        key = public_key if public_key is not None else read_public_key(spec)
        expires_text = f"{expires:{ACTION_TIME_FORMAT}}"
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
            public_key=key,
            created_at=f"{anchor:{ACTION_TIME_FORMAT}}",
            expires_at=expires_text,
            cluster_id=cluster_id,
            tags=cluster_tags(spec, expires_at=expires_text, cluster_id=cluster_id, owner=owner),
            pools=pools,
            warnings=tuple(_warnings(spec, pools, key)),
            instance_role=instance_role_args(spec, cluster_id),
            existing_network=existing_network,
        )


@dataclass(frozen=True)
class InstanceRoleArgs:
    """The CAM role every instance of the cluster carries (docs/lifecycle.md, roles.py builds it).

    The node-side lifecycle agent signs StopInstances/TerminateInstances with it, and cosfs mounts the
    object volumes with it (`cam_role=`): no key is ever copied to a node.
    """

    name: str  # the role's and its policy's name
    cluster_id: str  # the policy allows acting only on instances tagged with it
    stop_instances: bool  # the spec asks for the agent: the node may stop or terminate itself
    # The object volumes' COS buckets: created ones by the name before -<APPID> (the program adds the
    # account's APPID), existing ones by their full name (the spec gives it with its -<APPID>).
    created_buckets: tuple[str, ...] = ()
    existing_buckets: tuple[str, ...] = ()

    @property
    def has_buckets(self) -> bool:
        return bool(self.created_buckets or self.existing_buckets)


def instance_role_args(spec: ClusterSpec, cluster_id: str | None) -> InstanceRoleArgs | None:
    """The instance role, where the spec needs one: the lifecycle agent or an object volume.

    None without a cluster id (bench, plan): the policy's condition is the cluster id tag, and a role
    without it could stop any gpuctl node of the account. gpuctl's `up` and the stack folder always
    have one.
    """
    if cluster_id is None or not needs_instance_role(spec):
        return None
    objects = [v for v in spec.storage if v.kind == "object"]
    return InstanceRoleArgs(
        name=instance_role_name(spec.name, cluster_id), cluster_id=check_cluster_id(cluster_id),
        stop_instances=spec.lifecycle.agent_wanted,
        created_buckets=tuple(v.bucket_name(spec.name) for v in objects if v.existing is None),
        existing_buckets=tuple(v.existing for v in objects if v.existing is not None),
    )


def needs_instance_role(spec: ClusterSpec) -> bool:
    return spec.lifecycle.agent_wanted or any(v.kind == "object" for v in spec.storage)


def instance_role_name(cluster: str, cluster_id: str | None) -> str:
    """`gpuctl-<cluster>-<cluster id>-node`: CAM role names are unique per account, so two clusters of
    the same name must not share one."""
    if cluster_id is None:
        return f"gpuctl-{cluster}-node"
    return f"gpuctl-{cluster}-{cluster_id}-node"


def key_pair_name(cluster: str, cluster_id: str | None) -> str:
    """`gpuctl_<cluster id>`: key pair names are unique per account and take only [0-9A-Za-z_], 25 at
    most, so the cluster name (which has '-') cannot be used as is. A cluster id set by hand that does
    not fit is hashed; without a cluster id (plan, bench) the name stands in."""
    room = KEY_NAME_MAX - len(KEY_NAME_PREFIX)
    if cluster_id is None:
        base = cluster.replace("-", "_")[:room]
    elif re.fullmatch(rf"[0-9a-z]{{1,{room}}}", cluster_id):
        base = cluster_id
    else:
        base = hashlib.sha256(cluster_id.encode()).hexdigest()[:12]
    name = KEY_NAME_PREFIX + base
    assert _KEY_NAME.fullmatch(name), name
    return name


def check_fabric(spec: ClusterSpec, rows: dict[str, InstanceType]) -> None:
    """Refuse a fabric Tencent cannot give these types (pure; `rows`: pool name -> catalog row).

    `rdma` is Tencent's HCC RoCE network: every pool must be an HCC type. `erdma` is Alibaba's. An HCC
    type with `tcp` is allowed (it is still placed in an HPC cluster, which the API requires of it).
    """
    fabric = spec.network.fabric
    if fabric == "erdma":
        raise CatalogError(
            ["network.fabric: erdma is Alibaba Cloud's elastic RDMA; Tencent Cloud's RDMA is fabric rdma (HCC)"],
            hint="set network.fabric: rdma with an HCC type, or tcp",
        )
    if fabric != "rdma":
        return
    problems = [
        f"node pool {name}: {row.name} is not an HCC type according to the catalog, but network.fabric is rdma; "
        "Tencent's RDMA network exists only between HCC instances in one HPC cluster"
        for name, row in rows.items()
        if not row.hcc
    ]
    if problems:
        raise CatalogError(
            problems,
            hint=f"pick an HCC type (`{hints.command('catalog', PROVIDER, '--fabric', 'rdma')}`) "
            "or set network.fabric: tcp",
        )


def create_timeout(*, bare_metal: bool) -> timedelta:
    """How long gpuctl lets one instance take to create: the latest its ActionTimer can be made."""
    return BARE_METAL_CREATE_TIMEOUT if bare_metal else DEFAULT_CREATE_TIMEOUT


def ttl_problem(spec: ClusterSpec, pool: NodePool, row: InstanceType) -> str | None:
    """Why the spec's TTL is too short for Tencent to take this pool's ActionTimer, or None (pure).

    The timer's ActionTime must lie more than ACTION_TIMER_MIN_LEAD after the call, and the call comes
    once the instance exists, up to its create timeout after `up` started: a TTL shorter than both
    together is refused by `up` (_check_timer_lead) whatever the clock says, so validate refuses it.
    Monthly (PREPAID) pools get no timer."""
    if pool.billing.mode == "monthly":
        return None
    floor = ACTION_TIMER_MIN_LEAD + create_timeout(bare_metal=row.bare_metal)
    if spec.lifecycle.ttl_delta >= floor:
        return None
    minutes = int(floor.total_seconds() // 60)
    created = int(create_timeout(bare_metal=row.bare_metal).total_seconds() // 60)
    kind = "a bare-metal type" if row.bare_metal else "this type"
    return (f"lifecycle.ttl: {spec.lifecycle.ttl} is under {minutes}m for node pool {pool.name} ({row.name}) on "
            f"tencentcloud: each node's ActionTimer, which terminates it at the TTL, must be set more than "
            f"{int(ACTION_TIMER_MIN_LEAD.total_seconds() // 60)} minutes ahead (ImportInstancesActionTimer, "
            f"https://cloud.tencent.com/document/api/213/103949) and is set once the node exists, which gpuctl "
            f"allows {created} minutes for {kind}; set lifecycle.ttl: {minutes}m or more")


def check_billing(pool: NodePool, row: InstanceType, region: str | None) -> None:
    """Refuse billing Tencent does not sell (pure): a subscription length RunInstances does not take,
    and spot without a price ceiling where the catalog has no pay-as-you-go price to cap it at."""
    billing_args(pool, row, action_at=datetime(2000, 1, 1, tzinfo=UTC), region=region)


def billing_args(pool: NodePool, row: InstanceType, *, action_at: datetime, region: str | None) -> BillingArgs:
    billing = pool.billing
    action = f"{action_at:{ACTION_TIME_FORMAT}}"
    if billing.mode == "monthly":
        assert billing.months is not None  # Billing checks this
        if billing.months not in PREPAID_MONTHS:
            raise CatalogError(
                [f"node pool {pool.name}: billing.months: {billing.months} is not a subscription length Tencent "
                 f"sells; instances are bought for {', '.join(map(str, PREPAID_MONTHS))} months"],
                hint="set billing.months to one of those",
            )
        return BillingArgs(
            instance_charge_type="PREPAID", prepaid_period=billing.months, prepaid_renew_flag=PREPAID_RENEW_FLAG,
            force_delete=True,
        )
    if billing.mode == "spot":
        # SPOTPAID "must set spot_instance_type and spot_max_price at the same time": without the spec's
        # ceiling, the pay-as-you-go list price is the ceiling (what the spec promises: spot never costs
        # more than pay-as-you-go), and without that price gpuctl refuses rather than guess one. Only an
        # official list price: a third-party figure (another account's discounted price, at its date)
        # set as a real bid could keep the nodes from starting.
        here = row.price_in(region)
        listed = here if here is not None and here.kind == "official list" else None
        if billing.spot_max_price_per_hour is not None:
            price, basis = billing.spot_max_price_per_hour, "billing.spot_max_price_per_hour"
        elif listed is not None and listed.pay_as_you_go_per_hour is not None:
            price, basis = listed.pay_as_you_go_per_hour, f"the catalog's pay-as-you-go price ({listed.region})"
        else:
            other = ("" if row.price is None
                     else f" (its {row.price.kind} figure is not used as a bid)" if row.price.kind != "official list"
                     else f" (its list price is for {row.price.region}, not {region})" if here is None
                     else "")
            raise CatalogError(
                [f"node pool {pool.name}: billing.mode spot on Tencent needs a price ceiling, and the catalog has "
                 f"no official pay-as-you-go list price for {row.name} to use as one{other}"],
                hint="set billing.spot_max_price_per_hour (CNY per instance-hour)",
            )
        return BillingArgs(
            instance_charge_type="SPOTPAID", spot_instance_type=SPOT_INSTANCE_TYPE, spot_max_price=_decimal(price),
            spot_price_basis=basis, action_time=action,
        )
    return BillingArgs(instance_charge_type="POSTPAID_BY_HOUR", action_time=action)


def image_ref(image: str) -> ImageRef:
    if IMAGE_ID.fullmatch(image):
        return ImageRef(image_id=image)
    pattern = IMAGE_PATTERNS.get(image)
    if pattern is None and image.startswith(BAKED_PREFIX):
        refuse_on_cloud(image, "Tencent Cloud", "img-...")
    if pattern is None:
        known = ", ".join(sorted(IMAGE_PATTERNS))
        raise CatalogError(
            [f"image '{image}' is not available on Tencent Cloud through gpuctl"],
            hint=f"use one of {known}, or an image id (img-...) from your region",
        )
    return ImageRef(name_regex=pattern)


def newest_image(found: list[tuple[str, str]]) -> str | None:
    """The image the program takes among the lookup's matches, (image id, CreatedTime) each: the newest,
    then the lowest id, so that two runs (and preflight's dry run) agree; the data source's order is not
    documented. None when nothing matched."""
    found = [(image_id, created) for image_id, created in found if image_id]
    if not found:
        return None
    newest = max(created for _, created in found)
    return min(image_id for image_id, created in found if created == newest)


def login_user(spec: ClusterSpec, pool: NodePool) -> str:
    """Who Ansible logs in as: the spec's ssh.user, else the image's own (ubuntu on Tencent's Ubuntu
    images; configure becomes root through sudo for any user but root)."""
    if spec.ssh.user is not None:
        return spec.ssh.user
    return IMAGE_LOGIN_USERS.get(pool.image, DEFAULT_LOGIN_USER)


def effective_mtu(spec: ClusterSpec, rows: tuple[InstanceType, ...]) -> int:
    """The MTU configure sets on the fabric interfaces and checks with do-not-fragment pings.

    `fabric: rdma`: the spec's. HCC RDMA runs on its own bonds, outside the VPC, so the VPC's MTU
    says nothing of them; configure sets the spec's MTU on every bond found on the node and pings
    the peers' bonds at it (validate warns where the catalog does not know the type carries it).
    Exporting the VPC's 1500 instead would lower the RoCE bonds below what they may carry.
    Otherwise (tcp, over the VPC): the spec's where it is standard (<= 1500) or the catalog says
    every type carries it (`max_mtu`), else 1500. Tencent's jumbo-frame page names no GPU family."""
    mtu = spec.network.mtu
    if spec.network.fabric == "rdma":
        return mtu
    if mtu <= JUMBO_MTU_ABOVE or all((row.max_mtu or 0) >= mtu for row in rows):
        return mtu
    return STANDARD_MTU


def prepaid_warning(pool: PoolArgs) -> str:
    months = pool.billing.prepaid_period
    return (
        f"node pool {pool.name}: monthly (PREPAID, {months} month{'s' if months != 1 else ''}): paid up front "
        "and not terminated by the TTL (no ActionTimer). Tencent may refuse to terminate a PREPAID instance "
        "before its period ends, so `down` can leave it until then; it is never renewed automatically"
    )


def _warnings(spec: ClusterSpec, pools: tuple[PoolArgs, ...], public_key: str) -> list[str]:
    out = [prepaid_warning(pool) for pool in pools if pool.billing.instance_charge_type == "PREPAID"]
    if not public_key.startswith("ssh-rsa "):
        # ImportKeyPair: "PublicKey: content of the public key in the OpenSSH RSA format".
        out.append(
            "ssh.public_key is not an RSA key; Tencent's ImportKeyPair documents OpenSSH RSA keys only, "
            "so the key pair may be refused: use an ssh-rsa key if it is"
        )
    for pool in pools:
        if pool.billing.spot_price_basis is not None and pool.billing.spot_price_basis.startswith("the catalog"):
            out.append(
                f"node pool {pool.name}: spot without billing.spot_max_price_per_hour: the ceiling is "
                f"{pool.billing.spot_max_price} CNY/h, {pool.billing.spot_price_basis}"
            )
    return out


def _check_timer_lead(
    spec: ClusterSpec, pools: tuple[PoolArgs, ...], *, anchor: datetime, expires: datetime, now: datetime
) -> None:
    timed = [pool for pool in pools if pool.billing.action_time is not None]
    if not timed:
        return
    lead = ACTION_TIMER_MIN_LEAD + max(pool.create_timeout for pool in timed)
    if expires < now + lead:
        minutes = int(lead.total_seconds() // 60)
        raise UsageError(
            f"cluster {spec.name} was created at {anchor:{ACTION_TIME_FORMAT}} with ttl {spec.lifecycle.ttl}; "
            f"it expires at {expires:{ACTION_TIME_FORMAT}}, too soon for Tencent to accept an ActionTimer "
            f"(at least {minutes} minutes ahead: 5 for the API, plus the time an instance may take to create)",
            hint=f"run `{hints.spec_command(spec.name, 'down')}` and start again, or raise lifecycle.ttl "
            f"to at least {minutes}m",
        )


def _row(pool: NodePool, catalog: Catalog) -> InstanceType:
    row = catalog.find(pool.instance_type)
    if row is None:
        raise CatalogError(
            [f"node pool {pool.name}: instance type {pool.instance_type} is not in the {PROVIDER} catalog"],
            hint=f"check the spelling or list types with `{hints.command('catalog', PROVIDER)}`",
        )
    return row


def _pool_args(spec: ClusterSpec, pool: NodePool, row: InstanceType, *, action_at: datetime) -> PoolArgs:
    return PoolArgs(
        name=pool.name,
        instance_type=pool.instance_type,
        count=pool.count,
        image=image_ref(pool.image),
        login_user=login_user(spec, pool),
        system_disk_type=system_disk_type(pool),
        system_disk_size_gb=pool.system_disk.size_gb,
        billing=billing_args(pool, row, action_at=action_at, region=spec.region),
        hcc=row.hcc,
        bare_metal=row.bare_metal,
    )


def system_disk_type(pool: NodePool) -> str | None:
    """The spec's system disk category where it names one, else None (Tencent chooses)."""
    return pool.system_disk.category if "category" in pool.system_disk.model_fields_set else None


def _decimal(value: float) -> str:
    """61.25 -> "61.25", 8.0 -> "8": SpotMaxPrice is a decimal string."""
    text = f"{round(value, 4):.4f}".rstrip("0").rstrip(".")
    return text or "0"


def storage_owns_network(spec: ClusterSpec) -> bool:
    """Whether the storage stack holds the cluster's VPC and subnet: it does where it creates a CFS
    (kind nas without `existing`), which stays in the subnet it is made in and so must outlive `down`
    with it (docs/storage.md)."""
    return any(v.kind == "nas" and v.existing is None for v in spec.storage)
