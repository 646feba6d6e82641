"""`gpuctl up/status/outputs/down` for Tencent Cloud, through Pulumi's Automation API.

The stack runs the same program as `stacks/tencentcloud` (an inline program building
`gpuctl:tencentcloud:GpuCluster`); the stack is named after the cluster. Backend, passphrase, the
pinned cluster id / creation time / owner, refresh before up and down, the no-second-copy check, `down`'s
verification, progress and error mapping are the shared plumbing of
`toolkit/providers/pulumi/`; this module says what is Tencent's:

- Credentials: the environment's key pair (`TENCENTCLOUD_SECRET_ID` / `TENCENTCLOUD_SECRET_KEY`,
  with `TENCENTCLOUD_SECURITY_TOKEN` for a temporary one) or a tccli profile
  (`~/.tccli/<TENCENTCLOUD_PROFILE or default>.credential`): what the Pulumi provider reads too.
  gpuctl never writes them, passes them as config, or prints them.
- Before the first create, the SDK asks Tencent what Pulumi cannot (`preflight.py`): every pool's
  type sold in the zone with stock, the account's quota, the HPC clusters of the zone; every
  problem at once (exit 4), nothing created.
- Storage (`storage.py`, stack `<cluster>_storage`): where the spec creates a CFS, that stack owns the
  cluster's VPC and subnet and the cluster's program joins them by the ids it exports (`vpcId`,
  `subnetId`), so `down` leaves the network with the kept CFS (docs/storage.md).
- The tag search (`leftovers.py`) runs through tencentcloud-sdk-python, not a Pulumi program: the
  provider has no data source that filters every kind by tag (and HPC clusters take no tags at all;
  they are found by the name and remark the component gives them).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit import hints
from toolkit.errors import MissingToolError, ProviderError, UsageError
from toolkit.providers.base import ClusterOutputs, ProgressCallback
from toolkit.providers.pulumi.driver import PulumiStackDriver
from toolkit.providers.pulumi.leftovers import FoundResource
from toolkit.providers.pulumi.pins import StackPins
from toolkit.providers.pulumi.plugins import ProviderPlugin
from toolkit.providers.pulumi.storage import storage_stack_name
from toolkit.providers.tags import TAG_CLUSTER
from toolkit.spec.models import ClusterSpec

if TYPE_CHECKING:
    from toolkit.providers.tencentcloud.args import NetworkIds

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
    storage_module = "toolkit.providers.tencentcloud.storage"

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
        from toolkit.providers.pulumi.workspace import region_of
        from toolkit.providers.tencentcloud.preflight import preflight
        from toolkit.providers.tencentcloud.sdk import connect

        progress(f"asking Tencent Cloud whether {spec.zone} sells what {spec.name} needs (stock, quota)")
        report = preflight(spec, connect(region_of(spec)))
        for note in report.notes:
            progress(f"preflight: {note}")

    def up(self, spec: ClusterSpec, progress: ProgressCallback) -> ClusterOutputs:
        from toolkit.providers.tencentcloud.args import storage_owns_network

        if storage_owns_network(spec):
            self._refuse_moving_the_network(spec)
        return super().up(spec, progress)

    def _refuse_moving_the_network(self, spec: ClusterSpec) -> None:
        """A cluster up with a VPC of its own whose spec now creates a CFS would move to the storage
        stack's network: Pulumi would replace every node. Refuse before anything changes."""
        from toolkit.providers.tencentcloud.plan import VPC

        self.preflight(spec, self._backend(spec))
        stack = self._stack(spec, create=False)
        if stack is None:
            return
        deployment = self._call(lambda: stack.export_stack()).deployment or {}
        if any(r.get("type") == VPC for r in deployment.get("resources", []) or []):
            created = [v.name for v in spec.storage if v.kind == "nas" and v.existing is None]
            raise UsageError(
                f"cluster {spec.name} is up with a VPC of its own, and storage {', '.join(created)} would create a "
                "CFS: a CFS stays in the subnet it is made in, so its network belongs to the storage stack, and "
                "moving the cluster there replaces every node",
                hint=f"run `{hints.spec_command(spec.name, 'down')}` first (it keeps nothing of this network), "
                f"then `{hints.spec_command(spec.name, 'up')}`; or use existing: <cfs id> for a CFS made elsewhere",
            )

    def program(self, spec: ClusterSpec, pins: StackPins) -> Callable[[], None]:
        from toolkit.catalog import load_catalog
        from toolkit.providers.tencentcloud import component
        from toolkit.providers.tencentcloud.args import GpuClusterArgs, storage_owns_network

        # Where the spec creates a CFS, the storage stack owns the VPC and subnet and the cluster joins
        # them (storage.py says why); they are known once the storage stack is up.
        owned = storage_owns_network(spec)
        network = storage_network(spec, pins.storage_outputs) if owned and pins.storage_outputs is not None else None
        args = GpuClusterArgs.from_spec(
            spec, load_catalog("tencentcloud"), now=self._clock(), created_at=pins.created_at,
            cluster_id=pins.cluster_id, owner=pins.owner, existing_network=network,
        )

        storage = [dict(v) for v in pins.storage] if pins.storage is not None else None

        def program() -> None:
            if owned and network is None:
                # Built before the storage stack is up (to refuse bad input early): never run like that,
                # or the cluster would make a VPC of its own beside the storage stack's.
                raise ProviderError(f"internal: the cluster {spec.name} was run before its storage stack was up")
            component.cluster_program(spec, args)
            if storage is not None:
                import pulumi

                # The volumes as the storage stack exports them: a CFS's mount IP is in the cluster's
                # subnet (created) or in a VPC the user connected (existing); COS needs no network.
                pulumi.export("volumes", storage)

        return program

    def cloud_leftovers(self, spec: ClusterSpec, region: str, cluster_id: str | None) -> list[FoundResource]:
        from toolkit.providers.tencentcloud.leftovers import find_leftovers
        from toolkit.providers.tencentcloud.sdk import connect

        return list(find_leftovers(connect(region), spec.name, cluster_id))

    def list_by_tag_command(self, region: str, cluster: str) -> str:
        # The filter is JSON, then shell-quoted: the command is printed for pasting and the cluster
        # name comes from a state file, so neither a quote nor a `$(...)` in it can run.
        filters = json.dumps([{"Name": f"tag:{TAG_CLUSTER}", "Values": [cluster]}], separators=(",", ":"))
        return f"tccli cvm DescribeInstances --region {shlex.quote(region)} --Filters {shlex.quote(filters)}"


def storage_network(spec: ClusterSpec, outputs: Mapping[str, Any]) -> NetworkIds:
    """The VPC and subnet the storage stack made with its CFS, from its outputs (`vpcId`, `subnetId`)."""
    from toolkit.providers.tencentcloud.args import NetworkIds
    from toolkit.providers.tencentcloud.storage import OUT_SUBNET_ID, OUT_VPC_ID

    vpc_id, subnet_id = outputs.get(OUT_VPC_ID), outputs.get(OUT_SUBNET_ID)
    if not isinstance(vpc_id, str) or not vpc_id or not isinstance(subnet_id, str) or not subnet_id:
        raise ProviderError(
            f"the storage stack {storage_stack_name(spec.name)} exports no {OUT_VPC_ID}/{OUT_SUBNET_ID}, which the "
            "cluster needs to join the network of its CFS",
            hint=f"run `{hints.spec_command(spec.name, 'up')}` again (it brings the storage stack up first)",
        )
    return NetworkIds(vpc_id=vpc_id, subnet_id=subnet_id)
