"""`gpuctl up/status/outputs/down` for Alibaba Cloud, through Pulumi's Automation API.

The stack runs the same program as `stacks/alicloud` (an inline program building
`gpuctl:alicloud:GpuCluster`); the stack is named after the cluster.

- State backend: Pulumi's local file backend under `<gpuctl home>/clusters/<name>/pulumi` by
  default; any backend URL Pulumi takes (s3://, OSS through its S3-compatible endpoint,
  https://api.pulumi.com ...) from `--backend` (the driver's `backend_url`) or
  `GPUCTL_PULUMI_BACKEND`, the option first. A URL that carries a credential is refused.
- Secrets: the passphrase provider (Pulumi's default off Pulumi Cloud), passphrase from
  `PULUMI_CONFIG_PASSPHRASE` / `PULUMI_CONFIG_PASSPHRASE_FILE`.
- Credentials: only from the environment (`ALICLOUD_ACCESS_KEY` / `ALICLOUD_SECRET_KEY`, or a
  profile through `ALICLOUD_PROFILE`); the Pulumi CLI and provider inherit them. gpuctl never
  writes them, passes them as config, or prints them; error text is scrubbed of their values.
- The cluster id: the first `up` makes one (12 hex digits) and keeps it in the stack's config
  (`gpuctl:clusterId`); every taggable resource carries it as `gpuctl:cluster-id`, and it never
  changes while the stack lives. Two clusters of the same name (two teams, two backends) differ by it.
- The owner (`gpuctl:owner` tag) is pinned at the first `up` too (`gpuctl:owner`): another operator's
  later `up` keeps it instead of retagging everything with their local user name.
- A later `up` refreshes the stack first (`pulumi refresh`): a spot node the cloud reclaimed, or an
  instance removed in the console, is seen as gone and recreated instead of reported alive.
- The release time is anchored on the first `up`: its creation time goes into the stack's config
  (`gpuctl:createdAt`) before Pulumi runs, so a retry after a failed first `up` keeps it too.
- No second copy: before the first create (the stack holds no resource, or no cluster id), `up`
  asks the cloud for anything tagged `gpuctl:cluster=<name>` and refuses to build beside it.
- `down` destroys the stack, checks its state is empty, then asks the cloud for anything still
  tagged `gpuctl:cluster=<name>` and `gpuctl:cluster-id=<id>` (alicloud_leftovers.py, on a
  throwaway stack) before removing it. Without a stack the id is unknown: it asks by name, and
  reports what it finds as not provably this cluster's; gpuctl deletes nothing itself.
- The workspace gets no credential: not in its env_vars, Pulumi.yaml or the stack's config.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus, urlsplit, urlunsplit

from toolkit import hints
from toolkit.errors import GpuctlError, MissingToolError, ProviderError, UsageError
from toolkit.providers.alicloud_args import RELEASE_TIME_FORMAT, TAG_CLUSTER, TAG_CLUSTER_ID, new_cluster_id
from toolkit.providers.alicloud_leftovers import Leftover, find_leftovers, leftovers_program, leftovers_stack_name
from toolkit.providers.base import ClusterOutputs, FabricInterface, NodeOutput, ProgressCallback
from toolkit.secrets import credential_names, redact
from toolkit.spec.models import ClusterSpec
from toolkit.state import cluster_dir

if TYPE_CHECKING:
    from pulumi.automation import EngineEvent, LocalWorkspaceOptions, Stack

PROJECT_NAME = "gpuctl-alicloud"
BACKEND_ENV = "GPUCTL_PULUMI_BACKEND"
PASSPHRASE_ENVS = ("PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE")
# Key pairs the Alibaba provider reads from the environment; a profile stands for a pair.
CREDENTIAL_PAIRS = (
    ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY"),
    ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"),
)
PROFILE_ENVS = ("ALICLOUD_PROFILE", "ALIBABA_CLOUD_PROFILE")
# Stack config gpuctl keeps (the same keys `stacks/alicloud` reads by hand); never a credential.
CONFIG_CLUSTER_ID = "gpuctl:clusterId"
CONFIG_CREATED_AT = "gpuctl:createdAt"
CONFIG_OWNER = "gpuctl:owner"
CONFIG_REGION = "alicloud:region"
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
_VERBS = {
    "create": "creating", "update": "updating", "delete": "deleting", "replace": "replacing",
    "create-replacement": "creating replacement", "delete-replaced": "deleting replaced",
    "read": "reading", "refresh": "refreshing",
}


def plugin_install_command() -> str:
    try:
        version = metadata.version("pulumi_alicloud")
    except metadata.PackageNotFoundError:
        version = "<version>"
    return f"pulumi plugin install resource alicloud {version}"


def missing_cli_error() -> MissingToolError:
    return MissingToolError(
        "the Pulumi CLI is not installed (no `pulumi` on PATH); gpuctl drives Alibaba Cloud through it",
        hint=f"install it with `{INSTALL_CLI}`, then the provider with `{plugin_install_command()}`",
    )


def require_pulumi_cli(which: Callable[[str], str | None] = shutil.which) -> str:
    path = which("pulumi")
    if path is None:
        raise missing_cli_error()
    return path


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


def credentials_problem(env: Mapping[str, str] | None = None, home: Path | None = None) -> str | None:
    """What is missing for Alibaba Cloud credentials, or None: a key pair, or a named profile that
    exists in ~/.aliyun/config.json (the file the aliyun CLI and the provider read)."""
    env = os.environ if env is None else env
    if any(env.get(key) and env.get(secret) for key, secret in CREDENTIAL_PAIRS):
        return None
    profile = next((env[name] for name in PROFILE_ENVS if env.get(name)), None)
    if profile is None:
        return ("no Alibaba Cloud credentials in the environment: export ALICLOUD_ACCESS_KEY and "
                "ALICLOUD_SECRET_KEY (a RAM user's key), or ALICLOUD_PROFILE=<name> for a profile in "
                "~/.aliyun/config.json")
    config = (home or Path.home()) / ".aliyun" / "config.json"
    try:
        profiles = json.loads(config.read_text()).get("profiles") or []
        names = [str(p.get("name")) for p in profiles if isinstance(p, dict)]
    except (OSError, ValueError, AttributeError):
        return (f"ALICLOUD_PROFILE={profile}, but {config} cannot be read: create it with "
                f"`aliyun configure --profile {profile}`")
    if profile not in names:
        return (f"ALICLOUD_PROFILE={profile}, but {config} has no such profile (it has: "
                f"{', '.join(names) or 'none'}); create it with `aliyun configure --profile {profile}`")
    return None


def require_credentials(env: Mapping[str, str] | None = None, home: Path | None = None) -> None:
    problem = credentials_problem(env, home)
    if problem is not None:
        raise MissingToolError(problem)


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
        raise MissingToolError(problem)


def plugin_problem(env: Mapping[str, str] | None = None) -> str | None:
    """None when Pulumi's alicloud resource plugin of the installed SDK's version is in the plugin
    cache ($PULUMI_HOME/plugins, default ~/.pulumi/plugins)."""
    env = os.environ if env is None else env
    try:
        version = metadata.version("pulumi_alicloud")
    except metadata.PackageNotFoundError:
        return "the pulumi-alicloud Python package is not installed: pip install -e . (part of gpuctl's dependencies)"
    plugins = Path(env.get("PULUMI_HOME") or Path.home() / ".pulumi") / "plugins"
    if (plugins / f"resource-alicloud-v{version}").is_dir():
        return None
    return (f"the Pulumi provider plugin for Alibaba Cloud {version} is not in {plugins}: "
            f"install it with `{plugin_install_command()}` (needs network once)")


def preflight(spec: ClusterSpec, url: str, *, env: Mapping[str, str] | None = None,
              which: Callable[[str], str | None] = shutil.which, home: Path | None = None) -> None:
    """Check everything `up`/`down` need before the first call, and report every gap at once.

    Exit 7 (MissingToolError) for a missing tool or credential: the Pulumi CLI, its alicloud plugin,
    credentials (a named profile must exist), the state passphrase. The region and zone were
    checked by `validate`; Alibaba publishes no quota API gpuctl can read without one more SDK
    call, so quotas are left to the API's own error, which gpuctl reports with its message.
    """
    problems = []
    if which("pulumi") is None:
        problems.append(f"the Pulumi CLI is not installed (no `pulumi` on PATH): install it with `{INSTALL_CLI}`")
    problems += [p for p in (plugin_problem(env), credentials_problem(env, home), passphrase_problem(url, env))
                 if p is not None]
    if problems:
        raise MissingToolError(
            f"{spec.name}: {len(problems)} thing(s) missing before gpuctl can reach Alibaba Cloud:\n  - "
            + "\n  - ".join(problems),
            hint="fix them all, then run the same command again; nothing was created",
        )


def pulumi_failure(exc: BaseException, env: Mapping[str, str] | None = None) -> GpuctlError:
    """Turn an Automation API exception into a gpuctl error with the useful part of the output."""
    text = redact(str(exc), env)
    if isinstance(exc, FileNotFoundError) or "executable file not found" in text:
        return missing_cli_error()
    if re.search(r"no resource plugin '?(pulumi-resource-)?alicloud|could not find plugin.*alicloud", text):
        return MissingToolError(
            "the Pulumi provider plugin for Alibaba Cloud is not installed",
            hint=f"install it with `{plugin_install_command()}` (needs network once)",
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


def outputs_from_stack(spec: ClusterSpec, values: Mapping[str, Any]) -> ClusterOutputs:
    """Stack outputs (plain values, as `stack.outputs()` holds them) -> ClusterOutputs."""
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
                ssh_user=user,
                fabric_interfaces=[FabricInterface.model_validate(i) for i in node.get("fabric_interfaces", [])],
            )
        )
    return ClusterOutputs(
        cluster=spec.name,
        provider="alicloud",
        fabric=values.get("fabric", spec.network.fabric),
        mtu=int(values.get("mtu", spec.network.mtu)),
        nodes=parsed,
    )


def leftover_resources(deployment: Mapping[str, Any] | None, cluster: str) -> list[str]:
    """Cloud resources still in a stack's state after destroy: `type name`, tagged ones marked."""
    left = []
    for resource in (deployment or {}).get("resources", []) or []:
        type_ = str(resource.get("type", ""))
        if type_ == STACK_TYPE or type_.startswith(PROVIDER_TYPE_PREFIX) or not resource.get("custom", True):
            continue
        name = str(resource.get("urn", "")).rsplit("::", 1)[-1]
        tags = (resource.get("outputs") or {}).get("tags") or (resource.get("inputs") or {}).get("tags") or {}
        mark = " (tagged gpuctl:cluster)" if isinstance(tags, Mapping) and tags.get("gpuctl:cluster") == cluster else ""
        left.append(f"{type_} {name}{mark}")
    return left


def workspace_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The env_vars of the workspace: what the CLI needs from gpuctl, never a credential (those it
    inherits from the environment gpuctl runs in)."""
    env = {**WORKSPACE_ENV, **(extra or {})}
    leaked = set(credential_names(env))
    return {name: value for name, value in env.items() if name not in leaked}


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


def _region(spec: ClusterSpec) -> str:
    if not spec.region:  # the schema requires it for alicloud; a guard for a hand-made spec object
        raise UsageError(f"cluster {spec.name} names no region", hint="set `region:` in the spec")
    return spec.region


class AlicloudDriver:
    """ProviderDriver for `provider: alicloud` (see toolkit/providers/base.py)."""

    name = "alicloud"

    def __init__(self, backend_url: str | None = None, clock: Callable[[], datetime] | None = None) -> None:
        self._backend_override = backend_url
        self._clock = clock or (lambda: datetime.now(UTC))

    # ---------------------------------------------------------------------------- interface

    def up(self, spec: ClusterSpec, progress: ProgressCallback) -> ClusterOutputs:
        preflight(spec, self._backend(spec))
        stack = self._stack(spec, create=True)
        assert stack is not None
        from toolkit.catalog import load_catalog
        from toolkit.providers.alicloud import OUT_CREATED_AT, cluster_program, parse_created_at
        from toolkit.providers.alicloud_args import GpuClusterArgs, default_owner

        config = self._config(stack)
        deployment = self._call(lambda: stack.export_stack()).deployment
        held = bool(leftover_resources(deployment, spec.name))
        # The cluster id and the creation time: from the stack's config, where the first `up` put
        # them; made now (and kept below, before Pulumi runs) when this is the first.
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
            pinned[CONFIG_CREATED_AT] = f"{created_at.astimezone(UTC):{RELEASE_TIME_FORMAT}}"
        owner = config.get(CONFIG_OWNER)
        if owner is None:
            # A stack that holds resources already was tagged by an older gpuctl with the spec's owner
            # or its runner's name; from now on the value pinned here stays.
            owner = pinned[CONFIG_OWNER] = default_owner(spec)
        # Decided before Pulumi runs: catalog and spec refusals come out as gpuctl errors.
        args = GpuClusterArgs.from_spec(
            spec, load_catalog("alicloud"), now=self._clock(), created_at=created_at, cluster_id=cluster_id,
            owner=owner,
        )
        if not held:
            # Before the first create: a copy of this cluster elsewhere (another backend, a lost
            # state) must not get a twin. (A stack that holds resources but no cluster id was made
            # by an older gpuctl: it is past its first create and takes an id now.)
            self._refuse_a_second_copy(spec, stack, brand_new=not config, progress=progress)
        for key, value in {**pinned, CONFIG_REGION: args.region}.items():
            self._set_config(stack, key, value)

        def program() -> None:
            cluster_program(spec, args)

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

    def down(self, spec: ClusterSpec, progress: ProgressCallback) -> bool:
        preflight(spec, self._backend(spec))
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
        region = _region(spec)
        tagged = f"{TAG_CLUSTER}={spec.name}"
        if cluster_id is not None:
            tagged += f" and {TAG_CLUSTER_ID}={cluster_id}"
            progress(f"checking {region} for resources tagged {tagged}")
        else:
            why = "no stack holds it" if stack is None else "the stack was made by a gpuctl without cluster ids"
            progress(f"checking {region} for resources tagged {tagged} (the cluster id is unknown: {why})")
        cloud_left = self._cloud_leftovers(spec, region, cluster_id)
        if cloud_left and cluster_id is None:
            raise self._not_provably_ours(spec, region, cloud_left, stack_exists=stack is not None)
        if cloud_left:
            raise ProviderError(
                f"{len(cloud_left)} resource(s) tagged {tagged} are still in {region}:\n    "
                + "\n    ".join(item.line() for item in cloud_left),
                hint="they were made outside this stack, or their deletion has not finished; remove them with "
                "the commands above (aliyun CLI, in that order) or in the console, then run "
                f"`{hints.spec_command(spec.name, 'down')}` again",
            )
        if stack is not None:
            self._call(lambda: stack.workspace.remove_stack(spec.name))
            progress(f"verified: no resource of {spec.name} in the stack or tagged in {region}; stack removed")
            return True
        progress(f"verified: no resource tagged {tagged} in {region}")
        return False

    # ------------------------------------------------------------------ cloud checks by tag

    def _refuse_a_second_copy(
        self, spec: ClusterSpec, stack: Stack, *, brand_new: bool, progress: ProgressCallback
    ) -> None:
        """Before the first create: refuse if anything tagged with the cluster's name is live in the
        cloud (a copy made through another backend or a lost state, or left by an interrupted `up`)."""
        region = _region(spec)
        progress(f"checking {region} for an existing copy of {spec.name} (resources tagged {TAG_CLUSTER}={spec.name})")
        found = self._cloud_leftovers(spec, region, None)
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
            f"(aliyun CLI, in that order), then run `{hints.spec_command(spec.name, 'up')}` again. "
            "If another team's cluster has this name "
            "(see the owner tags), give yours another `name:` in the spec",
        )

    def _not_provably_ours(
        self, spec: ClusterSpec, region: str, found: list[Leftover], *, stack_exists: bool
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
            f"cluster; it shows its cluster_id), or list them with `aliyun ecs DescribeInstances --RegionId {region} "
            f"--Tag.1.Key {TAG_CLUSTER} --Tag.1.Value {spec.name}`. If they are yours, run `{down}` with that "
            f"backend's URL (--backend or {BACKEND_ENV}), or remove them with the commands above, in that order; "
            "if not, leave them alone",
        )

    def _cloud_leftovers(self, spec: ClusterSpec, region: str, cluster_id: str | None) -> list[Leftover]:
        """Run the tag-query program on a throwaway stack and read what it found."""
        name = leftovers_stack_name(spec.name)
        check = self._open(
            name, self._options(spec), create=True, program=lambda: leftovers_program(spec.name, cluster_id)
        )
        assert check is not None
        try:
            self._set_config(check, CONFIG_REGION, region)
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
            return find_leftovers(values, region)
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
        require_pulumi_cli()
        url = self._backend(spec)
        require_passphrase(url)
        from pulumi.automation import LocalWorkspaceOptions, ProjectBackend, ProjectSettings

        if url.startswith("file://"):
            Path(url.removeprefix("file://")).mkdir(parents=True, exist_ok=True, mode=0o700)
        work_dir = cluster_dir(spec.name, create=True) / "pulumi-project"
        work_dir.mkdir(exist_ok=True, mode=0o700)
        return LocalWorkspaceOptions(
            work_dir=str(work_dir),
            project_settings=ProjectSettings(name=PROJECT_NAME, runtime="python", backend=ProjectBackend(url)),
            secrets_provider=None if url.startswith(("https://", "http://")) else "passphrase",
            env_vars=workspace_env(),
        )

    @staticmethod
    def _open(
        name: str, options: LocalWorkspaceOptions, *, create: bool, program: Callable[[], None]
    ) -> Stack | None:
        from pulumi.automation import StackNotFoundError, create_or_select_stack, select_stack

        try:
            if create:
                return create_or_select_stack(name, project_name=PROJECT_NAME, program=program, opts=options)
            return select_stack(name, project_name=PROJECT_NAME, program=program, opts=options)
        except StackNotFoundError:
            return None
        except GpuctlError:
            raise
        except Exception as exc:  # FileNotFoundError, CommandError ... : say what Pulumi said
            raise pulumi_failure(exc) from None

    @staticmethod
    def _call(action: Callable[[], Any]) -> Any:
        try:
            return action()
        except GpuctlError:
            raise
        except Exception as exc:
            raise pulumi_failure(exc) from None
