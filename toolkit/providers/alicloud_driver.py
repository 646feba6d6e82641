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
- The release time is anchored on the first `up`: the stack exports `createdAt`, and a later `up`
  reads it back so it changes nothing.
- `down` destroys the stack, checks its state is empty, then asks the cloud for anything still
  tagged `gpuctl:cluster=<name>` (alicloud_leftovers.py, on a throwaway stack) before removing it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from toolkit.errors import GpuctlError, MissingToolError, ProviderError, UsageError
from toolkit.providers.alicloud_leftovers import Leftover, find_leftovers, leftovers_program, leftovers_stack_name
from toolkit.providers.base import ClusterOutputs, FabricInterface, NodeOutput, ProgressCallback
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
SECRET_ENVS = (
    "ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY", "ALICLOUD_SECURITY_TOKEN",
    "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN",
    "PULUMI_CONFIG_PASSPHRASE", "PULUMI_ACCESS_TOKEN",
)
_SECRET_PARAM = re.compile(r"secret|password|passwd|token|access[_-]?key|credential", re.IGNORECASE)
_SECRET_PARAM_VALUE = re.compile(
    r"([?&][^=&]*(?:secret|password|passwd|token|access[_-]?key|credential)[^=&]*)=[^&]*", re.IGNORECASE
)
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
    that carries a credential (a password in it, or a secret-looking query parameter)."""
    parts = urlsplit(url)
    if not parts.scheme or "://" not in url:
        raise UsageError(
            f"'{url}' is not a Pulumi backend URL",
            hint="give one such as s3://bucket/path, s3://bucket?endpoint=oss-cn-beijing.aliyuncs.com "
            "(OSS), file:///path or https://api.pulumi.com",
        )
    secret_params = [key for key, _ in parse_qsl(parts.query) if _SECRET_PARAM.search(key)]
    if parts.password is not None or secret_params:
        netloc = parts.netloc.rsplit("@", 1)[-1] if parts.password is None else "***@" + parts.netloc.rsplit("@", 1)[-1]
        shown = _SECRET_PARAM_VALUE.sub(r"\1=***", parts._replace(netloc=netloc).geturl())
        raise UsageError(
            f"the backend URL {shown} carries a credential; gpuctl keeps credentials out of URLs, files and logs",
            hint="remove it from the URL and export it instead: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY for "
            "s3:// and OSS, PULUMI_ACCESS_TOKEN for Pulumi Cloud, AZURE_STORAGE_KEY for azblob://",
        )
    return url


def require_credentials(env: Mapping[str, str] | None = None) -> None:
    env = os.environ if env is None else env
    if any(env.get(key) and env.get(secret) for key, secret in CREDENTIAL_PAIRS):
        return
    if any(env.get(name) for name in PROFILE_ENVS):
        return
    raise UsageError(
        "no Alibaba Cloud credentials in the environment",
        hint="export ALICLOUD_ACCESS_KEY and ALICLOUD_SECRET_KEY (a RAM user's key), or "
        "ALICLOUD_PROFILE=<name> for a profile in ~/.aliyun/config.json",
    )


def require_passphrase(url: str, env: Mapping[str, str] | None = None) -> None:
    env = os.environ if env is None else env
    if url.startswith(("https://", "http://")):  # Pulumi Cloud / self-hosted service: its own secrets
        return
    if not any(name in env for name in PASSPHRASE_ENVS):
        raise UsageError(
            "the Pulumi state passphrase is not set",
            hint="export PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE); it protects "
            "secrets in the state, and the same value is needed for every later up/down",
        )


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    for name in SECRET_ENVS:
        value = env.get(name)
        if value and len(value) >= 4:
            text = text.replace(value, f"<{name}>")
    return text


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
            hint="`gpuctl up` did not finish; run it again (it picks up where it stopped)",
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
        require_credentials()
        stack = self._stack(spec, create=True)
        assert stack is not None
        from toolkit.catalog import load_catalog
        from toolkit.providers.alicloud import OUT_CREATED_AT, cluster_program, parse_created_at
        from toolkit.providers.alicloud_args import GpuClusterArgs

        previous = self._call(lambda: stack.outputs())
        created_at = parse_created_at(getattr(previous.get(OUT_CREATED_AT), "value", None))
        # Decided before Pulumi runs: catalog and spec refusals come out as gpuctl errors.
        args = GpuClusterArgs.from_spec(spec, load_catalog("alicloud"), now=self._clock(), created_at=created_at)
        from pulumi.automation import ConfigValue

        region = ConfigValue(value=args.region)
        self._call(lambda: stack.set_config("alicloud:region", region))

        def program() -> None:
            cluster_program(spec, args)

        progress(f"pulumi up: stack {spec.name} at {self._backend(spec)}")
        result = self._call(
            lambda: stack.up(program=program, on_event=ProgressReporter(progress), color="never")
        )
        return outputs_from_stack(spec, {key: value.value for key, value in result.outputs.items()})

    def outputs(self, spec: ClusterSpec) -> ClusterOutputs:
        stack = self._stack(spec, create=False)
        if stack is None:
            raise ProviderError(
                f"cluster {spec.name} has no stack at {self._backend(spec)}", hint="run `gpuctl up` first"
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
            "nodes": [node.get("name") for node in nodes or [] if isinstance(node, Mapping)],
            "expires_at": values.get("expiresAt"),
            "last_update": None if info is None else {"kind": info.kind, "result": info.result,
                                                       "end_time": str(info.end_time)},
        }

    def down(self, spec: ClusterSpec, progress: ProgressCallback) -> None:
        require_credentials()
        stack = self._stack(spec, create=False)
        if stack is None:
            progress(f"no stack for {spec.name} at {self._backend(spec)}: nothing to destroy")
        else:
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
                    hint="run `gpuctl down` again; if it persists, delete them in the console and "
                    "`pulumi state delete`",
                )
        # Then the cloud itself, by tag: catches what was made outside the stack (a console click, a
        # lost state, an interrupted `up`). Runs when there is no stack too, so `down` re-verifies.
        region = _region(spec)
        progress(f"checking {region} for resources tagged gpuctl:cluster={spec.name}")
        cloud_left = self._cloud_leftovers(spec, region)
        if cloud_left:
            raise ProviderError(
                f"{len(cloud_left)} resource(s) tagged gpuctl:cluster={spec.name} are still in {region}:\n    "
                + "\n    ".join(item.line() for item in cloud_left),
                hint="they were made outside this stack, or their deletion has not finished; remove them with "
                "the commands above (aliyun CLI, in that order) or in the console, then run `gpuctl down` again",
            )
        if stack is not None:
            self._call(lambda: stack.workspace.remove_stack(spec.name))
            progress(f"verified: no resource of {spec.name} in the stack or tagged in {region}; stack removed")
        else:
            progress(f"verified: no resource tagged gpuctl:cluster={spec.name} in {region}")

    def _cloud_leftovers(self, spec: ClusterSpec, region: str) -> list[Leftover]:
        """Run the tag-query program on a throwaway stack and read what it found."""
        name = leftovers_stack_name(spec.name)
        check = self._open(name, self._options(spec), create=True, program=lambda: leftovers_program(spec.name))
        assert check is not None
        from pulumi.automation import ConfigValue

        region_value = ConfigValue(value=region)
        try:
            self._call(lambda: check.set_config("alicloud:region", region_value))
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
            raise ProviderError(f"the leftovers check of {spec.name} gave no usable answer: {exc}") from None

    # ---------------------------------------------------------------------------- plumbing

    def _backend(self, spec: ClusterSpec) -> str:
        return backend_url(spec, self._backend_override)

    def _stack(self, spec: ClusterSpec, *, create: bool) -> Stack | None:
        """The cluster's stack; None when it does not exist and `create` is off."""

        def no_program() -> None:
            raise ProviderError("internal: this stack was opened without a program")

        return self._open(spec.name, self._options(spec), create=create, program=no_program)

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
            env_vars={"PULUMI_SKIP_UPDATE_CHECK": "true"},
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
