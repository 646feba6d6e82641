"""`gpuctl up/status/outputs/down` for Alibaba Cloud, through Pulumi's Automation API.

The stack runs the same program as `stacks/alicloud` (an inline program building
`gpuctl:alicloud:GpuCluster`); the stack is named after the cluster. Backend, passphrase, the
pinned cluster id / creation time / owner, refresh before up and down, the no-second-copy check, `down`'s
verification, progress and error mapping are the shared plumbing of `toolkit/providers/pulumi/`;
this module says what is Alibaba's:

- Credentials: only from the environment (`ALICLOUD_ACCESS_KEY` / `ALICLOUD_SECRET_KEY`, or a
  profile through `ALICLOUD_PROFILE` that must exist in ~/.aliyun/config.json).
- The program: `GpuClusterArgs.from_spec` (catalog and spec refusals before Pulumi runs), then
  `cluster_program`; the region goes into the stack config as `alicloud:region`.
- The tag search (`leftovers.py`): invokes of pulumi-alicloud's data sources on a throwaway stack;
  what it finds comes with the aliyun CLI command that removes it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from toolkit.errors import GpuctlError, MissingToolError
from toolkit.files import FileError, read_text_bounded, user_home
from toolkit.providers.alicloud.leftovers import find_leftovers, leftovers_program, storage_leftovers_program
from toolkit.providers.pulumi.driver import PulumiStackDriver
from toolkit.providers.pulumi.leftovers import FoundResource
from toolkit.providers.pulumi.pins import StackPins
from toolkit.providers.pulumi.plugins import ProviderPlugin
from toolkit.providers.tags import TAG_CLUSTER
from toolkit.spec.models import ClusterSpec

PROJECT_NAME = "gpuctl-alicloud"
CONFIG_REGION = "alicloud:region"
PLUGIN = ProviderPlugin(package="pulumi_alicloud", label="Alibaba Cloud")
# Key pairs the Alibaba provider reads from the environment; a profile stands for a pair.
CREDENTIAL_PAIRS = (
    ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY"),
    ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"),
)
PROFILE_ENVS = ("ALICLOUD_PROFILE", "ALIBABA_CLOUD_PROFILE")
ALIYUN_CONFIG_BYTES = 1024 * 1024  # a config with a few hundred profiles is a few hundred KiB


class AlicloudDriver(PulumiStackDriver):
    """ProviderDriver for `provider: alicloud` (see toolkit/providers/base.py)."""

    name = "alicloud"
    cloud = "Alibaba Cloud"
    project = PROJECT_NAME
    region_config_key = CONFIG_REGION
    plugins = (PLUGIN,)
    credential_pairs = CREDENTIAL_PAIRS
    profile_envs = PROFILE_ENVS
    removal_tool = "aliyun CLI"
    storage_module = "toolkit.providers.alicloud.storage"

    @classmethod
    def credentials_problem(cls, env: Mapping[str, str] | None = None, home: Path | None = None) -> str | None:
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
        config = (home or user_home()) / ".aliyun" / "config.json"
        try:
            # Bounded and without following a FIFO's promise of bytes: the file is only read for its names.
            text = read_text_bounded(config, limit=ALIYUN_CONFIG_BYTES, what="aliyun CLI config")
            profiles = json.loads(text).get("profiles") or []
            names = [str(p.get("name")) for p in profiles if isinstance(p, dict)]
        except FileError as exc:
            return (f"ALICLOUD_PROFILE={profile}, but {config} cannot be read ({exc.reason}): create it with "
                    f"`aliyun configure --profile {profile}`")
        except (ValueError, AttributeError, TypeError, RecursionError):
            return (f"ALICLOUD_PROFILE={profile}, but {config} is not the aliyun CLI's JSON: create it with "
                    f"`aliyun configure --profile {profile}`")
        if profile not in names:
            return (f"ALICLOUD_PROFILE={profile}, but {config} has no such profile (it has: "
                    f"{', '.join(names) or 'none'}); create it with `aliyun configure --profile {profile}`")
        return None

    def preflight_problems(self, spec: ClusterSpec, env: Mapping[str, str]) -> list[str]:
        """A spot ceiling needs the account's site (site.py): refused before anything is created, with
        the variable to set, rather than sent in a guessed currency."""
        from toolkit.errors import UsageError
        from toolkit.providers.alicloud.site import SET_IT, account_type, unknown_site

        ceilings = [p.billing.spot_max_price_per_hour for p in spec.node_pools
                    if p.billing.spot_max_price_per_hour is not None]
        if not ceilings:
            return []
        try:
            site = account_type(env)
        except UsageError as problem:
            return [f"{problem.message}: {SET_IT}"]
        return [] if site is not None else [f"{unknown_site(ceilings[0])}: {SET_IT}"]

    def program(self, spec: ClusterSpec, pins: StackPins) -> Callable[[], None]:
        # The region and zone were checked by `validate`; Alibaba publishes no quota API gpuctl can
        # read without one more SDK call, so quotas are left to the API's own error.
        from toolkit.catalog import load_catalog
        from toolkit.providers.alicloud import component
        from toolkit.providers.alicloud.args import GpuClusterArgs

        args = GpuClusterArgs.from_spec(
            spec, load_catalog("alicloud"), now=self._clock(), created_at=pins.created_at,
            cluster_id=pins.cluster_id, owner=pins.owner,
        )

        storage = list(pins.storage) if pins.storage is not None else None

        def program() -> None:
            component.cluster_program(spec, args, storage)

        return program

    def leftovers_program(self, cluster: str, cluster_id: str | None) -> None:
        leftovers_program(cluster, cluster_id)

    def read_leftovers(self, values: Mapping[str, Any], region: str) -> list[FoundResource]:
        return list(find_leftovers(values, region))

    def storage_leftovers(self, spec: ClusterSpec, region: str, cluster_id: str, *, kept_too: bool
                          ) -> list[FoundResource]:
        """The cluster's OSS buckets still there once the storage stack is done (leftovers.py)."""
        return self.query_leftovers(
            spec, region, lambda: storage_leftovers_program(spec.name, cluster_id, kept_too=kept_too))

    def list_by_tag_command(self, region: str, cluster: str) -> str:
        # Quoted: the command is printed for pasting, and the cluster name comes from a state file.
        return (f"aliyun ecs DescribeInstances --RegionId {shlex.quote(region)} --Tag.1.Key {shlex.quote(TAG_CLUSTER)} "
                f"--Tag.1.Value {shlex.quote(cluster)}")


# Alibaba-bound forms of the shared checks, for callers that hold no driver.


def credentials_problem(env: Mapping[str, str] | None = None, home: Path | None = None) -> str | None:
    return AlicloudDriver.credentials_problem(env, home)


def require_credentials(env: Mapping[str, str] | None = None, home: Path | None = None) -> None:
    AlicloudDriver().require_credentials(env, home)


def require_pulumi_cli(which: Callable[[str], str | None] = shutil.which) -> str:
    return AlicloudDriver().require_cli(which)


def preflight(spec: ClusterSpec, url: str, *, env: Mapping[str, str] | None = None,
              which: Callable[[str], str | None] = shutil.which, home: Path | None = None) -> None:
    AlicloudDriver().preflight(spec, url, env=env, which=which, home=home)


def pulumi_failure(exc: BaseException, env: Mapping[str, str] | None = None) -> GpuctlError:
    return AlicloudDriver().failure(exc, env)


def missing_cli_error() -> MissingToolError:
    from toolkit.providers.pulumi.cli import missing_cli_error as missing

    return missing(AlicloudDriver.cloud, AlicloudDriver.plugins)
