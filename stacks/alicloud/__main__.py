"""Pulumi program: read the spec named by config `gpuctl:spec`, build the GpuCluster, export outputs."""

from datetime import UTC, datetime

import pulumi

from toolkit.catalog import load_catalog
from toolkit.providers.alicloud import cluster_program, parse_created_at
from toolkit.providers.alicloud_args import GpuClusterArgs
from toolkit.spec.loader import load_spec

config = pulumi.Config("gpuctl")
spec = load_spec(config.require("spec"))
now = datetime.now(UTC)
# Pin the creation time (`pulumi config set gpuctl:createdAt 2026-11-29T09:00:00Z`) so that a
# second `pulumi up` does not move the release time; without it, every run starts the TTL anew.
created_at = parse_created_at(config.get("createdAt"))
if created_at is None:
    pulumi.log.warn("gpuctl:createdAt is not set: the release time counts from this run")
cluster_program(spec, GpuClusterArgs.from_spec(spec, load_catalog("alicloud"), now=now, created_at=created_at))
