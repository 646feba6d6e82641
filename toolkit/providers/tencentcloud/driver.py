"""`gpuctl up/status/outputs/down` for Tencent Cloud, through Pulumi's Automation API.

The stack runs the same program as `stacks/tencentcloud` (an inline program building
`gpuctl:tencentcloud:GpuCluster`); the stack is named after the cluster. Backend, passphrase, the
pinned cluster id / creation time / owner, refresh-before-up, the no-second-copy check, `down`'s
verification, progress and error mapping are the shared plumbing of
`toolkit/providers/pulumi_stack.py`; this module says what is Tencent's:

- Credentials: the environment's key pair (`TENCENTCLOUD_SECRET_ID` / `TENCENTCLOUD_SECRET_KEY`,
  with `TENCENTCLOUD_SECURITY_TOKEN` for a temporary one) or a tccli profile
  (`~/.tccli/<TENCENTCLOUD_PROFILE or default>.credential`): what the Pulumi provider reads too.
  gpuctl never writes them, passes them as config, or prints them.
- Before the first create, the SDK asks Tencent what Pulumi cannot (`preflight.py`): every pool's
  type sold in the zone with stock, the account's quota, the HPC clusters of the zone; every
  problem at once (exit 4), nothing created.
- The tag search (`leftovers.py`) runs through tencentcloud-sdk-python, not a Pulumi program: the
  provider has no data source that filters every kind by tag (and HPC clusters take no tags at all;
  they are found by the name and remark the component gives them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from toolkit.errors import MissingToolError, UsageError
from toolkit.providers.base import ProgressCallback
from toolkit.providers.pulumi_stack import FoundResource, ProviderPlugin, PulumiStackDriver, StackPins
from toolkit.providers.tags import TAG_CLUSTER
from toolkit.spec.models import ClusterSpec

PROJECT_NAME = "gpuctl-tencentcloud"
CONFIG_REGION = "tencentcloud:region"
PLUGIN = ProviderPlugin(package="tencentcloud_iac_pulumi", label="Tencent Cloud")


class TencentcloudDriver(PulumiStackDriver):
    """ProviderDriver for `provider: tencentcloud` (see toolkit/providers/base.py)."""

    name = "tencentcloud"
    cloud = "Tencent Cloud"
    project = PROJECT_NAME
    region_config_key = CONFIG_REGION
    plugins = (PLUGIN,)
    removal_tool = "tccli"

    @classmethod
    def credentials_problem(cls, env: Mapping[str, str] | None = None, home: Path | None = None) -> str | None:
        """What is missing of Tencent Cloud credentials, or None (the same reading as the SDK calls)."""
        from toolkit.providers.tencentcloud.sdk import load_credentials

        try:
            load_credentials(env, home)
        except MissingToolError as exc:
            return f"{exc.message}: {exc.hint}" if exc.hint else exc.message
        return None

    def first_create_checks(self, spec: ClusterSpec, progress: ProgressCallback) -> None:
        from toolkit.providers.pulumi_stack import region_of
        from toolkit.providers.tencentcloud.preflight import preflight
        from toolkit.providers.tencentcloud.sdk import connect

        progress(f"asking Tencent Cloud whether {spec.zone} sells what {spec.name} needs (stock, quota)")
        report = preflight(spec, connect(region_of(spec)))
        for note in report.notes:
            progress(f"preflight: {note}")

    def program(self, spec: ClusterSpec, pins: StackPins) -> Callable[[], None]:
        from toolkit.catalog import load_catalog
        from toolkit.providers.tencentcloud import component
        from toolkit.providers.tencentcloud.args import GpuClusterArgs

        args = GpuClusterArgs.from_spec(
            spec, load_catalog("tencentcloud"), now=self._clock(), created_at=pins.created_at,
            cluster_id=pins.cluster_id, owner=pins.owner,
        )

        storage = [dict(v) for v in pins.storage] if pins.storage is not None else None

        def program() -> None:
            component.cluster_program(spec, args)
            if storage is not None:
                import pulumi

                # COS buckets and existing CFS need nothing in the cluster's network: passed through.
                pulumi.export("volumes", storage)

        return program

    def storage_program(self, spec: ClusterSpec, pins: StackPins, *, unprotect: bool = False
                        ) -> Callable[[], None] | None:
        if not spec.storage:
            return None
        created_cfs = [v.name for v in spec.storage if v.kind == "nas" and v.existing is None]
        if created_cfs:
            # A general-series CFS is created inside one subnet and gets no mount point in another VPC,
            # so a kept one would pin the cluster's network past `down` (docs/storage.md).
            raise UsageError(
                f"storage {', '.join(created_cfs)}: gpuctl does not create a Tencent CFS yet (it lives in one "
                "subnet, so a kept one would pin the cluster's network past `down`)",
                hint="use kind: object (a COS bucket), or existing: <cfs id> reachable from the cluster's VPC",
            )
        from toolkit.providers.tencentcloud.storage import StorageArgs, storage_program

        args = StorageArgs.from_spec(spec, cluster_id=pins.cluster_id, owner=pins.owner, unprotect=unprotect)

        def program() -> None:
            storage_program(args, None)

        return program

    def cloud_leftovers(self, spec: ClusterSpec, region: str, cluster_id: str | None) -> list[FoundResource]:
        from toolkit.providers.tencentcloud.leftovers import find_leftovers
        from toolkit.providers.tencentcloud.sdk import connect

        return list(find_leftovers(connect(region), spec.name, cluster_id))

    def list_by_tag_command(self, region: str, cluster: str) -> str:
        return (f"tccli cvm DescribeInstances --region {region} --Filters "
                f"'[{{\"Name\":\"tag:{TAG_CLUSTER}\",\"Values\":[\"{cluster}\"]}}]'")
