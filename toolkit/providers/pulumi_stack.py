"""Pulumi Automation API plumbing shared by the cloud drivers: one stack per cluster, named after it.

Everything here is the same on every cloud; a cloud's driver is a subclass of `PulumiStackDriver`
that says what differs (see "Extension points" below). `toolkit/providers/alicloud/driver.py` is
the first; a Tencent Cloud driver is the same kind of subclass.

- State backend: Pulumi's local file backend under `<gpuctl home>/clusters/<name>/pulumi` by
  default; any backend URL Pulumi takes (s3://, OSS through its S3-compatible endpoint,
  https://api.pulumi.com ...) from `--backend` (the driver's `backend_url`) or
  `GPUCTL_PULUMI_BACKEND`, the option first. A URL that carries a credential is refused, and
  never echoed: its user, password and credential parameters are masked in the message.
- Secrets: the passphrase provider (Pulumi's default off Pulumi Cloud), passphrase from
  `PULUMI_CONFIG_PASSPHRASE` / `PULUMI_CONFIG_PASSPHRASE_FILE`.
- Credentials: only from the environment; the Pulumi CLI and provider inherit them. The workspace
  gets no credential: not in its env_vars, Pulumi.yaml or the stack's config; error text and
  progress lines are scrubbed of their values (`toolkit.secrets.redact`).
- The cluster id (`gpuctl:clusterId`), creation time (`gpuctl:createdAt`) and owner
  (`gpuctl:owner`) are pinned in the stack's config by the first `up`, before Pulumi runs, and
  never change while the stack lives: a retry after a failed first `up` keeps the release time,
  another operator's `up` keeps the owner, two clusters of the same name differ by their id.
- A later `up` refreshes the stack first (`pulumi refresh`): a reclaimed spot node, or an instance
  removed in the console, is seen as gone and recreated instead of reported alive.
- No second copy: before the first create, `up` asks the cloud for anything tagged
  `gpuctl:cluster=<name>` and refuses to build beside it.
- `down` destroys the stack, checks its state is empty, then asks the cloud for anything still
  tagged `gpuctl:cluster=<name>` (and `gpuctl:cluster-id=<id>` where the id is known) before
  removing the stack. Without the id, what it finds is reported as not provably this cluster's;
  gpuctl deletes nothing itself.
- No Pulumi CLI: a MissingToolError (exit 7) with the install commands of the CLI and of the
  cloud's provider plugins. Automation API exceptions become gpuctl errors with the useful lines.

Extension points (class attributes and methods of `PulumiStackDriver` a cloud supplies):

- `name`: the spec's provider word (`alicloud`); `cloud`: what a user reads ("Alibaba Cloud").
- `project`: the Pulumi project name (`gpuctl-alicloud`), the same as `stacks/<cloud>/Pulumi.yaml`.
- `region_config_key`: the stack config key of the provider's region (`alicloud:region`).
- `plugins`: the `ProviderPlugin`s the program needs; each is named by its Python SDK package,
  whose `pulumi-plugin.json` (else the package's version) gives the plugin name, version and server.
- `credentials_problem(env, home)`: what is missing of the cloud's credentials, or None. The
  default accepts any pair of `credential_pairs` or a profile named in `profile_envs`.
- `preflight_problems(spec, env)`: anything else the cloud needs before the first call (default none).
- `first_create_checks(spec, progress)`: before the first create only, what the cloud's API can
  refuse before anything is bought (stock, quota); Tencent asks its SDK here.
- `program(spec, pins)`: the inline program of the cluster, decided before Pulumi runs (refuse
  bad input here, as gpuctl errors); `pins` holds the cluster id, creation time and owner.
- `storage_module`: the module holding the cloud's storage program (`StorageArgs`,
  `storage_program(args)`) for the `<cluster>_storage` stack; None builds none.
- `leftovers_program(cluster, cluster_id)` + `read_leftovers(values, region)`: the tag search as
  a Pulumi program of invokes only, run on a throwaway stack `<cluster>_leftovers`; or override
  `cloud_leftovers(spec, region, cluster_id)` to search another way (a cloud SDK). Each item found
  has `line()` and `tagged_line()` (`FoundResource`). `storage_leftovers(spec, region, cluster_id,
  kept_too=)`: once the storage stack is done, the volumes the cloud still holds that should be
  gone (default none); `query_leftovers(spec, region, program)` runs such a query program.
- `removal_tool` (how the removal commands are run, e.g. "aliyun CLI") and
  `list_by_tag_command(region, cluster)`: words of the messages about leftovers.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata, util
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol
from urllib.parse import unquote_plus, urlsplit, urlunsplit

from toolkit import hints
from toolkit.catalog.storage_prices import kept_price_note
from toolkit.errors import GpuctlError, MissingToolError, ProviderError, UsageError
from toolkit.files import expand_user, user_home
from toolkit.providers.base import ClusterOutputs, FabricInterface, NodeOutput, ProgressCallback, VolumeOutput
from toolkit.providers.tags import TAG_CLUSTER, TAG_CLUSTER_ID, default_owner, new_cluster_id
from toolkit.secrets import credential_names, redact
from toolkit.spec.models import ClusterSpec
from toolkit.state import cluster_dir, own_dir

if TYPE_CHECKING:
    from pulumi.automation import EngineEvent, LocalWorkspaceOptions, Stack

BACKEND_ENV = "GPUCTL_PULUMI_BACKEND"
PASSPHRASE_ENVS = ("PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE")
# Stack config gpuctl keeps (the same keys `stacks/<cloud>` reads by hand); never a credential.
CONFIG_CLUSTER_ID = "gpuctl:clusterId"
CONFIG_CREATED_AT = "gpuctl:createdAt"
CONFIG_OWNER = "gpuctl:owner"
CREATED_AT_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # UTC, the form both clouds' release-time APIs take
# Stack output an older gpuctl kept the creation time in, before it was pinned in the config.
OUT_CREATED_AT = "createdAt"
OUT_VOLUMES = "volumes"  # the storage stack's volumes, and the cluster stack's with their mount sources
OUT_INSTANCE_ROLE = "instanceRole"  # the RAM/CAM role the nodes carry, where the cluster stack made one
# All the Pulumi CLI gets from gpuctl on top of the environment it inherits.
WORKSPACE_ENV = {"PULUMI_SKIP_UPDATE_CHECK": "true"}
# Query parameters of a backend URL that carry a signature or a key (compared in lower case), and
# any other whose name says so. Azure SAS: with `sig` present, its other fields are part of it.
SECRET_PARAMS = frozenset({
    "sig", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token", "accesskeyid",
    "ossaccesskeyid", "security-token", "token", "key", "secret", "password", "credential", "sas",
})
SAS_PARAMS = frozenset({"sv", "ss", "srt", "sp", "se", "st", "spr", "sr", "si", "sdd", "skoid", "sktid",
                        "skt", "ske", "sks", "skv"})
_SECRET_PARAM = re.compile(r"secret|passw|token|access[_-]?key|credential|signature", re.IGNORECASE)
# Where a backend's credential belongs instead, by URL scheme.
CREDENTIAL_HOMES = {
    "s3": "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (for s3:// and for OSS through its S3 endpoint)",
    "https": "PULUMI_ACCESS_TOKEN (Pulumi Cloud)",
    "http": "PULUMI_ACCESS_TOKEN (Pulumi Cloud)",
    "azblob": "AZURE_STORAGE_KEY (azblob://)",
    "gs": "GOOGLE_CREDENTIALS (gs://)",
}
ALL_CREDENTIAL_HOMES = ("AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY for s3:// and OSS, PULUMI_ACCESS_TOKEN for "
                        "Pulumi Cloud, AZURE_STORAGE_KEY for azblob://")
INSTALL_CLI = "curl -fsSL https://get.pulumi.com | sh"
STACK_TYPE = "pulumi:pulumi:Stack"
PROVIDER_TYPE_PREFIX = "pulumi:providers:"
# The throwaway stack of the tag search is named so that no cluster can own it: cluster names are
# [a-z0-9-] (spec/models.py).
LEFTOVERS_STACK_SUFFIX = "_leftovers"
_VERBS = {
    "create": "creating", "update": "updating", "delete": "deleting", "replace": "replacing",
    "create-replacement": "creating replacement", "delete-replaced": "deleting replaced",
    "read": "reading", "refresh": "refreshing",
}


# ------------------------------------------------------------------------ provider plugins


@dataclass(frozen=True)
class ProviderPlugin:
    """A Pulumi resource plugin a cloud's program needs, known by the Python SDK that drives it.

    The SDK ships `pulumi-plugin.json` (name, and version or download server); where it states no
    version, the plugin's is the package's own, as the SDK itself resolves it (`_utilities`).
    Found without importing the SDK (a large package): `gpuctl --help` never pays for it.
    """

    package: str  # the SDK's import name: pulumi_alicloud, tencentcloud_iac_pulumi
    label: str  # what a user reads: "Alibaba Cloud"

    def _manifest(self) -> dict[str, Any]:
        found = util.find_spec(self.package)
        for folder in (found.submodule_search_locations or []) if found else []:
            with contextlib.suppress(OSError, ValueError):
                manifest = json.loads((Path(folder) / "pulumi-plugin.json").read_text())
                return manifest if isinstance(manifest, dict) else {}
        return {}

    @property
    def name(self) -> str:
        return str(self._manifest().get("name") or self.package.removeprefix("pulumi_"))

    @property
    def version(self) -> str | None:
        """The plugin version, or None when the SDK is not installed."""
        stated = self._manifest().get("version")
        if stated:
            return str(stated).removeprefix("v")
        try:
            return metadata.version(self.package)
        except metadata.PackageNotFoundError:
            return None

    def install_command(self) -> str:
        server = self._manifest().get("server")
        command = f"pulumi plugin install resource {self.name} {self.version or '<version>'}"
        return command + (f" --server {server}" if server else "")

    def problem(self, env: Mapping[str, str] | None = None) -> str | None:
        """None when the plugin of the installed SDK's version is in the plugin cache
        ($PULUMI_HOME/plugins, default ~/.pulumi/plugins)."""
        env = os.environ if env is None else env
        version = self.version
        if version is None:
            return (f"the {self.package} Python package is not installed: pip install -e . "
                    "(part of gpuctl's dependencies)")
        plugins = (expand_user(env["PULUMI_HOME"], where="PULUMI_HOME") if env.get("PULUMI_HOME")
                   else user_home() / ".pulumi") / "plugins"
        if (plugins / f"resource-{self.name}-v{version}").is_dir():
            return None
        return (f"the Pulumi provider plugin for {self.label} {version} is not in {plugins}: "
                f"install it with `{self.install_command()}` (needs network once)")


# ---------------------------------------------------------------------- backend and passphrase


def backend_url(spec: ClusterSpec, override: str | None = None, env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    url = override or env.get(BACKEND_ENV)
    if url:
        return check_backend_url(url)
    return f"file://{cluster_dir(spec.name) / 'pulumi'}"


def check_backend_url(url: str) -> str:
    """A backend URL goes into the workspace's Pulumi.yaml, progress lines and `status`: refuse one
    that carries a credential: any user or password in it, or a query parameter that carries a
    signature or a key (SECRET_PARAMS, case-insensitive, and look-alikes such as `secret_key`)."""
    parts = urlsplit(url)
    if not parts.scheme or "://" not in url:
        raise UsageError(
            f"'{_masked_userinfo(url)}' is not a Pulumi backend URL",
            hint="give one such as s3://bucket/path, s3://bucket?endpoint=oss-cn-beijing.aliyuncs.com "
            "(OSS), file:///path or https://api.pulumi.com",
        )
    userinfo = "@" in parts.netloc
    secret = _secret_params(parts.query)
    if userinfo or secret:
        what = (["a user name or password"] if userinfo else []) + (
            [f"the parameter(s) {', '.join(dict.fromkeys(secret))}"] if secret else []
        )
        home = CREDENTIAL_HOMES.get(parts.scheme.lower())
        raise UsageError(
            f"the backend URL {_masked_url(url)} carries a credential ({' and '.join(what)}); gpuctl keeps "
            "credentials out of URLs, files and logs",
            hint=f"remove it from the URL and export it instead: {home or ALL_CREDENTIAL_HOMES}",
        )
    return url


def _secret_params(query: str) -> list[str]:
    """The names (as written) of the query parameters that carry a credential."""
    names = [unquote_plus(raw.partition("=")[0]) for raw in query.split("&") if raw]
    lowered = {name.lower() for name in names}
    sas = "sig" in lowered
    return [
        name for name in names
        if name.lower() in SECRET_PARAMS or _SECRET_PARAM.search(name) or (sas and name.lower() in SAS_PARAMS)
    ]


def _masked_url(url: str) -> str:
    """`url` with its user/password and the values of credential parameters replaced by ***."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rpartition("@")[2]
    secret = set(_secret_params(parts.query))
    query = "&".join(
        f"{raw.partition('=')[0]}=***" if unquote_plus(raw.partition("=")[0]) in secret else raw
        for raw in parts.query.split("&")
    ) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _masked_userinfo(text: str) -> str:
    """Text that is not a URL, with anything before an `@` (it may be `key:secret@`) replaced."""
    return "***@" + text.rpartition("@")[2] if "@" in text else text


def passphrase_problem(url: str, env: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if env is None else env
    if url.startswith(("https://", "http://")):  # Pulumi Cloud / self-hosted service: its own secrets
        return None
    if any(name in env for name in PASSPHRASE_ENVS):
        return None
    return ("the Pulumi state passphrase is not set: export PULUMI_CONFIG_PASSPHRASE (or "
            "PULUMI_CONFIG_PASSPHRASE_FILE); it protects secrets in the state, and the same value is needed "
            "for every later up/down")


def require_passphrase(url: str, env: Mapping[str, str] | None = None) -> None:
    problem = passphrase_problem(url, env)
    if problem is not None:
        raise MissingToolError(problem, credentials=True)


def workspace_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The env_vars of the workspace: what the CLI needs from gpuctl, never a credential (those it
    inherits from the environment gpuctl runs in)."""
    env = {**WORKSPACE_ENV, **(extra or {})}
    leaked = set(credential_names(env))
    return {name: value for name, value in env.items() if name not in leaked}


# ---------------------------------------------------------------------------- errors


def missing_cli_error(cloud: str, plugins: tuple[ProviderPlugin, ...]) -> MissingToolError:
    then = ", then the provider with " + " and ".join(f"`{p.install_command()}`" for p in plugins) if plugins else ""
    return MissingToolError(
        f"the Pulumi CLI is not installed (no `pulumi` on PATH); gpuctl drives {cloud} through it",
        hint=f"install it with `{INSTALL_CLI}`{then}",
    )


def pulumi_failure(
    exc: BaseException, env: Mapping[str, str] | None = None, *, cloud: str = "the cloud",
    plugins: tuple[ProviderPlugin, ...] = (),
) -> GpuctlError:
    """Turn an Automation API exception into a gpuctl error with the useful part of the output."""
    text = redact(str(exc), env)
    if isinstance(exc, FileNotFoundError) or "executable file not found" in text:
        return missing_cli_error(cloud, plugins)
    for plugin in plugins:
        name = re.escape(plugin.name)
        if re.search(rf"no resource plugin '?(pulumi-resource-)?{name}|could not find plugin.*{name}", text):
            return MissingToolError(
                f"the Pulumi provider plugin for {plugin.label} is not installed",
                hint=f"install it with `{plugin.install_command()}` (needs network once)",
            )
    lines = _error_lines(text)
    message = "; ".join(lines) if lines else "pulumi failed without an error message"
    if "passphrase" in text and "incorrect" in text:
        return ProviderError(message, hint="PULUMI_CONFIG_PASSPHRASE differs from the one this stack was made with")
    if "conflict" in text.lower() and "update" in text.lower() and "progress" in text.lower():
        return ProviderError(message, hint="another up/down runs on this stack; wait, or `pulumi cancel`")
    return ProviderError(f"pulumi: {message}")


def _error_lines(text: str, limit: int = 8) -> list[str]:
    seen: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        match = re.search(r"\berror: (.*)", line)
        if match is None:
            continue
        found = match.group(1).strip()
        if found and found not in seen and not found.startswith("update failed"):
            seen.append(found)
    if seen:
        return seen[:limit]
    # CommandError's text is "code: N / stdout: ... / stderr: ...": keep the end of stderr.
    stderr = text.rsplit("stderr:", 1)[-1]
    tail = [line.strip() for line in stderr.splitlines() if line.strip()]
    return tail[-3:]


# ---------------------------------------------------------------------- state and outputs


def outputs_from_stack(spec: ClusterSpec, values: Mapping[str, Any]) -> ClusterOutputs:
    """Stack outputs (plain values, as `stack.outputs()` holds them) -> ClusterOutputs. Every cloud's
    program exports the same keys: cluster, fabric, mtu and nodes (name, pool, instance_id,
    instance_type, private_ip, public_ip, fabric_interfaces)."""
    nodes = values.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise ProviderError(
            f"stack {spec.name} has no node outputs",
            hint=f"`{hints.spec_command(spec.name, 'up')}` did not finish; run it again (it picks up where it stopped)",
        )
    if values.get("cluster") not in (None, spec.name):
        raise ProviderError(f"stack {spec.name} holds cluster {values.get('cluster')}, not {spec.name}")
    user = spec.ssh.user or "root"
    parsed: list[NodeOutput] = []
    for node in nodes:
        if not isinstance(node, Mapping):
            raise ProviderError(f"stack {spec.name}: a node output is not a mapping: {node!r}")
        public_ip = node.get("public_ip") or None
        private_ip = str(node["private_ip"])
        parsed.append(
            NodeOutput(
                name=str(node["name"]),
                pool=str(node["pool"]),
                instance_id=str(node["instance_id"]),
                instance_type=str(node["instance_type"]),
                private_ip=private_ip,
                public_ip=public_ip,
                ssh_host=public_ip or private_ip,
                # A cloud whose images log in as another user (Tencent's Ubuntu: ubuntu) says so per node.
                ssh_user=str(node.get("ssh_user") or user),
                fabric_interfaces=[FabricInterface.model_validate(i) for i in node.get("fabric_interfaces", [])],
            )
        )
    volumes = values.get(OUT_VOLUMES)
    # The cluster's instance role (RAM/CAM, the providers' roles.py), where the stack made one: the
    # object volumes are mounted with it (ossfs ram_role=, cosfs cam_role=).
    role = values.get(OUT_INSTANCE_ROLE)
    instance_role = str(role) if role else None
    return ClusterOutputs(
        cluster=spec.name,
        provider=spec.provider,
        fabric=values.get("fabric", spec.network.fabric),
        mtu=int(values.get("mtu", spec.network.mtu)),
        nodes=parsed,
        volumes=[volume_output(v, instance_role=instance_role) for v in volumes if isinstance(v, Mapping)]
        if isinstance(volumes, list) else [],
    )


def volume_output(value: Mapping[str, Any], *, instance_role: str | None = None) -> VolumeOutput:
    """A volume of the cluster stack's `volumes` output as the storage role mounts it; an object volume
    carries the cluster's `instance_role` (the stack's `instanceRole` output), its credentials. NFS v3 on
    both clouds: Tencent's CFS mount guide recommends vers=3 for metadata performance (its path is
    `/<fsid>`, https://www.tencentcloud.com/document/product/582/78755, updated 2026-04-08), and
    Alibaba's NAS mounts are `<mount target domain>:/` with vers=3 (docs/storage.md)."""
    kind = value.get("kind")
    fields: dict[str, Any] = {"name": value.get("name"), "kind": kind, "mount_path": value.get("mountPath")}
    if kind == "nas":
        source = str(value.get("mountSource") or "")
        nfs3_path = value.get("nfs3Path")
        if source and nfs3_path:
            source = f"{source.split(':', 1)[0]}:{nfs3_path}"
        fields.update(source=source or None, nfs_version="3")
    else:
        fields.update(bucket=value.get("bucket"), endpoint=value.get("endpoint"), instance_role=instance_role)
    try:
        return VolumeOutput.model_validate(fields)
    except ValueError as error:
        raise ProviderError(f"the stack's volume output {value.get('name')!r} is not usable: {error}") from None


def leftover_resources(deployment: Mapping[str, Any] | None, cluster: str) -> list[str]:
    """Cloud resources still in a stack's state after destroy: `type name`, tagged ones marked."""
    left = []
    resources = (deployment or {}).get("resources", []) or []
    for resource in resources if isinstance(resources, list) else []:
        if not isinstance(resource, Mapping):  # a damaged state's item: no resource of Pulumi's
            continue
        type_ = str(resource.get("type", ""))
        if type_ == STACK_TYPE or type_.startswith(PROVIDER_TYPE_PREFIX) or not resource.get("custom", True):
            continue
        name = str(resource.get("urn", "")).rsplit("::", 1)[-1]
        outputs, inputs = resource.get("outputs"), resource.get("inputs")
        tags = (outputs.get("tags") if isinstance(outputs, Mapping) else None) or \
            (inputs.get("tags") if isinstance(inputs, Mapping) else None) or {}
        mark = " (tagged gpuctl:cluster)" if isinstance(tags, Mapping) and tags.get(TAG_CLUSTER) == cluster else ""
        left.append(f"{type_} {name}{mark}")
    return left


def parse_created_at(value: Any) -> datetime | None:
    """Read back a pinned creation time (stack config or output); None when absent, unreadable, or
    outside the years a gpuctl run can mean (toolkit/timestamps.py: year 9999 is no creation time)."""
    from toolkit.timestamps import plausible

    if not isinstance(value, str) or not value:
        return None
    try:
        return plausible(datetime.strptime(value, CREATED_AT_FORMAT).replace(tzinfo=UTC))
    except ValueError:
        return None


def leftovers_stack_name(cluster: str) -> str:
    return f"{cluster}{LEFTOVERS_STACK_SUFFIX}"


class ProgressReporter:
    """Engine events -> one line per resource step: `creating <type> <name> ... done`."""

    def __init__(self, progress: ProgressCallback) -> None:
        self.progress = progress

    def __call__(self, event: EngineEvent) -> None:
        if event.resource_pre_event is not None:
            line = self._step(event.resource_pre_event.metadata)
            if line:
                self.progress(f"{line} ...")
        elif event.res_outputs_event is not None:
            line = self._step(event.res_outputs_event.metadata)
            if line:
                self.progress(f"{line} ... done")
        elif event.res_op_failed_event is not None:
            line = self._step(event.res_op_failed_event.metadata)
            if line:
                self.progress(f"{line} ... failed")
        elif event.diagnostic_event is not None and event.diagnostic_event.severity == "error":
            message = redact(event.diagnostic_event.message.strip())
            if message:
                self.progress(f"error: {message}")

    @staticmethod
    def _step(metadata: Any) -> str | None:
        op = getattr(metadata.op, "value", str(metadata.op))
        verb = _VERBS.get(op)
        if verb is None or metadata.type == STACK_TYPE or str(metadata.type).startswith(PROVIDER_TYPE_PREFIX):
            return None
        name = str(metadata.urn).rsplit("::", 1)[-1]
        return f"{verb} {metadata.type} {name}"


# ------------------------------------------------------------------------------- the driver


class FoundResource(Protocol):
    """A resource the tag search found: how a user reads it, and how to remove it."""

    def line(self) -> str: ...

    def tagged_line(self) -> str:
        """`line()` with the owner and cluster-id tags, for resources found by name alone."""
        ...


@dataclass(frozen=True)
class StackPins:
    """What the first `up` pinned in the stack's config and every later one reads back."""

    cluster_id: str
    created_at: datetime
    owner: str
    # The storage stack's `volumes` output (docs/storage.md), once it is up; None without storage.
    storage: tuple[Mapping[str, Any], ...] | None = None
    # Every output of the storage stack (plain values), once it is up: a cloud whose storage stack holds
    # more than the volumes reads it here (Tencent: the VPC and subnet of a created CFS).
    storage_outputs: Mapping[str, Any] | None = None


def stack_volumes(outputs: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """The storage stack's `volumes` output out of all its outputs (none where it exports none)."""
    values = outputs.get(OUT_VOLUMES)
    return tuple(v for v in values if isinstance(v, Mapping)) if isinstance(values, list) else ()


def storage_stack_name(cluster: str) -> str:
    """`<cluster>_storage`: a cluster name holds no '_', so no cluster's stack is named like it."""
    return f"{cluster}_storage"


class PulumiStackDriver:
    """ProviderDriver (toolkit/providers/base.py) for a cloud driven through Pulumi's Automation API.

    A cloud subclasses it and supplies the extension points listed in this module's docstring.
    """

    name: str  # an instance attribute to ProviderDriver; the same on every instance
    cloud: ClassVar[str]
    project: ClassVar[str]
    region_config_key: ClassVar[str]
    plugins: ClassVar[tuple[ProviderPlugin, ...]] = ()
    credential_pairs: ClassVar[tuple[tuple[str, str], ...]] = ()
    profile_envs: ClassVar[tuple[str, ...]] = ()
    removal_tool: ClassVar[str] = "the cloud's CLI"
    # The module of the cloud's storage program (its `StorageArgs` and `storage_program(args)`);
    # None: the cloud builds no storage stack.
    storage_module: ClassVar[str | None] = None

    kept: list[str]
    deleted_storage: list[str]

    def __init__(self, backend_url: str | None = None, clock: Callable[[], datetime] | None = None) -> None:
        self.kept = []
        self.deleted_storage = []
        self._backend_override = backend_url
        self._clock = clock or (lambda: datetime.now(UTC))

    # ------------------------------------------------------------------ what a cloud supplies

    @classmethod
    def credentials_problem(cls, env: Mapping[str, str] | None = None, home: Path | None = None) -> str | None:
        """What is missing of the cloud's credentials, or None: a pair or a profile name."""
        env = os.environ if env is None else env
        if any(env.get(key) and env.get(secret) for key, secret in cls.credential_pairs):
            return None
        if any(env.get(name) for name in cls.profile_envs):
            return None
        ways = [f"{key} and {secret}" for key, secret in cls.credential_pairs]
        ways += [f"{name}=<name>" for name in cls.profile_envs]
        return f"no {cls.cloud} credentials in the environment: export " + ", or ".join(ways)

    def preflight_problems(self, spec: ClusterSpec, env: Mapping[str, str]) -> list[str]:
        """Anything else the cloud needs before the first call; none by default."""
        return []

    def first_create_checks(self, spec: ClusterSpec, progress: ProgressCallback) -> None:
        """Before the first create only: what the cloud's API can tell before anything is bought (a
        type sold out in the zone, a quota too small); raise a gpuctl error to refuse. None by default."""

    def program(self, spec: ClusterSpec, pins: StackPins) -> Callable[[], None]:
        """The cluster's inline Pulumi program; everything decided here, before Pulumi runs."""
        raise NotImplementedError

    def storage_program(self, spec: ClusterSpec, pins: StackPins, *, unprotect: bool = False
                        ) -> Callable[[], None] | None:
        """The program of the cluster's storage stack; None when the cloud builds no storage stack
        or the spec names no volume. `unprotect` only for `down --delete-storage`."""
        if not spec.storage or self.storage_module is None:
            return None
        import importlib

        module = importlib.import_module(self.storage_module)
        args = module.StorageArgs.from_spec(spec, cluster_id=pins.cluster_id, owner=pins.owner, unprotect=unprotect)

        def program() -> None:
            module.storage_program(args)

        return program

    def leftovers_program(self, cluster: str, cluster_id: str | None) -> None:
        """A Pulumi program of invokes only that exports what is tagged with the cluster."""
        raise NotImplementedError

    def read_leftovers(self, values: Mapping[str, Any], region: str) -> list[FoundResource]:
        """The outputs of `leftovers_program` -> what was found; ValueError for an unusable answer."""
        raise NotImplementedError

    def list_by_tag_command(self, region: str, cluster: str) -> str:
        """A command that lists the cloud's instances tagged with the cluster's name."""
        raise NotImplementedError

    def storage_leftovers(self, spec: ClusterSpec, region: str, cluster_id: str, *, kept_too: bool
                          ) -> list[FoundResource]:
        """Once the storage stack is done: the volumes the cloud still holds tagged with the cluster
        that should be gone (kept ones too when `kept_too`); none by default (the stack's state is
        the only check)."""
        return []

    # ------------------------------------------------------------------------- checks

    def failure(self, exc: BaseException, env: Mapping[str, str] | None = None) -> GpuctlError:
        return pulumi_failure(exc, env, cloud=self.cloud, plugins=self.plugins)

    def require_cli(self, which: Callable[[str], str | None] = shutil.which) -> str:
        path = which("pulumi")
        if path is None:
            raise missing_cli_error(self.cloud, self.plugins)
        return path

    def require_credentials(self, env: Mapping[str, str] | None = None, home: Path | None = None) -> None:
        problem = self.credentials_problem(env, home)
        if problem is not None:
            raise MissingToolError(problem, credentials=True)

    def preflight(self, spec: ClusterSpec, url: str, *, env: Mapping[str, str] | None = None,
                  which: Callable[[str], str | None] = shutil.which, home: Path | None = None) -> None:
        """Check everything `up`/`down` need before the first call, and report every gap at once:
        exit 7 (MissingToolError) for the Pulumi CLI, a provider plugin, credentials, the state
        passphrase, or what the cloud adds (`preflight_problems`)."""
        env = os.environ if env is None else env
        problems = []
        if which("pulumi") is None:
            problems.append(f"the Pulumi CLI is not installed (no `pulumi` on PATH): install it with `{INSTALL_CLI}`")
        problems += [p for p in (plugin.problem(env) for plugin in self.plugins) if p is not None]
        secrets = [p for p in (self.credentials_problem(env, home), passphrase_problem(url, env)) if p is not None]
        problems += secrets
        problems += self.preflight_problems(spec, env)
        if problems:
            raise MissingToolError(
                f"{spec.name}: {len(problems)} thing(s) missing before gpuctl can reach {self.cloud}:\n  - "
                + "\n  - ".join(problems),
                hint="fix them all, then run the same command again; nothing was created",
                credentials=bool(secrets),
            )

    # ---------------------------------------------------------------------------- interface

    def up(self, spec: ClusterSpec, progress: ProgressCallback) -> ClusterOutputs:
        self.preflight(spec, self._backend(spec))
        stack = self._stack(spec, create=True)
        assert stack is not None
        config = self._config(stack)
        deployment = self._call(lambda: stack.export_stack()).deployment
        held = bool(leftover_resources(deployment, spec.name))
        # The cluster id, the creation time and the owner: from the stack's config, where the first
        # `up` put them; made now (and kept below, before Pulumi runs) when this is the first.
        pinned: dict[str, str] = {}
        cluster_id = config.get(CONFIG_CLUSTER_ID)
        if cluster_id is None:
            cluster_id = pinned[CONFIG_CLUSTER_ID] = new_cluster_id()
        created_at = parse_created_at(config.get(CONFIG_CREATED_AT))
        if created_at is None:
            # A stack made by an older gpuctl kept it in its outputs only.
            previous = self._call(lambda: stack.outputs()) if held else {}
            created_at = parse_created_at(getattr(previous.get(OUT_CREATED_AT), "value", None))
            created_at = created_at or self._clock().replace(microsecond=0)
            pinned[CONFIG_CREATED_AT] = f"{created_at.astimezone(UTC):{CREATED_AT_FORMAT}}"
        owner = config.get(CONFIG_OWNER)
        if owner is None:
            # A stack that holds resources already was tagged by an older gpuctl with the spec's owner
            # or its runner's name; from now on the value pinned here stays.
            owner = pinned[CONFIG_OWNER] = default_owner(spec)
        # Decided before Pulumi runs: catalog and spec refusals come out as gpuctl errors.
        program = self.program(spec, StackPins(cluster_id=cluster_id, created_at=created_at, owner=owner))
        if not held:
            # Before the first create: a copy of this cluster elsewhere (another backend, a lost
            # state) must not get a twin. (A stack that holds resources but no cluster id was made
            # by an older gpuctl: it is past its first create and takes an id now.)
            self._refuse_a_second_copy(spec, stack, brand_new=not config, progress=progress)
            try:
                self.first_create_checks(spec, progress)
            except GpuctlError:
                if not config:  # made by this run, holds nothing: not left behind in the backend
                    with contextlib.suppress(GpuctlError):
                        self._call(lambda: stack.workspace.remove_stack(spec.name))
                raise
        for key, value in {**pinned, self.region_config_key: region_of(spec)}.items():
            self._set_config(stack, key, value)
        storage = self._storage_up(spec, StackPins(cluster_id=cluster_id, created_at=created_at, owner=owner),
                                   progress)
        if storage is not None:
            program = self.program(spec, StackPins(cluster_id=cluster_id, created_at=created_at, owner=owner,
                                                   storage=stack_volumes(storage), storage_outputs=storage))
        if held:
            # Read the cloud first: without it Pulumi compares with its last state and would report a
            # reclaimed spot node (or one deleted in the console) as alive and leave it missing.
            progress(f"pulumi refresh: stack {spec.name}")
            self._call(lambda: stack.refresh(on_event=ProgressReporter(progress), color="never"))
        progress(f"pulumi up: stack {spec.name} (cluster id {cluster_id}) at {self._backend(spec)}")
        result = self._call(
            lambda: stack.up(program=program, on_event=ProgressReporter(progress), color="never")
        )
        return outputs_from_stack(spec, {key: value.value for key, value in result.outputs.items()})

    def outputs(self, spec: ClusterSpec) -> ClusterOutputs:
        stack = self._stack(spec, create=False)
        if stack is None:
            raise ProviderError(
                f"cluster {spec.name} has no stack at {self._backend(spec)}",
                hint=f"run `{hints.spec_command(spec.name, 'up')}` first",
            )
        values = self._call(lambda: stack.outputs())
        return outputs_from_stack(spec, {key: value.value for key, value in values.items()})

    def status(self, spec: ClusterSpec) -> dict[str, object]:
        backend = self._backend(spec)
        stack = self._stack(spec, create=False)
        if stack is None:
            return {"cluster": spec.name, "provider": self.name, "backend": backend, "exists": False}
        values = {key: value.value for key, value in self._call(lambda: stack.outputs()).items()}
        info = self._call(lambda: stack.info(show_secrets=False))
        nodes = values.get("nodes") if isinstance(values.get("nodes"), list) else []
        return {
            "cluster": spec.name,
            "provider": self.name,
            "backend": backend,
            "exists": True,
            "cluster_id": values.get("clusterId"),
            "nodes": [node.get("name") for node in nodes or [] if isinstance(node, Mapping)],
            "expires_at": values.get("expiresAt"),
            "created_at": values.get("createdAt"),
            "last_update": None if info is None else {"kind": info.kind, "result": info.result,
                                                       "end_time": str(info.end_time)},
        }

    def exists(self, spec: ClusterSpec) -> bool:
        """Whether the cluster has a stack at its backend (what `up` would pick up again)."""
        return self._stack(spec, create=False) is not None

    def revive(self, spec: ClusterSpec, progress: ProgressCallback) -> list[str]:
        """Nothing: gpuctl cannot restart a cloud node's daemons (the lab can; see base.py)."""
        return []

    def down(self, spec: ClusterSpec, progress: ProgressCallback, *, delete_storage: bool = False) -> bool:
        """Remove the cluster; its storage stack keeps the `keep_on_down` volumes unless
        `delete_storage` (which the CLI asks the operator to confirm with the cluster's name)."""
        removed = self._down_cluster(spec, progress)
        # A spec without storage looks for no storage stack (one left by an earlier spec is found
        # by `down --delete-storage`, which always looks).
        if spec.storage or delete_storage:
            self._storage_down(spec, progress, delete=delete_storage)
        return removed

    def _down_cluster(self, spec: ClusterSpec, progress: ProgressCallback) -> bool:
        self.preflight(spec, self._backend(spec))
        stack = self._stack(spec, create=False)
        cluster_id: str | None = None
        if stack is None:
            progress(f"no stack for {spec.name} at {self._backend(spec)}: nothing to destroy")
        else:
            cluster_id = self._config(stack).get(CONFIG_CLUSTER_ID)
            progress(f"pulumi destroy: stack {spec.name}")
            self._call(lambda: stack.destroy(on_event=ProgressReporter(progress), color="never"))
            # The stack's own state first: Pulumi records a resource as deleted only once the cloud
            # API confirmed it, so anything still listed was not deleted.
            deployment = self._call(lambda: stack.export_stack()).deployment
            left = leftover_resources(deployment, spec.name)
            if left:
                raise ProviderError(
                    f"destroy finished but {len(left)} resource(s) of {spec.name} remain in the stack: "
                    + ", ".join(left),
                    hint=f"run `{hints.spec_command(spec.name, 'down')}` again; if it persists, delete them in the "
                    "console and "
                    "`pulumi state delete`",
                )
        # Then the cloud itself, by tag: catches what was made outside the stack (a console click, a
        # lost state, an interrupted `up`). Runs when there is no stack too, so `down` re-verifies.
        region = region_of(spec)
        tagged = f"{TAG_CLUSTER}={spec.name}"
        if cluster_id is not None:
            tagged += f" and {TAG_CLUSTER_ID}={cluster_id}"
            progress(f"checking {region} for resources tagged {tagged}")
        else:
            why = "no stack holds it" if stack is None else "the stack was made by a gpuctl without cluster ids"
            progress(f"checking {region} for resources tagged {tagged} (the cluster id is unknown: {why})")
        cloud_left = self.cloud_leftovers(spec, region, cluster_id)
        if cloud_left and cluster_id is None:
            raise self._not_provably_ours(spec, region, cloud_left, stack_exists=stack is not None)
        if cloud_left:
            raise ProviderError(
                f"{len(cloud_left)} resource(s) tagged {tagged} are still in {region}:\n    "
                + "\n    ".join(item.line() for item in cloud_left),
                hint="they were made outside this stack, or their deletion has not finished; remove them with "
                f"the commands above ({self.removal_tool}, in that order) or in the console, then run "
                f"`{hints.spec_command(spec.name, 'down')}` again",
            )
        if stack is not None:
            self._call(lambda: stack.workspace.remove_stack(spec.name))
            progress(f"verified: no resource of {spec.name} in the stack or tagged in {region}; stack removed")
            return True
        progress(f"verified: no resource tagged {tagged} in {region}")
        return False

    # ------------------------------------------------------------------ the storage stack

    def _storage_stack(self, spec: ClusterSpec, *, create: bool) -> Stack | None:
        def no_program() -> None:
            raise ProviderError("internal: this stack was opened without a program")

        return self._open(storage_stack_name(spec.name), self._options(spec), create=create, program=no_program)

    def _storage_pins(self, stack: Stack, pins: StackPins) -> StackPins:
        """The storage stack's own id and owner, pinned at its first `up`: its volumes' tags stay the
        same while clusters of the same name come and go around them."""
        config = self._config(stack)
        cluster_id, owner = config.get(CONFIG_CLUSTER_ID), config.get(CONFIG_OWNER)
        if cluster_id is None:
            cluster_id = pins.cluster_id
            self._set_config(stack, CONFIG_CLUSTER_ID, cluster_id)
        if owner is None:
            owner = pins.owner
            self._set_config(stack, CONFIG_OWNER, owner)
        return StackPins(cluster_id=cluster_id, created_at=pins.created_at, owner=owner)

    def _storage_up(self, spec: ClusterSpec, pins: StackPins, progress: ProgressCallback
                    ) -> dict[str, Any] | None:
        """`up` the storage stack before the cluster's; its outputs (plain values), or None without one."""
        if not spec.storage or self.storage_module is None:
            return None
        stack = self._storage_stack(spec, create=True)
        assert stack is not None
        own = self._storage_pins(stack, pins)
        program = self.storage_program(spec, own)
        self._set_config(stack, self.region_config_key, region_of(spec))
        name = storage_stack_name(spec.name)
        progress(f"pulumi up: storage stack {name} ({len(spec.storage)} volume(s), kept by `down`: "
                 f"{', '.join(v.name for v in spec.storage if v.keep_on_down) or 'none'})")
        result = self._call(lambda: stack.up(program=program, on_event=ProgressReporter(progress), color="never"))
        return {key: value.value for key, value in result.outputs.items()}

    def _storage_down(self, spec: ClusterSpec, progress: ProgressCallback, *, delete: bool) -> None:
        """After the cluster is gone: delete the volumes not kept, say what was kept; with `delete`,
        everything (protect lifted first, then a destroy verified empty, then the stack removed)."""
        stack = self._storage_stack(spec, create=False)
        name = storage_stack_name(spec.name)
        if stack is None:
            if delete:
                progress(f"no storage stack {name}: no volume to delete")
            return
        config = self._config(stack)
        pins = StackPins(cluster_id=config.get(CONFIG_CLUSTER_ID) or new_cluster_id(),
                         created_at=self._clock().replace(microsecond=0),
                         owner=config.get(CONFIG_OWNER) or default_owner(spec))
        kept = [] if delete else [v for v in spec.storage if v.keep_on_down]
        if kept:
            program = self.storage_program(spec.model_copy(update={"storage": kept}), pins)
            assert program is not None
            gone = [v.name for v in spec.storage if not v.keep_on_down]
            if gone:
                progress(f"pulumi up: storage stack {name}: deleting the volumes not kept ({', '.join(gone)})")
                self._call(lambda: stack.up(program=program, on_event=ProgressReporter(progress), color="never"))
            self.kept = [f"kept {v.name} ({v.kind}, {v.mount_path}): it bills until removed"
                         f"{kept_price_note(spec.provider, v)}" for v in kept]
            progress(f"kept (keep_on_down): {', '.join(f'{v.name} ({v.kind}, {v.mount_path})' for v in kept)}; "
                     "they bill until removed: "
                     f"`{hints.spec_command(spec.name, 'down', '--delete-storage')}`")
            self._verify_storage_gone(spec, config.get(CONFIG_CLUSTER_ID), kept_too=False, progress=progress)
            return
        if delete:
            # Lift Pulumi's protect first: a destroy refuses protected resources, which is the point
            # of protect everywhere but here.
            program = self.storage_program(spec, pins, unprotect=True)
            if program is not None:
                progress(f"pulumi up: storage stack {name}: lifting protect before the delete")
                self._call(lambda: stack.up(program=program, on_event=ProgressReporter(progress), color="never"))
        progress(f"pulumi destroy: storage stack {name}")
        self._call(lambda: stack.destroy(on_event=ProgressReporter(progress), color="never"))
        left = leftover_resources(self._call(lambda: stack.export_stack()).deployment, spec.name)
        if left:
            raise ProviderError(
                f"destroy finished but {len(left)} storage resource(s) of {spec.name} remain: " + ", ".join(left),
                hint="a bucket that still holds objects is never emptied by gpuctl: empty it in the console, then "
                f"run `{hints.spec_command(spec.name, 'down', '--delete-storage')}` again",
            )
        self._call(lambda: stack.workspace.remove_stack(name))
        if delete:
            self.deleted_storage = [v.name for v in spec.storage] or [name]
        progress(f"storage stack {name} destroyed and removed")
        self._verify_storage_gone(spec, config.get(CONFIG_CLUSTER_ID), kept_too=delete, progress=progress)

    def _verify_storage_gone(self, spec: ClusterSpec, cluster_id: str | None, *, kept_too: bool,
                             progress: ProgressCallback) -> None:
        """The cloud's view after the storage stack: a volume its state no longer holds but the cloud
        does (an interrupted `up`, a lost state) is named with its removal command; gpuctl deletes none."""
        if cluster_id is None:
            return  # a storage stack without a pinned id: its volumes' tags cannot prove them ours
        region = region_of(spec)
        found = self.storage_leftovers(spec, region, cluster_id, kept_too=kept_too)
        if found:
            raise ProviderError(
                f"{len(found)} storage resource(s) tagged {TAG_CLUSTER}={spec.name} and {TAG_CLUSTER_ID}={cluster_id} "
                f"are still in {region} although the storage stack no longer holds them:\n    "
                + "\n    ".join(item.line() for item in found),
                hint=f"empty and remove them with the commands above ({self.removal_tool}) or in the console; "
                "gpuctl deletes no data itself",
            )

    # ------------------------------------------------------------------ cloud checks by tag

    def _refuse_a_second_copy(
        self, spec: ClusterSpec, stack: Stack, *, brand_new: bool, progress: ProgressCallback
    ) -> None:
        """Before the first create: refuse if anything tagged with the cluster's name is live in the
        cloud (a copy made through another backend or a lost state, or left by an interrupted `up`)."""
        region = region_of(spec)
        progress(f"checking {region} for an existing copy of {spec.name} (resources tagged {TAG_CLUSTER}={spec.name})")
        found = self.cloud_leftovers(spec, region, None)
        if not found:
            return
        if brand_new:
            # The stack was made by this run and holds nothing: do not leave it behind in a backend
            # that does not hold the cluster.
            with contextlib.suppress(GpuctlError):
                self._call(lambda: stack.workspace.remove_stack(spec.name))
        backend = self._backend(spec)
        raise ProviderError(
            f"cluster {spec.name} already exists in {region}: {len(found)} live resource(s) tagged "
            f"{TAG_CLUSTER}={spec.name} that the stack {spec.name} at {backend} does not hold:\n    "
            + "\n    ".join(item.tagged_line() for item in found),
            hint="gpuctl will not build a second copy beside it. If it is this cluster, adopt it: run gpuctl with "
            f"--backend (or {BACKEND_ENV}) pointing at the Pulumi state that created it, or bring each resource "
            "into this stack with `pulumi import`. If it is left over, remove it with the commands above "
            f"({self.removal_tool}, in that order), then run `{hints.spec_command(spec.name, 'up')}` again. "
            "If another team's cluster has this name "
            "(see the owner tags), give yours another `name:` in the spec",
        )

    def _not_provably_ours(
        self, spec: ClusterSpec, region: str, found: list[FoundResource], *, stack_exists: bool
    ) -> ProviderError:
        why = (
            "its stack holds no cluster id (made by an older gpuctl)" if stack_exists
            else f"there is no stack for {spec.name} at {self._backend(spec)} to hold its cluster id"
        )
        status = hints.command("status", hints.spec_path(spec.name), "--backend", "URL")
        down = hints.command("down", hints.spec_path(spec.name), "--backend", "URL")
        return ProviderError(
            f"{len(found)} resource(s) in {region} are tagged with this cluster's name ({TAG_CLUSTER}={spec.name}) "
            f"but not provably this cluster, since {why}:\n    "
            + "\n    ".join(item.tagged_line() for item in found),
            hint="they may be another team's cluster of the same name: gpuctl removes none of them. Check first: "
            f"compare the owner and cluster-id tags above with `{status}` (URL: the backend that created your "
            f"cluster; it shows its cluster_id), or list them with `{self.list_by_tag_command(region, spec.name)}`. "
            f"If they are yours, run `{down}` with that "
            f"backend's URL (--backend or {BACKEND_ENV}), or remove them with the commands above, in that order; "
            "if not, leave them alone",
        )

    def cloud_leftovers(self, spec: ClusterSpec, region: str, cluster_id: str | None) -> list[FoundResource]:
        """What the cloud holds tagged with the cluster (and its id, where known): by default, the
        tag-query program run on a throwaway stack beside the cluster's own."""
        return self.query_leftovers(spec, region, lambda: self.leftovers_program(spec.name, cluster_id))

    def query_leftovers(self, spec: ClusterSpec, region: str, program: Callable[[], None]) -> list[FoundResource]:
        """Run a tag-query `program` (invokes only) on the throwaway stack; its outputs through
        `read_leftovers`."""
        name = leftovers_stack_name(spec.name)
        check = self._open(name, self._options(spec), create=True, program=program)
        assert check is not None
        try:
            self._set_config(check, self.region_config_key, region)
            # A program without resources: `up` creates nothing and returns the invoke results as
            # outputs (a preview does not return outputs).
            result = self._call(lambda: check.up(color="never"))
        finally:
            # Only the stack's root and the provider are in its state, never a cloud resource: force.
            # An empty stack left behind is harmless; the next `down` reuses it.
            with contextlib.suppress(GpuctlError):
                self._call(lambda: check.workspace.remove_stack(name, force=True))
        values = {key: value.value for key, value in result.outputs.items()}
        try:
            return self.read_leftovers(values, region)
        except ValueError as exc:
            raise ProviderError(redact(f"the leftovers check of {spec.name} gave no usable answer: {exc}")) from None

    # ---------------------------------------------------------------------------- plumbing

    def _backend(self, spec: ClusterSpec) -> str:
        return backend_url(spec, self._backend_override)

    def _stack(self, spec: ClusterSpec, *, create: bool) -> Stack | None:
        """The cluster's stack; None when it does not exist and `create` is off."""

        def no_program() -> None:
            raise ProviderError("internal: this stack was opened without a program")

        return self._open(spec.name, self._options(spec), create=create, program=no_program)

    def _config(self, stack: Stack) -> dict[str, str]:
        """The stack's config as plain strings (`gpuctl:clusterId` ...). A secret someone set by hand
        keeps its key (the stack is not new) but not its value: gpuctl reads none of them."""
        values = self._call(lambda: stack.get_all_config()) or {}
        return {
            key: "<secret>" if value.secret else str(value.value)
            for key, value in values.items() if value.value not in (None, "")
        }

    def _set_config(self, stack: Stack, key: str, value: str) -> None:
        from pulumi.automation import ConfigValue

        config_value = ConfigValue(value=value)
        self._call(lambda: stack.set_config(key, config_value))

    def _options(self, spec: ClusterSpec) -> LocalWorkspaceOptions:
        self.require_cli()
        url = self._backend(spec)
        require_passphrase(url)
        from pulumi.automation import LocalWorkspaceOptions, ProjectBackend, ProjectSettings

        if url.startswith("file://"):
            own_dir(Path(url.removeprefix("file://")))
        work_dir = own_dir(cluster_dir(spec.name, create=True) / "pulumi-project")
        return LocalWorkspaceOptions(
            work_dir=str(work_dir),
            project_settings=ProjectSettings(name=self.project, runtime="python", backend=ProjectBackend(url)),
            secrets_provider=None if url.startswith(("https://", "http://")) else "passphrase",
            env_vars=workspace_env(),
        )

    def _open(
        self, name: str, options: LocalWorkspaceOptions, *, create: bool, program: Callable[[], None]
    ) -> Stack | None:
        from pulumi.automation import StackNotFoundError, create_or_select_stack, select_stack

        try:
            if create:
                return create_or_select_stack(name, project_name=self.project, program=program, opts=options)
            return select_stack(name, project_name=self.project, program=program, opts=options)
        except StackNotFoundError:
            return None
        except GpuctlError:
            raise
        except Exception as exc:  # FileNotFoundError, CommandError ... : say what Pulumi said
            raise self.failure(exc) from None

    def _call(self, action: Callable[[], Any]) -> Any:
        try:
            return action()
        except GpuctlError:
            raise
        except Exception as exc:
            raise self.failure(exc) from None


def refuse_storage_in_one_stack(spec: ClusterSpec) -> None:
    """For the hand-run stacks (stacks/<cloud>/__main__.py): a spec with shared volumes needs the
    storage stack beside the cluster's, which only `gpuctl up` builds, so that `pulumi destroy` of
    the cluster can never take the data (docs/storage.md)."""
    if spec.storage:
        raise UsageError(
            f"spec {spec.name} has storage volumes ({', '.join(v.name for v in spec.storage)}): they live in a "
            f"stack of their own ({storage_stack_name(spec.name)}) that a destroy of this one never touches, and "
            "only gpuctl builds the two",
            hint=f"run `{hints.spec_command(spec.name, 'up')}` instead of `pulumi up` in stacks/",
        )


def region_of(spec: ClusterSpec) -> str:
    if not spec.region:  # the schema requires it for clouds; a guard for a hand-made spec object
        raise UsageError(f"cluster {spec.name} names no region", hint="set `region:` in the spec")
    return spec.region
