"""`gpuctl image build SPEC --pool POOL [--name NAME]`: bake one node of a pool into an image.

1. A one-node cluster `bake-<name>` of the pool (its instance type, base image and software pins;
   no shared volumes, no lifecycle agent) is created with the provider's own `up`.
2. configure runs every role on it (`--full`): the install roles install the stack, and the
   install_record role writes what they left (/etc/gpuctl/install.env).
3. The provider keeps that node's root as the image; the record is written, and the one-node
   cluster is removed whatever happened (a failed bake leaves neither a cluster nor an image).

Nodes of a pool with `image: baked:<name>` then start with that root: their install record holds
for the same pins, stack, fabric and instance type, so configure skips the install roles there.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from datetime import UTC, datetime

from toolkit import hints
from toolkit.configure.converge import parse_keyvals
from toolkit.errors import CheckFailed, GpuctlError, ProviderError, UsageError
from toolkit.images import store
from toolkit.images.store import ImageRecord
from toolkit.providers.base import ClusterOutputs, ProviderDriver
from toolkit.secrets import child_env
from toolkit.spec.models import BAKE_PREFIX, ClusterSpec
from toolkit.ssh import ssh_argv

INSTALL_RECORD = "/etc/gpuctl/install.env"
RECORD_KEYS = ("version", "inputs", "kernel", "packages", "nvidia")


def bake_cluster_name(image: str) -> str:
    """A name no spec may take (spec.models.BAKE_PREFIX), so the bake never meets a user's cluster."""
    return f"{BAKE_PREFIX}{store.check_name(image)}"


def bake_spec(spec: ClusterSpec, pool_name: str, image: str) -> ClusterSpec:
    """The one-node cluster the image is baked on: the pool alone, count 1, nothing shared."""
    pools = [pool for pool in spec.node_pools if pool.name == pool_name]
    if not pools:
        raise UsageError(f"--pool: {spec.name} has no pool named {pool_name[:40]!r}",
                         hint=f"its pools are {', '.join(pool.name for pool in spec.node_pools)}")
    pool = pools[0]
    if (source := store.baked_name(pool.image)) is not None:
        raise UsageError(f"--pool: pool {pool.name} starts from baked image {source}; an image is baked from the "
                         "pool's base image", hint="set the pool's image to its base (e.g. debian_12) to bake it")
    lifecycle = spec.lifecycle.model_copy(update={"idle_stop_minutes": None, "on_interruption": None,
                                                  "checkpoint_volume": None})
    one = pool.model_copy(update={"count": 1})
    return spec.model_copy(update={"name": bake_cluster_name(image), "node_pools": [one], "storage": [],
                                   "lifecycle": lifecycle, "nccl_overrides": {}})


def read_install_record(outputs: ClusterOutputs) -> dict[str, str]:
    """The install record the site playbook wrote on the bake node, read back over ssh."""
    node = outputs.nodes[0]
    try:
        done = subprocess.run(ssh_argv(outputs, node, ["cat", INSTALL_RECORD], batch=True), capture_output=True,
                              text=True, timeout=60, check=False, env=child_env())
    except subprocess.TimeoutExpired:
        raise ProviderError(f"{node.name}: reading {INSTALL_RECORD} timed out") from None
    record = parse_keyvals("\n".join(done.stdout.splitlines()[:16]))
    missing = [key for key in RECORD_KEYS if key not in record]
    if done.returncode != 0 or missing or record.get("version") != "1":
        raise ProviderError(f"{node.name}: no install record at {INSTALL_RECORD} after configure "
                            f"(rc {done.returncode}, missing {', '.join(missing) or 'nothing'})",
                            hint="the install_record role did not run: check the configure output above")
    return {key: record[key][:200] for key in RECORD_KEYS}


def build(spec: ClusterSpec, pool_name: str, name: str, driver: ProviderDriver,
          progress: Callable[[str], None],
          configure: Callable[..., object] | None = None) -> ImageRecord:
    """Bake image `name` from one node of `pool_name` (see the module's steps); return its record."""
    from toolkit.providers.lab.driver import LocalLabDriver

    store.check_name(name)
    if store.load(name) is not None:
        raise UsageError(f"--name: an image named {name} exists already",
                         hint=f"delete it first with `{store.delete_command(name)}`, or choose another name")
    if not isinstance(driver, LocalLabDriver):
        raise ProviderError(f"image build: baking on {spec.provider} is not built yet (the local lab only)",
                            hint=store.cloud_instead("cloud's console", "m-... or img-..."))
    if configure is None:
        from toolkit.configure import configure as run_configure
        configure = run_configure
    bake = bake_spec(spec, pool_name, name)
    if store.image_dir(name).exists() or store.image_dir(name).is_symlink():
        # A folder without a record: a bake killed while it copied. Nothing uses it (no record).
        progress(f"image {name}: removing what an interrupted bake left")
        store.forget(name)
    if driver.exists(bake):
        # Only image build makes a cluster of that name (no spec may take it), under its lock.
        progress(f"{bake.name}: left by an interrupted bake; removing it first")
        driver.down(bake, progress)
    progress(f"baking image {name} from pool {pool_name}: one node in cluster {bake.name}")
    saved = False
    try:
        outputs = driver.up(bake, progress)
        result = configure(bake, outputs, progress, full=True)
        failed = [node for node in getattr(result, "nodes", {}).values() if not node.ok]
        if failed or not getattr(result, "ok", False):
            why = "; ".join(f"{node.name}: {node.failed_task}: {node.message}" for node in failed)
            raise CheckFailed(f"image build: configure failed on the bake node ({why or 'the playbook failed'})",
                              hint=f"fix the cause above and run `{store.build_command(name, pool_name)}` again")
        installed = read_install_record(outputs)
        layout, location, base_key = driver.bake_image(bake, name, progress)
        record = ImageRecord(
            name=name, provider=spec.provider, cluster=spec.name, pool=pool_name,
            instance_type=bake.node_pools[0].instance_type, software=bake.software.model_dump(mode="json"),
            created_at=datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
            stack=installed, layout=layout, base_key=base_key, location=location)
        store.save(record)
        saved = True
    except BaseException:
        if not saved:
            store.forget(name)  # a half-copied root is no image
        try:
            driver.down(bake, progress)
        except GpuctlError as exc:  # the bake's own failure is the one to report; say this one too
            progress(f"{bake.name}: not removed ({exc.message}); the next image build removes it first")
        raise
    # The image is made: a cluster that cannot be removed now is an error of its own.
    driver.down(bake, progress)
    progress(f"image {name} baked: kernel {record.stack['kernel']}, install inputs {record.stack['inputs'][:12]}")
    return record


def users(name: str) -> list[str]:
    """The lab clusters in this gpuctl home whose nodes start from image `name`."""
    from toolkit.providers.lab import state as lab_state
    from toolkit.state import gpuctl_home

    found = []
    clusters = gpuctl_home() / "clusters"
    for folder in sorted(clusters.iterdir()) if clusters.is_dir() else []:
        try:
            state = lab_state.load(folder.name)
        except (ProviderError, ValueError):
            continue
        if state is not None and any(node.image == name for node in state.nodes):
            found.append(folder.name)
    return found


def delete(name: str, progress: Callable[[str], None]) -> bool:
    """Remove image `name` (its files and its record); refuse while a lab cluster starts from it.
    False when there was no such image."""
    store.check_name(name)
    in_use = users(name)
    if in_use:
        raise UsageError(f"image {name} is the root of the nodes of {', '.join(in_use)}",
                         hint=f"remove those clusters with `{hints.command('down', 'SPEC')}` first")
    folder = store.image_dir(name)
    if not folder.exists() and not folder.is_symlink():
        return False
    try:
        record = store.load(name)
    except ProviderError:
        record = None  # a damaged record: its folder is removed all the same
    store.forget(name)
    progress(f"image {name} deleted" + (f" (baked from {record.cluster}/{record.pool})" if record else ""))
    return True
