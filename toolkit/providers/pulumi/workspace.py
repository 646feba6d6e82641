"""The workspace of every stack gpuctl opens, one stack per cluster, named after it: the workspace's
options (the CLI checked, the backend, the passphrase, the secrets provider, its environment),
opening and selecting stacks, their config, and every Automation API call turned into a gpuctl error
(failure.py). `StackWorkspace` is the base of `PulumiStackDriver` (driver.py).

Credentials: only from the environment; the Pulumi CLI and provider inherit them. The workspace
gets no credential: not in its env_vars, Pulumi.yaml or the stack's config; error text and progress
lines are scrubbed of their values (`toolkit.secrets.redact`).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from toolkit.errors import GpuctlError, MissingToolError, ProviderError, UsageError
from toolkit.providers.base import ProgressCallback
from toolkit.providers.pulumi.backend import backend_url, require_passphrase
from toolkit.providers.pulumi.cli import WORKSPACE_ENV, cli_version, cli_version_problem, missing_cli_error
from toolkit.providers.pulumi.failure import pulumi_failure
from toolkit.providers.pulumi.plugins import ProviderPlugin
from toolkit.providers.pulumi.progress import ProgressReporter
from toolkit.secrets import credential_names
from toolkit.spec.models import ClusterSpec
from toolkit.state import cluster_dir, own_dir

if TYPE_CHECKING:
    from pulumi.automation import LocalWorkspaceOptions, Stack


def workspace_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The env_vars of the workspace: what the CLI needs from gpuctl, never a credential (those it
    inherits from the environment gpuctl runs in)."""
    env = {**WORKSPACE_ENV, **(extra or {})}
    leaked = set(credential_names(env))
    return {name: value for name, value in env.items() if name not in leaked}


def region_of(spec: ClusterSpec) -> str:
    if not spec.region:  # the schema requires it for clouds; a guard for a hand-made spec object
        raise UsageError(f"cluster {spec.name} names no region", hint="set `region:` in the spec")
    return spec.region


class StackWorkspace:
    """What every stack operation of a cloud's driver stands on; the cloud names itself in the class
    attributes (driver.py lists them with the other extension points)."""

    cloud: ClassVar[str]
    project: ClassVar[str]
    region_config_key: ClassVar[str]
    plugins: ClassVar[tuple[ProviderPlugin, ...]] = ()
    removal_tool: ClassVar[str] = "the cloud's CLI"  # how the removal commands of messages are run

    def __init__(self, backend_url: str | None = None, clock: Callable[[], datetime] | None = None) -> None:
        self._backend_override = backend_url
        self._clock = clock or (lambda: datetime.now(UTC))

    # ------------------------------------------------ the CLI and errors

    def failure(self, exc: BaseException, env: Mapping[str, str] | None = None) -> GpuctlError:
        return pulumi_failure(exc, env, cloud=self.cloud, plugins=self.plugins)

    def require_cli(self, which: Callable[[str], str | None] = shutil.which) -> str:
        """The Pulumi CLI's path; exit 7 when there is none, or one gpuctl cannot drive (MIN_CLI)."""
        path = which("pulumi")
        if path is None:
            raise missing_cli_error(self.cloud, self.plugins)
        problem = cli_version_problem(cli_version(path))
        if problem is not None:
            raise MissingToolError(problem[0], hint=problem[1])
        return path

    # ------------------------------------------------------------ stacks

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

    def _refresh_before_destroy(self, stack: Stack, name: str, progress: ProgressCallback) -> None:
        """`pulumi refresh` before a `down` changes the stack: what the cloud already released (the TTL's
        timed release, a spot reclaim, an expired monthly instance, the console) leaves the state, since
        each provider's read drops what its API no longer finds (terraform-provider-tencentcloud v1.82.42
        services/cvm/resource_tc_instance.go:1171, terraform-provider-alicloud v1.289.0
        alicloud/resource_alicloud_instance.go:1303). Without it the destroy asks the cloud to delete what
        is gone: Tencent's TerminateInstances answers InvalidInstanceId.NotFound (resource_tc_instance.go:
        2433), and so does the ModifyInstanceChargeType that Alibaba's delete of a monthly instance sends
        first (resource_alicloud_instance.go:2659; only a pay-as-you-go delete passes NotFound by, :2690),
        and the destroy stops with the network, group, HPC cluster, key and role still there.

        The stack's workspace carries the same inline program as the destroy (the Automation API runs
        both through it, hence MIN_CLI); neither runs it. A refresh that fails does not stop the
        destroy: the destroy from the last state is what `down` did before, and its own error says
        more than the refresh's."""
        progress(f"pulumi refresh: stack {name} (what the cloud already released leaves the state)")
        try:
            self._call(lambda: stack.refresh(on_event=ProgressReporter(progress), color="never"))
        except GpuctlError as error:
            progress(f"pulumi refresh of {name} failed, so the destroy works from the last state: {error.message}")
