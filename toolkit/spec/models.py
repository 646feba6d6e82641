"""Pydantic models of the cluster spec (`cluster.yaml`).

Everything a cluster needs is in one file; unknown keys are refused (`extra="forbid"`) so a typo
never silently becomes a default. Checks that need the instance catalog live in
`toolkit.catalog.checks`, not here: this module knows only the shape of a spec.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
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
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from toolkit.characters import first_control
from toolkit.spec.duration import parse_duration
from toolkit.vocabulary import (
    CLUSTER_NAME_PATTERN,
    NCCL_VARIABLE_MAX,
    NCCL_VARIABLE_PATTERN,
    REGION_ID_PATTERN,
    FabricName,
    ProviderName,
)

# Defined once, in the light vocabulary module (the CLI's choices come from the same types).
Provider = ProviderName
Fabric = FabricName
BillingMode = Literal["pay_as_you_go", "spot", "monthly"]

# `gpuctl image build` bakes in a cluster named bake-<image>, and removes one it finds left by an
# interrupted bake: a spec may not take such a name, so that can never be somebody's cluster.
BAKE_PREFIX = "bake-"


def _not_a_bake(value: str) -> str:
    if value.startswith(BAKE_PREFIX):
        raise ValueError(f"names starting with {BAKE_PREFIX!r} are kept for gpuctl image build's own clusters")
    return value


ClusterName = Annotated[str, StringConstraints(pattern=CLUSTER_NAME_PATTERN), AfterValidator(_not_a_bake)]
PoolName = Annotated[str, StringConstraints(pattern=r"^[a-z]([a-z0-9-]{0,14}[a-z0-9])?$")]
# At most 128 characters: NCCL's longest variable has 48, and a nccl.conf line must stay far below the
# 4,095 bytes NCCL 2.30 reads as one line (src/misc/param.cc, setEnvFile: fgets into char[4096]).
NcclVariable = Annotated[str, StringConstraints(pattern=NCCL_VARIABLE_PATTERN, max_length=NCCL_VARIABLE_MAX)]

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
# Characters a terminal or a line-based file format treats as structure, or that are not seen, are
# refused by the one rule of toolkit/characters.py (Unicode Cc, Cf, Zl, Zp, Cs).
_PLAIN_NUMBER = re.compile(r"-[0-9]+(\.[0-9]+)?")
MAX_TEXT = 256
MAX_PATH = 4096
MAX_NAME = 255  # bytes in one path component (NAME_MAX)
# NCCL copies at most 1,023 bytes of a value out of nccl.conf (src/misc/param.cc, setEnvFile:
# strncpy(envValue, ..., 1023) in 2.26.2 and 2.30.7) and silently drops the rest.
MAX_NCCL_VALUE = 1023


def check_text(value: str, *, max_length: int = MAX_TEXT, allow_negative_number: bool = False) -> str:
    """Refuse template markers, control characters and option-looking values; return `value`."""
    for marker in TEMPLATE_MARKERS:
        if marker in value:
            raise ValueError(
                f"contains a template marker '{marker}'; spec values are data and are never evaluated, "
                "so write the literal value"
            )
    control = first_control(value)
    if control is not None:
        raise ValueError(
            f"contains a control character U+{ord(control):04X}; write the value on one line "
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


def check_nccl_text(value: str) -> str:
    """The text rules of an NCCL value (spec and `gpuctl tune --set` alike): one line, no template
    markers, no option-looking text but a negative number, no blanks around it, at most
    MAX_NCCL_VALUE bytes."""
    check_text(value, max_length=MAX_NCCL_VALUE, allow_negative_number=True)
    if value != value.strip():
        raise ValueError("has blanks at its start or end, which NCCL would keep as part of the value (it reads "
                         "nccl.conf values verbatim); remove them")
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > MAX_NCCL_VALUE:
        raise ValueError(f"is {size} bytes long in UTF-8; NCCL reads at most {MAX_NCCL_VALUE} bytes of a value")
    return value


def _nccl_value(value: object) -> str | int | bool:
    if isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        if value.strip().lower() in _BOOL_WORDS:
            raise ValueError(f"{_shown(value)} is ambiguous; NCCL reads numbers, so write 1 or 0 (or true/false)")
        return check_nccl_text(value)
    raise ValueError(
        f"must be text, a whole number or true/false, not {type(value).__name__} {_shown(value)}; "
        "quote it if it is text"
    )


def nccl_text(value: str | int | bool) -> str:
    """An nccl_overrides value as NCCL reads it: YAML's true/false become 1/0, numbers become text."""
    return ("1" if value else "0") if isinstance(value, bool) else str(value)


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


# --- node_pools[].capture: a directory on the host whose files the lab copies into its nodes ---
# A capture bundle is a folder of saved command outputs (examples/captures/h100-roce-node). gpuctl
# runs the lab as root and copies the folder's files into every node's root, so a capture path that
# names a system tree, a home or a folder of keys is refused: its files (/etc/shadow, ~/.ssh/id_*)
# would land in the nodes. Refused with everything below them: the pseudo file systems and the
# trees of the OS, its packages, logs and caches (/usr/local is where checkouts live: only it and
# its bin/, lib/ ... are refused). Refused themselves (a folder inside is fine): the root, the homes,
# a service's state directory (/var/lib/<service>: Jenkins keeps its workspaces below its own), and
# the scratch and mount points that hold everyone's files.
CAPTURE_REFUSED_TREES = (
    "/proc", "/sys", "/dev", "/run", "/etc", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
    "/snap", "/lost+found", "/var/log", "/var/cache", "/var/spool", "/var/mail", "/var/run", "/var/backups",
)
CAPTURE_REFUSED_DIRS = ("/", "/home", "/root", "/tmp", "/var", "/var/tmp", "/var/lib", "/opt", "/mnt", "/media",
                        "/srv", "/usr", "/usr/local")
# One level below these is refused too: a user's home, a service's state, a /usr or /usr/local tree.
CAPTURE_REFUSED_CHILDREN = ("/home", "/var/lib", "/usr", "/usr/local")
# Folders of credentials, wherever they are: never a capture bundle, never inside one's path.
CAPTURE_SECRET_FOLDERS = frozenset(
    {".ssh", ".gnupg", ".aws", ".kube", ".docker", ".pulumi", ".gpuctl", "pki", "secrets"}
)


def capture_path_problem(value: str) -> str | None:
    """Why `value` cannot name a capture bundle, or None. Pure: the path as written (an absolute one
    normalised); the lab checks the directory itself on disk, with its real path, before reading it."""
    if value.startswith("~") and "/" not in value:
        return f"{_shown(value)} is a home; name the folder of capture files itself"
    if any(part in CAPTURE_SECRET_FOLDERS for part in value.split("/")):
        return (f"{_shown(value)} lies in a folder of credentials; a capture bundle holds saved command "
                "outputs, never keys")
    if not value.startswith("/"):
        return None  # relative to the spec file: checked once resolved
    normal = "/" + posixpath.normpath(value).lstrip("/")
    usr_tree = normal.startswith("/usr/") and not normal.startswith("/usr/local/")
    for tree in CAPTURE_REFUSED_TREES + (("/usr",) if usr_tree else ()):
        if normal == tree or normal.startswith(tree + "/"):
            return (f"{_shown(value)} lies in {tree}, a tree of the system, whose files would be copied into "
                    "every lab node; name a folder of capture files such as examples/captures/h100-roce-node")
    parent = posixpath.dirname(normal)
    if normal in CAPTURE_REFUSED_DIRS or parent in CAPTURE_REFUSED_CHILDREN:
        return (f"{_shown(value)} is {'the root' if normal == '/' else 'a home, a shared or a system folder'}, "
                "whose files would be copied into every lab node; name a folder of capture files such as "
                "examples/captures/h100-roce-node")
    return None


def _capture_path(value: Path) -> Path:
    problem = capture_path_problem(str(value))
    if problem is not None:
        raise ValueError(problem)
    return value


CapturePath = Annotated[Path, AfterValidator(_check_path), AfterValidator(_capture_path)]


GpuStack = Literal["install", "image"]


class NodePool(_Strict):
    name: PoolName
    instance_type: Annotated[str, _text(128)] = Field(min_length=1)
    count: StrictInt = Field(ge=1, le=512)
    # An image id (m-..., img-...) or a gpuctl alias: ubuntu_22_04, ubuntu_24_04,
    # alinux_3 (Alibaba Cloud Linux 3), tencentos_3. Local lab: debian_12.
    image: Annotated[str, _text(128)] = "ubuntu_22_04"
    # Where the GPU stack (driver, CUDA, NCCL) comes from. install: gpuctl installs the pins of
    # `software` from NVIDIA's repositories (and keeps a preinstalled driver only when it is the
    # pinned one). image: the image carries it (a cloud GPU image, one made with the console's
    # "install GPU driver automatically", or one you built): gpuctl installs no driver, keeps the
    # versions the image has and says which, and installs CUDA / NCCL by pin only where the image
    # has none. A node whose image has no loaded driver is refused, named with the reason. (An
    # installed eRDMA stack is kept on either path: the erdma role installs only where it is missing.)
    gpu_stack: GpuStack = "install"
    system_disk: Disk = Disk()
    billing: Billing = Billing()
    # Local lab only: the real capture bundle each node of this pool replays in place of a GPU
    # host (a directory of nvidia-smi / ibv_devinfo outputs).
    capture: CapturePath | None = None


# The widest admin_cidr accepted without allow_world_ssh: an IPv4 /8 (16.7 million addresses, a
# whole 10/8). admin_cidr is IPv4 only: gpuctl's nodes have IPv4 addresses only (an IPv4 VPC, a
# public IPv4 address) and the SSH rule goes into the clouds' IPv4 fields, Alibaba's SecurityGroupRule
# `cidr_ip` ("Only IPv4 is supported"; IPv6 is `ipv6_cidr_ip`, pulumi-alicloud ecs/security_group_rule.py)
# and Tencent's GroupRuleSet ingress `cidr_block` (IPv6 is `ipv6_cidr_block`, tencentcloud-iac-pulumi
# security/_inputs.py).
WIDEST_ADMIN_PREFIX = 8
IPV4_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")  # RFC 4291 2.5.5.2: an IPv4 address inside IPv6


def _ipv6_admin_problem(admin: ipaddress.IPv6Network) -> str:
    if admin.subnet_of(IPV4_MAPPED):
        mapped = admin.network_address.ipv4_mapped
        assert mapped is not None  # inside ::ffff:0:0/96
        ipv4 = ipaddress.IPv4Network((mapped, admin.prefixlen - 96))
        return (f"admin_cidr {admin} is an IPv4-mapped IPv6 range, the IPv4 range {ipv4} written in IPv6; "
                f"the SSH rule gpuctl creates is an IPv4 rule, so write the IPv4 form, admin_cidr: {ipv4}")
    return (f"admin_cidr {admin} is an IPv6 range; the nodes gpuctl creates have IPv4 addresses only and their "
            "SSH rule is an IPv4 rule (the clouds keep IPv6 sources in other fields), so give the IPv4 range "
            "you connect from (e.g. 203.0.113.0/24)")


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
        if isinstance(admin, ipaddress.IPv6Network):
            raise ValueError(_ipv6_admin_problem(admin))
        if admin.prefixlen == 0 and not self.allow_world_ssh:
            raise ValueError(
                f"admin_cidr {self.admin_cidr} opens SSH to the whole internet; set it to your "
                "office or VPN range (e.g. 203.0.113.0/24), or set allow_world_ssh: true if you "
                "really mean it"
            )
        if admin.prefixlen < WIDEST_ADMIN_PREFIX and not self.allow_world_ssh:
            raise ValueError(
                f"admin_cidr {self.admin_cidr} opens SSH to {admin.num_addresses:,} addresses, a range wider than "
                f"/{WIDEST_ADMIN_PREFIX}; set it to your office or VPN range (e.g. 203.0.113.0/24), or set "
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


# The newest driver branch whose package names the nvidia_driver role was read against (its
# vars/Ubuntu.yml and vars/RedHat.yml: NVIDIA's packaging repos and driver installation guide for
# 525-575). A newer branch is refused by validate rather than installed under names that may not exist.
NEWEST_DRIVER_BRANCH = 575


class Software(_Strict):
    # Pinned so that two clusters built a month apart are the same. NCCL 2.26 and CUDA 12.8 need
    # a 570-series driver (CUDA 12.8 release notes: minimum driver 570.26).
    driver: Version = "570.133.20"
    cuda: Version = "12.8"
    nccl: Version = "2.26.2"
    # nccl-tests releases the nccl_tests role holds a SHA-256 for: 2.13.6, 2.16.3, 2.17.6.
    nccl_tests: Version = "2.16.3"
    # Tencent's TCCL (its NCCL-based library for the HCC RDMA network), installed by the nccl role on
    # the Tencent families it is documented for (validate refuses others; the package needs a SHA-256
    # the operator supplies, playbooks/roles/nccl/README.md).
    tccl: StrictBool = False

    @field_validator("driver")
    @classmethod
    def _driver_branch_the_roles_know(cls, value: str) -> str:
        branch = int(value.split(".")[0])
        if branch > NEWEST_DRIVER_BRANCH:
            raise ValueError(
                f"{value} is of the {branch} branch, and the nvidia_driver role knows NVIDIA's package names up to "
                f"the {NEWEST_DRIVER_BRANCH} branch only: from 580 on NVIDIA's packaging changes (the driver "
                "installation guide's nvidia-open packages and version locks, Fabric Manager's EL package), which "
                "the role has not been read against; pin a 570-series driver (the default is 570.133.20)"
            )
        return value


IdleAction = Literal["stop", "release"]
IdleSignal = Literal["gpu", "ssh_sessions", "processes"]
MAX_COMMAND = 1024


class Lifecycle(_Strict):
    # How long the cluster may live. Backed by the clouds' own timed release, so a forgotten
    # cluster stops billing even if nobody runs `gpuctl down`.
    ttl: Annotated[str, _text(64)]
    # The node-side agent (playbooks/roles/lifecycle, docs/lifecycle.md) is installed only when
    # one of idle_stop_minutes and on_interruption is set.
    idle_stop_minutes: StrictInt | None = Field(default=None, ge=10, le=7 * 24 * 60)
    # After idle_stop_minutes of idleness: stop in the no-charge mode (Alibaba StopCharging,
    # Tencent STOP_CHARGING; disks are kept and still billed), or release the instance.
    idle_action: IdleAction = "stop"
    # What counts as use besides the GPUs' utilisation, which always counts: logged-in sessions
    # (`who`) and processes holding a GPU (nvidia-smi's compute apps).
    idle_signals: list[IdleSignal] = Field(default_factory=lambda: list[IdleSignal](["gpu"]), max_length=3)
    # The one spec value that runs as a command: the node's agent runs it with /bin/sh -c, as
    # root, on the node only, when the cloud gives a spot instance its termination notice. It is
    # the user's own choice of command, written into a root-only file by the lifecycle role; it is
    # never a template and never runs on the operator's machine. Same rules as all free text.
    on_interruption: Annotated[str, _text(MAX_COMMAND)] | None = None
    # The shared volume the interruption hook gets as GPUCTL_CHECKPOINT_DIR (its mount path); by
    # default the only volume when the spec has exactly one.
    checkpoint_volume: Annotated[str, AfterValidator(_volume_name)] | None = None

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

    @field_validator("idle_signals")
    @classmethod
    def _signals_once(cls, value: list[str]) -> list[str]:
        repeated = sorted({signal for signal in value if value.count(signal) > 1})
        if repeated:
            raise ValueError(f"idle_signals lists {', '.join(repeated)} more than once")
        # The GPUs' utilisation always counts; written or not, it comes first.
        return ["gpu", *(signal for signal in value if signal != "gpu")]

    @field_validator("on_interruption")
    @classmethod
    def _command_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("on_interruption is blank; write the command to run, or leave the key out")
        return value

    @model_validator(mode="after")
    def _idle_fields_need_idle_stop(self) -> Lifecycle:
        if self.idle_stop_minutes is None:
            stray = sorted({"idle_action", "idle_signals"} & self.model_fields_set)
            if stray:
                verb = "applies" if len(stray) == 1 else "apply"
                raise ValueError(f"{' and '.join(stray)} only {verb} with idle_stop_minutes (minutes of idleness)")
        return self

    @property
    def ttl_delta(self) -> timedelta:
        return parse_duration(self.ttl)

    @property
    def agent_wanted(self) -> bool:
        """Does this cluster get the node-side lifecycle agent?"""
        return self.idle_stop_minutes is not None or self.on_interruption is not None


# --- Shared storage (issue 15) ------------------------------------------------------------------
# Volumes outlive the cluster by default: they live in their own Pulumi stack, which `down` never
# destroys (docs/storage.md). Only the shape is checked here; the provider's own rules (bucket name
# length on Tencent, storage classes, file system id forms) are checked in ClusterSpec._storage_fits_provider.
StorageKind = Literal["nas", "object"]
MAX_VOLUMES = 8
VOLUME_NAME = re.compile(r"[a-z]([a-z0-9-]{0,14}[a-z0-9])?")  # the pool-name rule
# A mount path is written into /etc/fstab and systemd mount unit names on every node: plain
# characters only, so that no escaping (fstab's \040, systemd's \x2d) ever changes what is mounted.
MOUNT_PATH = re.compile(r"/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")
# A volume mounted on (or under) one of these would hide what the OS, the GPU stack or the login
# need: /opt holds gpuctl's own software (/opt/gpuctl) and Tencent's TCCL. /var is refused whole,
# /var/lib/<x> too: it holds the package manager's, cloud-init's and container runtimes' state of
# one node, which must never be shared between nodes.
SYSTEM_DIRECTORIES = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/lost+found", "/opt", "/proc",
    "/root", "/run", "/sbin", "/snap", "/sys", "/tmp", "/usr", "/var",
)
# /home itself and a user's home (/home/ubuntu holds the login's authorized_keys) are refused;
# a folder inside a home (/home/ubuntu/data) is not.
HOME = "/home"
# OSS (https://www.alibabacloud.com/help/en/oss/user-guide/bucket-naming-conventions, read 2026-03-20):
# 3-63 lower-case letters, digits and '-', starting and ending with a letter or digit. The same form
# is S3-compatible, so the lab's object store takes it too; COS adds a length rule (below).
BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")
# COS (https://www.tencentcloud.com/document/product/436/13312, read 2026): the full name is
# <BucketName>-<APPID>, and "<BucketName>-<APPID>.cos.<region>.myqcloud.com" is at most 60 characters.
COS_DOMAIN_MAX = 60
COS_APPID_DIGITS = 10  # every APPID Tencent issues today (125xxxxxxx, 13xxxxxxxx)
COS_BUCKET = re.compile(r"(?P<name>[a-z0-9][a-z0-9-]*[a-z0-9]|[a-z0-9])-(?P<appid>[0-9]{5,12})")
# The performance classes gpuctl creates, per cloud. Alibaba NAS general-purpose (FileSystem
# storage_type, pulumi-alicloud 4.0 nas/file_system.py); Tencent CFS general series (cfs/file_system.py:
# SD standard, HP high-performance). Neither has a size to choose: both bill by the GiB used. The
# Turbo/extreme/CPFS classes need a capacity and another client and are not offered.
STORAGE_TYPES = {"alicloud": ("Performance", "Capacity"), "tencentcloud": ("SD", "HP")}
DEFAULT_STORAGE_TYPE = {"alicloud": "Performance", "tencentcloud": "SD"}
# File system ids: Alibaba NAS "31a8e4****" (standard) or "extreme-00b8****"; Tencent "cfs-xxxxxxxx".
FILE_SYSTEM_ID = {
    "alicloud": (re.compile(r"[0-9a-z]([0-9a-z-]{2,62}[0-9a-z])"), "such as 31a8e48b9c or extreme-00b88c2e"),
    "tencentcloud": (re.compile(r"cfs-[0-9a-z]{4,32}"), "such as cfs-3pkq3pgr"),
}


def _volume_name(value: str) -> str:
    if not VOLUME_NAME.fullmatch(value):
        raise ValueError(
            f"{_shown(value)} is not a valid volume name: use 1-16 lower-case letters, digits and '-', "
            "starting with a letter"
        )
    return value


def mount_path_problem(value: str) -> str | None:
    """Why `value` cannot be a volume's mount path, or None."""
    if not value.startswith("/"):
        return f"{_shown(value)} is not an absolute path; write it from / (e.g. /mnt/data)"
    parts = value.split("/")[1:]
    if ".." in parts or "." in parts:
        return f"{_shown(value)} contains '.' or '..'; write the path itself (e.g. /mnt/data)"
    if value == "/":
        return "/ is the root of every node's file system; mount volumes under a folder such as /mnt/data"
    # posixpath keeps a leading "//" (POSIX leaves its meaning open); a mount path never has one.
    normal = "/" + posixpath.normpath(value).lstrip("/")
    if normal != value:
        return f"{_shown(value)} is not a normalised path; write {_shown(normal)}"
    if not MOUNT_PATH.fullmatch(value):
        return (
            f"{_shown(value)} may hold only letters, digits, '.', '_' and '-' between its '/' (it is written "
            "into /etc/fstab and systemd unit names on every node)"
        )
    if any(len(part) > MAX_NAME for part in parts) or len(value) > MAX_PATH:
        return f"{_shown(value)} is longer than a file system allows"
    for system in SYSTEM_DIRECTORIES:
        if value == system or value.startswith(system + "/"):
            return (
                f"{value} would hide {system}, which the system or gpuctl needs on every node; "
                "mount volumes under a folder of their own such as /mnt/data or /data"
            )
    if value == HOME or (value.startswith(HOME + "/") and value.count("/") == 2):
        return (
            f"{value} would hide the login's home (and its ~/.ssh/authorized_keys); "
            "mount under a folder of its own such as /mnt/data or /home/<user>/data"
        )
    return None


def _mount_path(value: str) -> str:
    problem = mount_path_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _bucket_name(value: str) -> str:
    if not BUCKET_NAME.fullmatch(value):
        raise ValueError(
            f"{_shown(value)} is not a bucket name the clouds accept: 3-63 lower-case letters, digits and '-', "
            "starting and ending with a letter or digit (e.g. llm-checkpoints)"
        )
    return value


def _nested(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith(outer.rstrip("/") + "/")


VolumeName = Annotated[str, _text(64), AfterValidator(_volume_name)]
MountPath = Annotated[str, _text(MAX_PATH), AfterValidator(_mount_path)]
BucketName = Annotated[str, _text(64), AfterValidator(_bucket_name)]


class StorageVolume(_Strict):
    """One shared volume, mounted at the same path on every node: created by gpuctl, or `existing`."""

    name: VolumeName
    kind: StorageKind
    mount_path: MountPath
    # Kept by `down` (the default): only `gpuctl down --delete-storage` removes a created volume.
    keep_on_down: StrictBool = True
    # A volume made elsewhere: a file system id (nas) or a full bucket name (object; on Tencent with
    # its -<APPID>). gpuctl never creates, changes or deletes it.
    existing: Annotated[str, _text(128)] | None = None
    # kind object, created: the bucket's name (on Tencent the part before -<APPID>); default <cluster>-<name>.
    bucket: BucketName | None = None
    # kind nas, created: the cloud's performance class (alicloud Performance|Capacity, tencentcloud SD|HP).
    storage_type: Annotated[str, _text(32)] | None = None

    @model_validator(mode="after")
    def _fields_fit_kind(self) -> StorageVolume:
        if self.existing is not None:
            for field in ("bucket", "storage_type"):
                if getattr(self, field) is not None:
                    raise ValueError(f"{field} is only for a volume gpuctl creates; an existing one keeps its own")
        if self.kind == "object" and self.storage_type is not None:
            raise ValueError("storage_type is only for kind: nas (a bucket has no performance class here)")
        if self.kind == "nas" and self.bucket is not None:
            raise ValueError("bucket is only for kind: object; a nas volume is named by the volume's name")
        if self.kind == "object" and self.existing is not None and not BUCKET_NAME.fullmatch(self.existing):
            raise ValueError(
                f"existing {_shown(self.existing)} is not a bucket name: 3-63 lower-case letters, digits and '-', "
                "starting and ending with a letter or digit"
            )
        return self

    def bucket_name(self, cluster: str) -> str:
        """kind object: the bucket gpuctl creates, or the existing one (as the spec names it)."""
        return self.existing or self.bucket or f"{cluster}-{self.name}"


def _error(loc: tuple[str | int, ...], value: object, reason: str) -> InitErrorDetails:
    """One problem at `loc` inside the list being validated (the loader prints "Value error, ..." bare)."""
    return InitErrorDetails(
        type=PydanticCustomError("value_error", "Value error, {reason}", {"reason": reason}), loc=loc, input=value
    )


def storage_problems(
    volumes: list[StorageVolume], *, provider: str | None, region: str | None, cluster: str | None
) -> list[InitErrorDetails]:
    """What the provider refuses in `volumes`, and paths or names used twice; each at its field."""
    found: list[InitErrorDetails] = []
    for i, volume in enumerate(volumes):
        for j, other in enumerate(volumes[:i]):
            if other.name == volume.name:
                found.append(_error((i, "name"), volume.name, f"volume name {volume.name} is used by storage[{j}] too"))
            if _nested(volume.mount_path, other.mount_path) or _nested(other.mount_path, volume.mount_path):
                found.append(
                    _error(
                        (i, "mount_path"), volume.mount_path,
                        f"{volume.mount_path} overlaps storage[{j}].mount_path {other.mount_path}; "
                        "give each volume a folder of its own, neither inside the other",
                    )
                )
        if provider == "local":
            if volume.kind == "nas":
                found.append(
                    _error(
                        (i, "kind"), volume.kind,
                        "kind nas is not available on provider local: the lab has no kernel NFS; "
                        "use kind: object (the lab's S3-compatible store)",
                    )
                )
            continue
        if provider not in STORAGE_TYPES:
            continue
        if volume.kind == "nas" and volume.storage_type is not None:
            allowed = STORAGE_TYPES[provider]
            if volume.storage_type not in allowed:
                found.append(
                    _error(
                        (i, "storage_type"), volume.storage_type,
                        f"{_shown(volume.storage_type)} is not a {provider} file system class; use one of "
                        f"{', '.join(allowed)}",
                    )
                )
        if volume.kind == "nas" and volume.existing is not None:
            pattern, example = FILE_SYSTEM_ID[provider]
            if not pattern.fullmatch(volume.existing):
                found.append(
                    _error(
                        (i, "existing"), volume.existing,
                        f"{_shown(volume.existing)} is not a {provider} file system id ({example})",
                    )
                )
        if volume.kind == "object" and provider == "tencentcloud" and cluster is not None:
            problem = _cos_problem(volume, region=region, cluster=cluster)
            if problem is not None:
                field = "existing" if volume.existing is not None else "bucket"
                found.append(_error((i, field), getattr(volume, field), problem))
    return found


def _cos_problem(volume: StorageVolume, *, region: str | None, cluster: str) -> str | None:
    name = volume.bucket_name(cluster)
    if volume.existing is not None:
        match = COS_BUCKET.fullmatch(name)
        if match is None:
            return f"{_shown(name)} is not a full COS bucket name; write <name>-<APPID>, e.g. ckpt-1250000000"
        full = name
        hint = "use a shorter bucket"
    else:
        full = f"{name}-{'0' * COS_APPID_DIGITS}"
        hint = "set a shorter bucket:" if volume.bucket is not None else "set bucket: to a shorter name"
    if region is None:
        return None
    domain = f"{full}.cos.{region}.myqcloud.com"
    if len(domain) > COS_DOMAIN_MAX:
        room = COS_DOMAIN_MAX - (len(domain) - len(name))
        return (
            f"COS bucket {_shown(name)} is too long for {region}: <name>-<APPID>.cos.{region}.myqcloud.com may "
            f"have at most {COS_DOMAIN_MAX} characters, so the name at most {room}; {hint}"
        )
    return None


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
    # After name, provider and region: its checks read them.
    storage: list[StorageVolume] = Field(default_factory=list, max_length=MAX_VOLUMES)

    @field_validator("region", "zone")
    @classmethod
    def _region_shape(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(REGION_ID_PATTERN, value):
            raise ValueError(
                f"{_shown(value)} does not look like a region or zone id such as cn-beijing or ap-shanghai-5"
            )
        return value

    @field_validator("nccl_overrides")
    @classmethod
    def _overrides_are_values(cls, overrides: dict[str, str | int | bool]) -> dict[str, str | int | bool]:
        # Each refusal points at its own key (pydantic keeps the locations, under this field's).
        from toolkit.tuning.variables import setting_problem

        problems = [_error((name,), value, problem) for name, value in overrides.items()
                    if (problem := setting_problem(name, nccl_text(value))) is not None]
        if problems:
            raise ValidationError.from_exception_data("nccl_overrides", problems)
        return overrides

    @field_validator("tags")
    @classmethod
    def _tags_fit_clouds(cls, tags: dict[str, str]) -> dict[str, str]:
        if len(tags) > MAX_USER_TAGS:
            raise ValueError(f"{len(tags)} tags; at most {MAX_USER_TAGS} (gpuctl adds its own, clouds allow 20)")
        return tags

    @field_validator("storage")
    @classmethod
    def _storage_fits_provider(cls, volumes: list[StorageVolume], info: ValidationInfo) -> list[StorageVolume]:
        # Raised as a ValidationError so that each problem points at its volume's field, not at
        # `storage:` (pydantic keeps the locations, under this field's).
        problems = storage_problems(
            volumes, provider=info.data.get("provider"), region=info.data.get("region"), cluster=info.data.get("name")
        )
        if problems:
            raise ValidationError.from_exception_data("storage", problems)
        return volumes

    @model_validator(mode="after")
    def _checkpoint_volume_exists(self) -> ClusterSpec:
        named = self.lifecycle.checkpoint_volume
        if named is not None and named not in {v.name for v in self.storage}:
            raise ValueError(f"lifecycle.checkpoint_volume {named} is not a volume of storage "
                             f"({', '.join(v.name for v in self.storage) or 'none'})")
        return self

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
        return {key: nccl_text(value) for key, value in self.nccl_overrides.items()}
