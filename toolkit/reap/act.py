"""What `gpuctl reap --yes` does to a cluster, and what it says it would do without `--yes`.

- expired, held by the state here: destroyed through the provider driver's own `down` (the same
  path as `gpuctl down`: the stack destroyed, then the cloud searched by tag and verified empty),
  under the cluster's lock. The spec given on the command line when there is one; else a teardown
  spec made from the state: the name, provider and region, which is all a cloud driver's `down`
  reads (the stack is found by name in its backend, its cluster id in the stack's config). A lab
  needs its spec (its `down` may rebuild names from it), so a lab is reaped only when given one.
- orphaned: reported with the commands that inspect and remove it. With `--include-orphaned`, its
  instances are released through the cloud SDK in batches (on Tencent one charge type a batch, PREPAID
  ones terminated a second time from the recycle bin), and only those that carry
  gpuctl's `gpuctl:managed-by` and `gpuctl:cluster-id` tags and are past their own
  `gpuctl:expires`, each judged by its own tags (a neighbour's expiry never releases a node; a
  missing or unreadable expiry is never past): a live orphan may be another team's cluster in a
  backend this machine does not see.
- live and unknown: left alone.
Nothing here ever acts on an instance without gpuctl's tags: the cloud search only lists tagged
ones, and the release re-checks the tags of each instance it is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from toolkit import hints
from toolkit.errors import GpuctlError, MissingToolError
from toolkit.reap.classify import Cluster
from toolkit.reap.cloud import CloudSearch, Released, gap_of

if TYPE_CHECKING:
    from toolkit.providers.base import ProgressCallback
    from toolkit.reap.local import StateCluster
    from toolkit.spec.models import ClusterSpec


@dataclass
class Outcome:
    destroyed: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    credentials_failed: bool = False  # a down or release failed for want of (or on refused) credentials
    missing_tool: bool = False  # a down failed for want of a tool (the Pulumi CLI, a plugin)


def teardown_spec(state: StateCluster) -> ClusterSpec:
    """A stand-in spec for `down` of a cloud cluster whose spec file was not given: name, provider and
    region only (unvalidated: it never reaches a program, only the driver's `down`)."""
    from toolkit.spec.models import ClusterSpec

    known: dict[str, Any] = {"name": state.name, "provider": state.provider, "region": state.region}
    return ClusterSpec.model_construct(**known)


def releasable(cluster: Cluster, now: datetime) -> list[str]:
    """The instances `--include-orphaned` may release: of an orphaned cluster, with gpuctl's proof
    tags naming this cluster, each past its own expiry tag."""
    if cluster.status != "orphaned":
        return []
    return [i.id for i in cluster.instances if i.ours and i.cluster == cluster.name
            and i.cluster_id == cluster.cluster_id and i.expired(now) is True]


def intent(cluster: Cluster, *, yes: bool, include_orphaned: bool, spec: ClusterSpec | None, now: datetime) -> str:
    """What reap does (or, in a dry run, would do) with the cluster, in words."""
    act = "destroying" if yes else "would destroy (dry run; --yes to do it)"
    if cluster.status == "expired":
        if cluster.provider == "local" and spec is None:
            return "expired: give its spec to reap it (a lab's down needs it)"
        if cluster.provider not in ("alicloud", "tencentcloud", "local"):
            return "expired, but its state cannot be read: remove it with `down` and its spec"
        return f"{act} through `down`"
    if cluster.status == "orphaned":
        ids = releasable(cluster, now)
        kept = len(cluster.instances) - len(ids)
        if include_orphaned and ids:
            left = f"; {kept} other(s) left alone: not past their own expiry, or without gpuctl's tags" if kept else ""
            return f"{'releasing' if yes else 'would release (dry run; --yes to do it)'} {len(ids)} instance(s) " \
                   f"through the cloud API{left}"
        if include_orphaned and not any(i.ours for i in cluster.instances):
            return "orphaned, but no instance carries gpuctl's cluster-id tag: reported only"
        if include_orphaned:
            return "orphaned, not past its expiry: reported only (it may be another backend's live cluster)"
        return "orphaned: reported only; inspect it, then remove it with the commands below (or --include-orphaned)"
    if cluster.status == "unknown":
        return "left alone: its expiry is unknown"
    return "left alone: live"


def commands(cluster: Cluster, search: CloudSearch | None, spec_path: str | None) -> list[str]:
    """How to inspect and remove the cluster by hand."""
    if cluster.state is not None:
        spec = spec_path or hints.SPEC_PLACEHOLDER
        return [hints.command("status", spec), hints.command("down", spec)]
    if search is None or cluster.region is None:
        return []
    found = [search.inspect_command(cluster.region, cluster.name)]
    return found + (search.remove_commands(cluster.region, list(cluster.instances)) if cluster.instances else [])


def destroy(cluster: Cluster, spec: ClusterSpec, backend: str | None, progress: ProgressCallback,
            outcome: Outcome) -> None:
    """The provider's own `down`, under the cluster's lock; a failure is recorded, not raised."""
    from toolkit.lock import cluster_lock
    from toolkit.providers.registry import get_driver

    try:
        with cluster_lock(cluster.name, "reap"):
            get_driver(cluster.provider, backend_url=backend).down(spec, progress)
    except GpuctlError as error:
        outcome.failures.append(f"{cluster.name} ({cluster.provider}): down failed: {error.message}")
        # Exit 7 is both a missing tool and missing credentials: only the error says which.
        if isinstance(error, MissingToolError):
            outcome.credentials_failed |= error.credentials
            outcome.missing_tool |= not error.credentials
    else:
        outcome.destroyed.append(cluster.name)


def release(cluster: Cluster, search: CloudSearch, progress: ProgressCallback, outcome: Outcome,
            now: datetime) -> None:
    """Release the cluster's `releasable` instances; a failure is recorded, not raised."""
    ids = releasable(cluster, now)
    if not ids or cluster.region is None:
        return
    progress(f"releasing {len(ids)} instance(s) of orphaned cluster {cluster.name} in {cluster.region}: "
             + ", ".join(ids))
    chosen = [i for i in cluster.instances if i.id in set(ids)]
    try:
        done = search.release(cluster.region, chosen)
    except GpuctlError as refused:  # before any batch (credentials, the region's endpoint)
        done = Released(failed=[(ids, refused)])
    outcome.released += done.ids
    for failed_ids, error in done.failed:
        gap = gap_of(cluster.provider, cluster.region, error)
        outcome.failures.append(f"{cluster.name} ({cluster.provider} {cluster.region}): release of "
                                f"{', '.join(failed_ids)} failed: {gap.reason}")
        outcome.credentials_failed |= gap.credentials

