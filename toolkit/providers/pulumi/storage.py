"""The storage stack `<cluster>_storage` beside the cluster's (docs/storage.md): `up` builds it first
and hands its volumes to the cluster's program; `down` never destroys a kept volume (it brings the
stack up with the kept ones only), and `down --delete-storage` lifts protect, destroys and removes it.
`StorageStacks` is one of the bases of `PulumiStackDriver` (driver.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from toolkit import hints
from toolkit.catalog.storage_prices import kept_price_note
from toolkit.errors import ProviderError, UsageError
from toolkit.providers.base import ProgressCallback
from toolkit.providers.pulumi.leftovers import FoundResource
from toolkit.providers.pulumi.pins import CONFIG_CLUSTER_ID, CONFIG_OWNER, StackPins
from toolkit.providers.pulumi.progress import ProgressReporter
from toolkit.providers.pulumi.stack_state import leftover_resources
from toolkit.providers.pulumi.workspace import StackWorkspace, region_of
from toolkit.providers.tags import TAG_CLUSTER, TAG_CLUSTER_ID, default_owner, new_cluster_id
from toolkit.spec.models import ClusterSpec

if TYPE_CHECKING:
    from pulumi.automation import Stack


def storage_stack_name(cluster: str) -> str:
    """`<cluster>_storage`: a cluster name holds no '_', so no cluster's stack is named like it."""
    return f"{cluster}_storage"


def refuse_storage_in_one_stack(spec: ClusterSpec) -> None:
    """For the hand-run stacks (stacks/<cloud>/__main__.py): a spec with shared volumes needs the
    storage stack beside the cluster's, which only `gpuctl up` builds, so that `pulumi destroy` of
    the cluster can never take the data (docs/storage.md)."""
    if spec.storage:
        raise UsageError(
            f"spec {spec.name} has storage volumes ({', '.join(v.name for v in spec.storage)}): they live in a "
            f"stack of their own ({storage_stack_name(spec.name)}) that a destroy of this one never touches, and "
            "only gpuctl builds the two",
            hint=f"run `{hints.spec_command(spec.name, 'up')}` instead of `pulumi up` in stacks/",
        )


class StorageStacks(StackWorkspace):
    """The storage stack's part of a cloud's driver; the cloud names its storage program's module."""

    # The module of the cloud's storage program (its `StorageArgs` and `storage_program(args)`);
    # None: the cloud builds no storage stack.
    storage_module: ClassVar[str | None] = None

    kept: list[str]
    deleted_storage: list[str]

    def storage_program(self, spec: ClusterSpec, pins: StackPins, *, unprotect: bool = False
                        ) -> Callable[[], None] | None:
        """The program of the cluster's storage stack; None when the cloud builds no storage stack
        or the spec names no volume. `unprotect` only for `down --delete-storage`."""
        if not spec.storage or self.storage_module is None:
            return None
        import importlib

        module = importlib.import_module(self.storage_module)
        args = module.StorageArgs.from_spec(spec, cluster_id=pins.cluster_id, owner=pins.owner, unprotect=unprotect)

        def program() -> None:
            module.storage_program(args)

        return program

    # ------------------------------------------------- the storage stack

    def _storage_stack(self, spec: ClusterSpec, *, create: bool) -> Stack | None:
        def no_program() -> None:
            raise ProviderError("internal: this stack was opened without a program")

        return self._open(storage_stack_name(spec.name), self._options(spec), create=create, program=no_program)

    def _storage_pins(self, stack: Stack, pins: StackPins) -> StackPins:
        """The storage stack's own id and owner, pinned at its first `up`: its volumes' tags stay the
        same while clusters of the same name come and go around them."""
        config = self._config(stack)
        cluster_id, owner = config.get(CONFIG_CLUSTER_ID), config.get(CONFIG_OWNER)
        if cluster_id is None:
            cluster_id = pins.cluster_id
            self._set_config(stack, CONFIG_CLUSTER_ID, cluster_id)
        if owner is None:
            owner = pins.owner
            self._set_config(stack, CONFIG_OWNER, owner)
        return StackPins(cluster_id=cluster_id, created_at=pins.created_at, owner=owner)

    def _storage_up(self, spec: ClusterSpec, pins: StackPins, progress: ProgressCallback
                    ) -> dict[str, Any] | None:
        """`up` the storage stack before the cluster's; its outputs (plain values), or None without one."""
        if not spec.storage or self.storage_module is None:
            return None
        stack = self._storage_stack(spec, create=True)
        assert stack is not None
        own = self._storage_pins(stack, pins)
        program = self.storage_program(spec, own)
        self._set_config(stack, self.region_config_key, region_of(spec))
        name = storage_stack_name(spec.name)
        progress(f"pulumi up: storage stack {name} ({len(spec.storage)} volume(s), kept by `down`: "
                 f"{', '.join(v.name for v in spec.storage if v.keep_on_down) or 'none'})")
        result = self._call(lambda: stack.up(program=program, on_event=ProgressReporter(progress), color="never"))
        return {key: value.value for key, value in result.outputs.items()}

    def storage_leftovers(self, spec: ClusterSpec, region: str, cluster_id: str, *, kept_too: bool
                          ) -> list[FoundResource]:
        """Once the storage stack is done: the volumes the cloud still holds tagged with the cluster
        that should be gone (kept ones too when `kept_too`); none by default (the stack's state is
        the only check)."""
        return []

    def _verify_storage_gone(self, spec: ClusterSpec, cluster_id: str | None, *, kept_too: bool,
                             progress: ProgressCallback) -> None:
        """The cloud's view after the storage stack: a volume its state no longer holds but the cloud
        does (an interrupted `up`, a lost state) is named with its removal command; gpuctl deletes none."""
        if cluster_id is None:
            return  # a storage stack without a pinned id: its volumes' tags cannot prove them ours
        region = region_of(spec)
        found = self.storage_leftovers(spec, region, cluster_id, kept_too=kept_too)
        if found:
            raise ProviderError(
                f"{len(found)} storage resource(s) tagged {TAG_CLUSTER}={spec.name} and {TAG_CLUSTER_ID}={cluster_id} "
                f"are still in {region} although the storage stack no longer holds them:\n    "
                + "\n    ".join(item.line() for item in found),
                hint=f"empty and remove them with the commands above ({self.removal_tool}) or in the console; "
                "gpuctl deletes no data itself",
            )

    def _storage_down(self, spec: ClusterSpec, progress: ProgressCallback, *, delete: bool) -> None:
        """After the cluster is gone: delete the volumes not kept, say what was kept; with `delete`,
        everything (protect lifted first, then a destroy verified empty, then the stack removed)."""
        stack = self._storage_stack(spec, create=False)
        name = storage_stack_name(spec.name)
        if stack is None:
            if delete:
                progress(f"no storage stack {name}: no volume to delete")
            return
        config = self._config(stack)
        pins = StackPins(cluster_id=config.get(CONFIG_CLUSTER_ID) or new_cluster_id(),
                         created_at=self._clock().replace(microsecond=0),
                         owner=config.get(CONFIG_OWNER) or default_owner(spec))
        kept = [] if delete else [v for v in spec.storage if v.keep_on_down]
        gone = [v.name for v in spec.storage if not v.keep_on_down] if kept else []
        if gone or not kept:
            # A volume removed by hand, or one the cloud no longer finds, must not stop the delete of
            # the others (the same reason as the cluster's own refresh).
            self._refresh_before_destroy(stack, name, progress)
        if kept:
            program = self.storage_program(spec.model_copy(update={"storage": kept}), pins)
            assert program is not None
            if gone:
                progress(f"pulumi up: storage stack {name}: deleting the volumes not kept ({', '.join(gone)})")
                self._call(lambda: stack.up(program=program, on_event=ProgressReporter(progress), color="never"))
            self.kept = [f"kept {v.name} ({v.kind}, {v.mount_path}): it bills until removed"
                         f"{kept_price_note(spec.provider, v)}" for v in kept]
            progress(f"kept (keep_on_down): {', '.join(f'{v.name} ({v.kind}, {v.mount_path})' for v in kept)}; "
                     "they bill until removed: "
                     f"`{hints.spec_command(spec.name, 'down', '--delete-storage')}`")
            self._verify_storage_gone(spec, config.get(CONFIG_CLUSTER_ID), kept_too=False, progress=progress)
            return
        if delete:
            # Lift Pulumi's protect first: a destroy refuses protected resources, which is the point
            # of protect everywhere but here.
            program = self.storage_program(spec, pins, unprotect=True)
            if program is not None:
                progress(f"pulumi up: storage stack {name}: lifting protect before the delete")
                self._call(lambda: stack.up(program=program, on_event=ProgressReporter(progress), color="never"))
        progress(f"pulumi destroy: storage stack {name}")
        self._call(lambda: stack.destroy(on_event=ProgressReporter(progress), color="never"))
        left = leftover_resources(self._call(lambda: stack.export_stack()).deployment, spec.name)
        if left:
            raise ProviderError(
                f"destroy finished but {len(left)} storage resource(s) of {spec.name} remain: " + ", ".join(left),
                hint="a bucket that still holds objects is never emptied by gpuctl: empty it in the console, then "
                f"run `{hints.spec_command(spec.name, 'down', '--delete-storage')}` again",
            )
        self._call(lambda: stack.workspace.remove_stack(name))
        if delete:
            self.deleted_storage = [v.name for v in spec.storage] or [name]
        progress(f"storage stack {name} destroyed and removed")
        self._verify_storage_gone(spec, config.get(CONFIG_CLUSTER_ID), kept_too=delete, progress=progress)
