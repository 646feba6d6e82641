"""The tag search: what the cloud holds tagged `gpuctl:cluster=<name>` (and `gpuctl:cluster-id=<id>`
where the id is known), outside any stack's state.

- No second copy: before the first create, `up` asks the cloud for anything tagged with the
  cluster's name and refuses to build beside it.
- After `down`'s destroy, what is still tagged is listed with the commands that remove it; without
  the id, what is found is reported as not provably this cluster's. gpuctl deletes nothing itself.

By default the search is a Pulumi program of invokes only (`leftovers_program` + `read_leftovers`),
run on a throwaway stack `<cluster>_leftovers`; a cloud may search another way (`cloud_leftovers`).
`TagSearch` is one of the bases of `PulumiStackDriver` (driver.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from toolkit import hints
from toolkit.errors import GpuctlError, ProviderError
from toolkit.providers.base import ProgressCallback
from toolkit.providers.pulumi.backend import BACKEND_ENV
from toolkit.providers.pulumi.workspace import StackWorkspace, region_of
from toolkit.providers.tags import TAG_CLUSTER
from toolkit.secrets import redact
from toolkit.spec.models import ClusterSpec

if TYPE_CHECKING:
    from pulumi.automation import Stack

# The throwaway stack of the tag search is named so that no cluster can own it: cluster names are
# [a-z0-9-] (spec/models.py).
LEFTOVERS_STACK_SUFFIX = "_leftovers"


def leftovers_stack_name(cluster: str) -> str:
    return f"{cluster}{LEFTOVERS_STACK_SUFFIX}"


class FoundResource(Protocol):
    """A resource the tag search found: how a user reads it, and how to remove it."""

    def line(self) -> str: ...

    def tagged_line(self) -> str:
        """`line()` with the owner and cluster-id tags, for resources found by name alone."""
        ...


class TagSearch(StackWorkspace):
    """The tag search's part of a cloud's driver; the cloud supplies the search and the words."""

    def leftovers_program(self, cluster: str, cluster_id: str | None) -> None:
        """A Pulumi program of invokes only that exports what is tagged with the cluster."""
        raise NotImplementedError

    def read_leftovers(self, values: Mapping[str, Any], region: str) -> list[FoundResource]:
        """The outputs of `leftovers_program` -> what was found; ValueError for an unusable answer."""
        raise NotImplementedError

    def list_by_tag_command(self, region: str, cluster: str) -> str:
        """A command that lists the cloud's instances tagged with the cluster's name."""
        raise NotImplementedError

    # ----------------------------------------------- cloud checks by tag

    def _refuse_a_second_copy(
        self, spec: ClusterSpec, stack: Stack, *, brand_new: bool, progress: ProgressCallback
    ) -> None:
        """Before the first create: refuse if anything tagged with the cluster's name is live in the
        cloud (a copy made through another backend or a lost state, or left by an interrupted `up`)."""
        region = region_of(spec)
        progress(f"checking {region} for an existing copy of {spec.name} (resources tagged {TAG_CLUSTER}={spec.name})")
        found = self.cloud_leftovers(spec, region, None)
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
            f"({self.removal_tool}, in that order), then run `{hints.spec_command(spec.name, 'up')}` again. "
            "If another team's cluster has this name "
            "(see the owner tags), give yours another `name:` in the spec",
        )

    def _not_provably_ours(
        self, spec: ClusterSpec, region: str, found: list[FoundResource], *, stack_exists: bool
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
            f"cluster; it shows its cluster_id), or list them with `{self.list_by_tag_command(region, spec.name)}`. "
            f"If they are yours, run `{down}` with that "
            f"backend's URL (--backend or {BACKEND_ENV}), or remove them with the commands above, in that order; "
            "if not, leave them alone",
        )

    def cloud_leftovers(self, spec: ClusterSpec, region: str, cluster_id: str | None) -> list[FoundResource]:
        """What the cloud holds tagged with the cluster (and its id, where known): by default, the
        tag-query program run on a throwaway stack beside the cluster's own."""
        return self.query_leftovers(spec, region, lambda: self.leftovers_program(spec.name, cluster_id))

    def query_leftovers(self, spec: ClusterSpec, region: str, program: Callable[[], None]) -> list[FoundResource]:
        """Run a tag-query `program` (invokes only) on the throwaway stack; its outputs through
        `read_leftovers`."""
        name = leftovers_stack_name(spec.name)
        check = self._open(name, self._options(spec), create=True, program=program)
        assert check is not None
        try:
            self._set_config(check, self.region_config_key, region)
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
            return self.read_leftovers(values, region)
        except ValueError as exc:
            raise ProviderError(redact(f"the leftovers check of {spec.name} gave no usable answer: {exc}")) from None
