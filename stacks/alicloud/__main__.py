"""Pulumi program: read the spec named by config `gpuctl:spec`, build the GpuCluster, export outputs."""

from datetime import UTC, datetime

import pulumi

from toolkit.catalog import load_catalog
from toolkit.providers.alicloud.args import GpuClusterArgs
from toolkit.providers.alicloud.component import cluster_program
from toolkit.providers.pulumi.pins import parse_created_at
from toolkit.providers.pulumi.storage import refuse_storage_in_one_stack
from toolkit.providers.tags import stack_cluster_id
from toolkit.spec.loader import load_spec

config = pulumi.Config("gpuctl")
spec = load_spec(config.require("spec"))
# Shared volumes need their own stack, which only `gpuctl up` builds: refused here, before anything.
refuse_storage_in_one_stack(spec)
now = datetime.now(UTC)
# Pin the creation time (`pulumi config set gpuctl:createdAt 2026-11-29T09:00:00Z`) so that a
# second `pulumi up` does not move the release time; without it, every run starts the TTL anew.
created_at = parse_created_at(config.get("createdAt"))
if created_at is None:
    pulumi.log.warn("gpuctl:createdAt is not set: the release time counts from this run")
# The cluster id tagged on every resource (`gpuctl:cluster-id`); `gpuctl up` keeps one in the same
# key. Without it, one is derived from this stack's organization/project/name: stable across runs.
cluster_id = config.get("clusterId")
if cluster_id is None:
    organization = pulumi.get_organization() or "organization"  # the file backend's organization
    cluster_id = stack_cluster_id(organization, pulumi.get_project(), pulumi.get_stack())
    pulumi.log.warn(f"gpuctl:clusterId is not set: using {cluster_id}, derived from this stack's name")
# The owner tag (`gpuctl:owner`): pinned by `gpuctl up` at the first create. Without it, the spec's
# owner or the local user: set it (`pulumi config set gpuctl:owner alice`) so that another operator's
# `pulumi up` does not retag every resource with their name.
owner = config.get("owner")
if owner is None:
    pulumi.log.warn("gpuctl:owner is not set: the owner tag is the spec's owner or this machine's user")
cluster_program(
    spec,
    GpuClusterArgs.from_spec(
        spec, load_catalog("alicloud"), now=now, created_at=created_at, cluster_id=cluster_id, owner=owner
    ),
)
