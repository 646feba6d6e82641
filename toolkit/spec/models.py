"""Pydantic models of the cluster spec (`cluster.yaml`).

Everything a cluster needs is in one file; unknown keys are refused (`extra="forbid"`) so a typo
never silently becomes a default. Checks that need the instance catalog live in
`toolkit.catalog.checks`, not here: this module knows only the shape of a spec.
"""

from __future__ import annotations

import ipaddress
import re
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from toolkit.spec.duration import parse_duration

Provider = Literal["alicloud", "tencentcloud", "local"]
Fabric = Literal["erdma", "rdma", "tcp"]
BillingMode = Literal["pay_as_you_go", "spot", "monthly"]

# DNS label, short enough to prefix every cloud resource name ("<name>-gpu-0-sg" ...).
ClusterName = Annotated[
    str,
    StringConstraints(pattern=r"^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$"),
]
PoolName = Annotated[str, StringConstraints(pattern=r"^[a-z]([a-z0-9-]{0,14}[a-z0-9])?$")]
NcclVariable = Annotated[str, StringConstraints(pattern=r"^NCCL_[A-Z0-9_]+$")]

# Tag keys the clouds reserve for themselves (Alibaba: aliyun/acs:; Tencent: qcloud/tencent)
# and the prefix gpuctl writes its own tags under.
RESERVED_TAG_PREFIXES = ("aliyun", "acs:", "qcloud", "tencent", "gpuctl:", "gpuctl-")
MAX_USER_TAGS = 15  # Alibaba allows 20 tags per resource; gpuctl writes up to 5 of its own.


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Billing(_Strict):
    mode: BillingMode = "pay_as_you_go"
    # Highest price per instance-hour you accept for spot, in the catalog's currency for the
    # provider. Without it the cloud caps spot at the pay-as-you-go price.
    spot_max_price_per_hour: float | None = Field(default=None, gt=0)
    months: int | None = Field(default=None, ge=1, le=36)

    @model_validator(mode="after")
    def _fields_fit_mode(self) -> Billing:
        if self.spot_max_price_per_hour is not None and self.mode != "spot":
            raise ValueError("spot_max_price_per_hour is only for mode: spot")
        if self.mode == "monthly" and self.months is None:
            raise ValueError("mode: monthly needs months (1-36)")
        if self.months is not None and self.mode != "monthly":
            raise ValueError("months is only for mode: monthly")
        return self


class Disk(_Strict):
    size_gb: int = Field(default=200, ge=20, le=32768)
    category: str = "cloud_essd"


class NodePool(_Strict):
    name: PoolName
    instance_type: str = Field(min_length=1)
    count: int = Field(ge=1, le=512)
    # An image id (m-..., img-...) or a gpuctl alias: ubuntu_22_04, ubuntu_24_04,
    # alinux_3 (Alibaba Cloud Linux 3), tencentos_3. Local lab: debian_12.
    image: str = "ubuntu_22_04"
    system_disk: Disk = Disk()
    billing: Billing = Billing()
    # Local lab only: the real capture bundle each node of this pool replays in place of a GPU
    # host (a directory of nvidia-smi / ibv_devinfo outputs).
    capture: Path | None = None


class Network(_Strict):
    fabric: Fabric
    mtu: int = Field(default=8500, ge=1280, le=9000)
    vpc_cidr: str = "10.42.0.0/16"
    subnet_cidr: str | None = None  # defaults to the first /24 of vpc_cidr
    # Who may SSH in. Required: there is no safe default for a paid machine with a public IP.
    admin_cidr: str
    allow_world_ssh: bool = False
    public_ip: bool = True

    @field_validator("vpc_cidr", "subnet_cidr", "admin_cidr")
    @classmethod
    def _is_cidr(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            network = ipaddress.ip_network(value, strict=True)
        except ValueError as exc:
            raise ValueError(f"'{value}' is not a network in CIDR form such as 10.0.0.0/16 ({exc})") from None
        return str(network)

    @field_validator("vpc_cidr")
    @classmethod
    def _vpc_private(cls, value: str) -> str:
        network = ipaddress.ip_network(value)
        if not network.is_private or network.version != 4:
            raise ValueError(f"vpc_cidr {value} must be a private IPv4 range (10/8, 172.16/12, 192.168/16)")
        if not 8 <= network.prefixlen <= 24:
            raise ValueError(f"vpc_cidr {value} must be between /8 and /24 (the clouds' VPC limits)")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Network:
        vpc = ipaddress.ip_network(self.vpc_cidr)
        if self.subnet_cidr is not None:
            subnet = ipaddress.ip_network(self.subnet_cidr)
            if subnet.version != 4 or not subnet.subnet_of(vpc):  # type: ignore[arg-type]
                raise ValueError(f"subnet_cidr {self.subnet_cidr} is not inside vpc_cidr {self.vpc_cidr}")
            if subnet.prefixlen > 29:
                raise ValueError(f"subnet_cidr {self.subnet_cidr} is smaller than /29, too small for a cluster")
        admin = ipaddress.ip_network(self.admin_cidr)
        if admin.prefixlen == 0 and not self.allow_world_ssh:
            raise ValueError(
                f"admin_cidr {self.admin_cidr} opens SSH to the whole internet; set it to your "
                "office or VPN range (e.g. 203.0.113.0/24), or set allow_world_ssh: true if you "
                "really mean it"
            )
        return self

    @property
    def effective_subnet_cidr(self) -> str:
        if self.subnet_cidr is not None:
            return self.subnet_cidr
        vpc = ipaddress.ip_network(self.vpc_cidr)
        return str(next(vpc.subnets(new_prefix=max(24, vpc.prefixlen))))


class Ssh(_Strict):
    # Path of the public key to install; `~` is expanded. Required for cloud providers; the
    # local lab makes one key pair per cluster when it is absent.
    public_key: Path | None = None
    user: str | None = None  # default by image: root on Alibaba images, ubuntu on Tencent Ubuntu


class Software(_Strict):
    # Pinned so that two clusters built a month apart are the same. NCCL 2.26 and CUDA 12.8 need
    # a 570-series driver (CUDA 12.8 release notes: minimum driver 570.26).
    driver: str = "570.133.20"
    cuda: str = "12.8"
    nccl: str = "2.26.2"
    nccl_tests: str = "2.14.1"


class Lifecycle(_Strict):
    # How long the cluster may live. Backed by the clouds' own timed release, so a forgotten
    # cluster stops billing even if nobody runs `gpuctl down`.
    ttl: str
    idle_stop_minutes: int | None = Field(default=None, ge=10, le=7 * 24 * 60)

    @field_validator("ttl")
    @classmethod
    def _ttl_sane(cls, value: str) -> str:
        delta = parse_duration(value)
        if delta < timedelta(minutes=30):
            raise ValueError(
                f"ttl {value} is under 30m; Alibaba refuses a release time sooner than 30 minutes "
                "ahead and no cluster comes up and configures faster"
            )
        if delta > timedelta(days=90):
            raise ValueError(f"ttl {value} is over 90d; use billing mode monthly for long-lived clusters")
        return value

    @property
    def ttl_delta(self) -> timedelta:
        return parse_duration(self.ttl)


class ClusterSpec(_Strict):
    name: ClusterName
    provider: Provider
    region: str | None = None
    zone: str | None = None
    owner: str | None = Field(default=None, max_length=64)
    node_pools: list[NodePool] = Field(min_length=1, max_length=16)
    network: Network
    ssh: Ssh = Ssh()
    software: Software = Software()
    nccl_overrides: dict[NcclVariable, str | int | bool] = Field(default_factory=dict)
    lifecycle: Lifecycle
    tags: dict[str, str] = Field(default_factory=dict)

    @field_validator("region", "zone")
    @classmethod
    def _region_shape(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[a-z]{2}-[a-z0-9-]+", value):
            raise ValueError(f"'{value}' does not look like a region or zone id such as cn-beijing or ap-shanghai-5")
        return value

    @field_validator("tags")
    @classmethod
    def _tags_fit_clouds(cls, tags: dict[str, str]) -> dict[str, str]:
        if len(tags) > MAX_USER_TAGS:
            raise ValueError(f"{len(tags)} tags; at most {MAX_USER_TAGS} (gpuctl adds its own, clouds allow 20)")
        for key, value in tags.items():
            if not 1 <= len(key) <= 128 or len(value) > 128:
                raise ValueError(f"tag '{key[:40]}': keys need 1-128 characters, values at most 128")
            if key.lower().startswith(RESERVED_TAG_PREFIXES):
                raise ValueError(f"tag key '{key}' uses a reserved prefix ({', '.join(RESERVED_TAG_PREFIXES)})")
        return tags

    @model_validator(mode="after")
    def _provider_needs(self) -> ClusterSpec:
        if self.provider != "local":
            missing = [field for field in ("region", "zone") if getattr(self, field) is None]
            if missing:
                raise ValueError(f"provider {self.provider} needs {' and '.join(missing)}")
            if self.ssh.public_key is None:
                raise ValueError(f"provider {self.provider} needs ssh.public_key (path of your .pub file)")
            for pool in self.node_pools:
                if pool.capture is not None:
                    raise ValueError(f"node pool {pool.name}: capture is only for provider local (lab replay)")
        names = [pool.name for pool in self.node_pools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"node pool names must be unique; repeated: {', '.join(duplicates)}")
        return self

    @property
    def node_count(self) -> int:
        return sum(pool.count for pool in self.node_pools)

    def nccl_override_values(self) -> dict[str, str]:
        """`nccl_overrides` as NCCL reads them: YAML's true/false become 1/0, numbers become text."""
        return {
            key: ("1" if value else "0") if isinstance(value, bool) else str(value)
            for key, value in self.nccl_overrides.items()
        }
