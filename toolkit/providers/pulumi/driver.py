"""`PulumiStackDriver`: the ProviderDriver of a cloud driven through Pulumi's Automation API.

Everything in toolkit/providers/pulumi/ is the same on every cloud; a cloud's driver is a subclass
of `PulumiStackDriver` that says what differs (see "Extension points" below):
`toolkit/providers/alicloud/driver.py` and `toolkit/providers/tencentcloud/driver.py`.

- The cluster id, creation time and owner are pinned in the stack's config by the first `up`
  (pins.py).
- A later `up` refreshes the stack first (`pulumi refresh`): a reclaimed spot node, or an instance
  removed in the console, is seen as gone and recreated instead of reported alive.
- No second copy: before the first create, `up` asks the cloud for anything tagged
  `gpuctl:cluster=<name>` and refuses to build beside it (leftovers.py).
- `down` refreshes the stack (what the cloud already released leaves the state: a destroy would
  fail on it), destroys it, checks its state is empty, then asks the cloud for anything still
  tagged `gpuctl:cluster=<name>` (and `gpuctl:cluster-id=<id>` where the id is known) before
  removing the stack. Without the id, what it finds is reported as not provably this cluster's;
  gpuctl deletes nothing itself.
- Preflight: the Pulumi CLI (cli.py, `MIN_CLI`), the provider plugins (plugins.py), credentials,
  the state passphrase (backend.py) and what the cloud adds, every gap at once (exit 7).

Extension points" below). `toolkit/providers/alicloud/driver.py` is
the first; a Tencent Cloud driver is the same kind of subclass.

- State backend and secrets: where the state lives and the passphrase that protects it (backend.py).
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
- `down` refreshes the stack (what the cloud already released leaves the state: a destroy would
  fail on it), destroys it, checks its state is empty, then asks the cloud for anything still
  tagged `gpuctl:cluster=<name>` (and `gpuctl:cluster-id=<id>` where the id is known) before
  removing the stack. Without the id, what it finds is reported as not provably this cluster's;
  gpuctl deletes nothing itself.
- No Pulumi CLI: a MissingToolError (exit 7) with the install commands of the CLI and of the
  cloud's provider plugins; one older than `MIN_CLI` (3.181.0, which refresh and destroy with an
  inline program need), of another major version, or that does not say its version (`pulumi
  version`, bounded): exit 7 too, with the command that installs the SDK's version. Automation API
  exceptions become gpuctl errors with the useful lines.

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
  `cloud_leftovers(spec, region, cluster_id)` to search another way (a cloud SDK). `storage_leftovers(spec,
  region, cluster_id, kept_too=)`: once the storage stack is done, the volumes the cloud still holds that
  should be gone (default none); `query_leftovers(spec, region, program)` runs such a query program. Each item found
  has `line()` and `tagged_line()` (`FoundResource`).
- `removal_tool` (how the removal commands are run, e.g. "aliyun CLI") and
  `list_by_tag_command(region, cluster)`: words of the messages about leftovers.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

from toolkit import hints
from toolkit.errors import GpuctlError, MissingToolError, ProviderError
from toolkit.providers.base import ClusterOutputs, ProgressCallback
from toolkit.providers.pulumi.backend import passphrase_problem
from toolkit.providers.pulumi.cli import INSTALL_CLI, cli_version, cli_version_problem
from toolkit.providers.pulumi.leftovers import TagSearch
from toolkit.providers.pulumi.outputs import outputs_from_stack, stack_volumes
from toolkit.providers.pulumi.pins import (
    CONFIG_CLUSTER_ID,
    CONFIG_CREATED_AT,
    CONFIG_OWNER,
    CREATED_AT_FORMAT,
    OUT_CREATED_AT,
    StackPins,
    parse_created_at,
)
from toolkit.providers.pulumi.progress import ProgressReporter
from toolkit.providers.pulumi.stack_state import leftover_resources
from toolkit.providers.pulumi.storage import StorageStacks
from toolkit.providers.pulumi.workspace import region_of
from toolkit.providers.tags import TAG_CLUSTER, TAG_CLUSTER_ID, default_owner, new_cluster_id
from toolkit.spec.models import ClusterSpec


class PulumiStackDriver(StorageStacks, TagSearch):
    """ProviderDriver (toolkit/providers/base.py) for a cloud driven through Pulumi's Automation API.

    A cloud subclasses it and supplies the extension points listed in this module's docstring.
    """

    name: str  # an instance attribute to ProviderDriver; the same on every instance
    credential_pairs: ClassVar[tuple[tuple[str, str], ...]] = ()
    profile_envs: ClassVar[tuple[str, ...]] = ()

    def __init__(self, backend_url: str | None = None, clock: Callable[[], datetime] | None = None) -> None:
        super().__init__(backend_url, clock)
        self.kept = []
        self.deleted_storage = []

    # --------------------------------------------- what a cloud supplies

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

    # ------------------------------------------------------------ checks

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
        path = which("pulumi")
        if path is None:
            problems.append(f"the Pulumi CLI is not installed (no `pulumi` on PATH): install it with `{INSTALL_CLI}`")
        elif (cli := cli_version_problem(cli_version(path))) is not None:
            problems.append(f"{cli[0]}: {cli[1]}")
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

    # --------------------------------------------------------- interface

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
            self._refresh_before_destroy(stack, spec.name, progress)
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
