"""Pydantic models of the cluster spec (`cluster.yaml`).

Everything a cluster needs is in one file; unknown keys are refused (`extra="forbid"`) so a typo
never silently becomes a default. Checks that need the instance catalog live in
`toolkit.catalog.checks`, not here: this module knows only the shape of a spec.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictFloat,
    StrictInt,
    StringConstraints,
    field_validator,
    model_validator,
)

from toolkit.spec.duration import parse_duration
from toolkit.vocabulary import FabricName, ProviderName

# Defined once, in the light vocabulary module (the CLI's choices come from the same types).
Provider = ProviderName
Fabric = FabricName
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

# --- Free-form text is data, never code -----------------------------------------------------
# Spec values end up in Jinja-rendered playbooks, in cloud API calls, on ssh/ansible command lines
# and in files such as /etc/nccl.conf. None of them is ever evaluated, and these rules make sure a
# value cannot even look like it could be: no template markers, no control characters (a newline
# would start a new line of a rendered file), nothing that reads as a command-line option.
TEMPLATE_MARKERS = ("{{", "}}", "{%", "%}", "{#", "#}")
# Characters a terminal or a line-based file format treats as structure, or that are not seen:
# C0 and C1 controls with DEL (Unicode category Cc), the line and paragraph separators
# U+2028/U+2029 (Zl, Zp), lone surrogates (Cs), and invisible format characters (Cf): zero-width
# spaces, the byte order mark, and the bidirectional overrides that make text display in another
# order than it is read ("Trojan Source").
_CONTROL_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_PLAIN_NUMBER = re.compile(r"-[0-9]+(\.[0-9]+)?")
MAX_TEXT = 256
MAX_PATH = 4096
MAX_NAME = 255  # bytes in one path component (NAME_MAX)
MAX_NCCL_VALUE = 1024


def check_text(value: str, *, max_length: int = MAX_TEXT, allow_negative_number: bool = False) -> str:
    """Refuse template markers, control characters and option-looking values; return `value`."""
    for marker in TEMPLATE_MARKERS:
        if marker in value:
            raise ValueError(
                f"contains a template marker '{marker}'; spec values are data and are never evaluated, "
                "so write the literal value"
            )
    for char in value:
        if unicodedata.category(char) in _CONTROL_CATEGORIES:
            raise ValueError(
                f"contains a control character U+{ord(char):04X}; write the value on one line "
                "without control characters"
            )
    if value.startswith("-") and not (allow_negative_number and _PLAIN_NUMBER.fullmatch(value)):
        raise ValueError(
            "starts with '-' and would be read as a command-line option; remove the leading '-'"
        )
    if len(value) > max_length:
        raise ValueError(f"is {len(value)} characters long; at most {max_length}")
    return value


def _text(max_length: int) -> AfterValidator:
    def check(value: str) -> str:
        return check_text(value, max_length=max_length)

    return AfterValidator(check)


def _check_path(value: Path) -> Path:
    check_text(str(value), max_length=MAX_PATH)
    for part in value.parts:
        if len(part.encode("utf-8", errors="surrogatepass")) > MAX_NAME:
            raise ValueError(f"has a path component longer than {MAX_NAME} bytes, which no file system allows")
    return value


def _shown(value: object) -> str:
    """A value for a message: repr (so control characters stay visible), cut to a readable size."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# Free text: owner, tag keys and values. SafePath: paths the spec names (capture, ssh.public_key).
SafeText = Annotated[str, _text(MAX_TEXT)]
SafePath = Annotated[Path, AfterValidator(_check_path)]

POSIX_LOGIN = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
VERSION = re.compile(r"[0-9]+(\.[0-9]+){0,3}(-[0-9A-Za-z.]+)?")


def _posix_login(value: str) -> str:
    if not POSIX_LOGIN.fullmatch(value):
        raise ValueError(
            f"{_shown(value)} is not a POSIX login name: 1-32 lower-case letters, digits, '_' and '-', "
            "starting with a letter or '_' (e.g. ubuntu, root)"
        )
    return value


def _version(value: str) -> str:
    if not VERSION.fullmatch(value):
        raise ValueError(
            f"{_shown(value)} is not a version: write numbers joined by dots, such as 570.133.20, 12.8 or 2.26.2"
        )
    return value


# YAML 1.1 words a reader may mean as a boolean; NCCL reads numbers, so they are refused rather
# than guessed at (gpuctl's YAML reads only true/false as booleans).
_BOOL_WORDS = frozenset({"yes", "no", "on", "off", "y", "n"})


def _nccl_value(value: object) -> str | int | bool:
    if isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        if value.strip().lower() in _BOOL_WORDS:
            raise ValueError(f"{_shown(value)} is ambiguous; NCCL reads numbers, so write 1 or 0 (or true/false)")
        return check_text(value, max_length=MAX_NCCL_VALUE, allow_negative_number=True)
    raise ValueError(
        f"must be text, a whole number or true/false, not {type(value).__name__} {_shown(value)}; "
        "quote it if it is text"
    )


def _tag_key(value: str) -> str:
    if not value:
        raise ValueError("a tag key needs 1-128 characters")
    if value.lower().startswith(RESERVED_TAG_PREFIXES):
        raise ValueError(f"tag key {_shown(value)} uses a reserved prefix ({', '.join(RESERVED_TAG_PREFIXES)})")
    return value


# Checked one by one, so that a problem points at the line of the tag.
TagKey = Annotated[str, _text(128), AfterValidator(_tag_key)]
TagValue = Annotated[str, _text(128)]
SshUser = Annotated[str, _text(32), AfterValidator(_posix_login)]
Version = Annotated[str, _text(64), AfterValidator(_version)]
NcclValue = Annotated[str | int | bool, PlainValidator(_nccl_value)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Billing(_Strict):
    mode: BillingMode = "pay_as_you_go"
    # Highest price per instance-hour you accept for spot, in the catalog's currency for the
    # provider. Without it the cloud caps spot at the pay-as-you-go price.
    spot_max_price_per_hour: StrictFloat | None = Field(default=None, gt=0, allow_inf_nan=False)
    months: StrictInt | None = Field(default=None, ge=1, le=36)

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
    size_gb: StrictInt = Field(default=200, ge=20, le=32768)
    # The cloud's own name of the disk category (checked against the provider by the catalog
    # checks): cloud_essd ... on Alibaba, CLOUD_BSSD ... on Tencent.
    category: Annotated[str, _text(64)] = "cloud_essd"


class NodePool(_Strict):
    name: PoolName
    instance_type: Annotated[str, _text(128)] = Field(min_length=1)
    count: StrictInt = Field(ge=1, le=512)
    # An image id (m-..., img-...) or a gpuctl alias: ubuntu_22_04, ubuntu_24_04,
    # alinux_3 (Alibaba Cloud Linux 3), tencentos_3. Local lab: debian_12.
    image: Annotated[str, _text(128)] = "ubuntu_22_04"
    system_disk: Disk = Disk()
    billing: Billing = Billing()
    # Local lab only: the real capture bundle each node of this pool replays in place of a GPU
    # host (a directory of nvidia-smi / ibv_devinfo outputs).
    capture: SafePath | None = None


# The widest admin_cidr accepted without allow_world_ssh: an IPv4 /8 (16.7 million addresses, a
# whole 10/8) and an IPv6 /32 (what a registry allocates to one provider).
WIDEST_ADMIN_PREFIX = {4: 8, 6: 32}


class Network(_Strict):
    fabric: Fabric
    mtu: StrictInt = Field(default=8500, ge=1280, le=9000)
    vpc_cidr: str = "10.42.0.0/16"
    subnet_cidr: str | None = None  # defaults to the first /24 of vpc_cidr
    # Who may SSH in. Required: there is no safe default for a paid machine with a public IP.
    admin_cidr: str
    allow_world_ssh: StrictBool = False
    public_ip: StrictBool = True

    @field_validator("vpc_cidr", "subnet_cidr", "admin_cidr")
    @classmethod
    def _is_cidr(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if len(value) > 64:
            raise ValueError(f"{_shown(value)} is not a network in CIDR form such as 10.0.0.0/16 (far too long)")
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
        widest = WIDEST_ADMIN_PREFIX[admin.version]
        if admin.prefixlen < widest and not self.allow_world_ssh:
            bits = admin.max_prefixlen - admin.prefixlen
            count = f"{admin.num_addresses:,}" if admin.version == 4 else f"2^{bits}"
            raise ValueError(
                f"admin_cidr {self.admin_cidr} opens SSH to {count} addresses, a range wider than "
                f"/{widest}; set it to your office or VPN range (e.g. 203.0.113.0/24), or set "
                "allow_world_ssh: true if you really mean it"
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
    public_key: SafePath | None = None
    # Default by image: root on Alibaba images, ubuntu on Tencent Ubuntu. A POSIX login name,
    # never an option: it goes on ssh and ansible command lines.
    user: SshUser | None = None


class Software(_Strict):
    # Pinned so that two clusters built a month apart are the same. NCCL 2.26 and CUDA 12.8 need
    # a 570-series driver (CUDA 12.8 release notes: minimum driver 570.26).
    driver: Version = "570.133.20"
    cuda: Version = "12.8"
    nccl: Version = "2.26.2"
    # nccl-tests releases the nccl_tests role holds a SHA-256 for: 2.13.6, 2.16.3, 2.17.6.
    nccl_tests: Version = "2.16.3"


class Lifecycle(_Strict):
    # How long the cluster may live. Backed by the clouds' own timed release, so a forgotten
    # cluster stops billing even if nobody runs `gpuctl down`.
    ttl: Annotated[str, _text(64)]
    idle_stop_minutes: StrictInt | None = Field(default=None, ge=10, le=7 * 24 * 60)

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
    owner: Annotated[str, _text(64)] | None = None
    node_pools: list[NodePool] = Field(min_length=1, max_length=16)
    network: Network
    ssh: Ssh = Ssh()
    software: Software = Software()
    nccl_overrides: dict[NcclVariable, NcclValue] = Field(default_factory=dict)
    lifecycle: Lifecycle
    tags: dict[TagKey, TagValue] = Field(default_factory=dict)

    @field_validator("region", "zone")
    @classmethod
    def _region_shape(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[a-z]{2}-[a-z0-9-]{1,60}", value):
            raise ValueError(
                f"{_shown(value)} does not look like a region or zone id such as cn-beijing or ap-shanghai-5"
            )
        return value

    @field_validator("tags")
    @classmethod
    def _tags_fit_clouds(cls, tags: dict[str, str]) -> dict[str, str]:
        if len(tags) > MAX_USER_TAGS:
            raise ValueError(f"{len(tags)} tags; at most {MAX_USER_TAGS} (gpuctl adds its own, clouds allow 20)")
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
