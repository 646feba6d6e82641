"""Provider `local`: a GPU-cluster stand-in on this machine, made of network namespaces.

Each node is a network namespace with its own Debian root and sshd; nodes share a management
bridge (reachable from the host) and a fabric bridge. `up` and `down` are idempotent, and the
state file is written before anything is created, so `down` cleans up after any crash of `up`.
The pieces live beside it in this package: state (names), host (root, tools), rootfs (base root),
network (bridges, veths), nodes (roots, sshd) and replay (stand-in commands).
"""

from __future__ import annotations

import os
import shutil
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from toolkit import hints
from toolkit.errors import ProviderError
from toolkit.files import read_text_bounded, write_atomic
from toolkit.images import store as image_store
from toolkit.images.store import baked_name
from toolkit.listing import first
from toolkit.paths import Paths
from toolkit.providers.base import ClusterOutputs, FabricInterface, NodeOutput, ProgressCallback
from toolkit.providers.lab import host as lab_host
from toolkit.providers.lab import images as lab_images
from toolkit.providers.lab import network as lab_network
from toolkit.providers.lab import nodes as lab_nodes
from toolkit.providers.lab import object_store as lab_store
from toolkit.providers.lab import rootfs as lab_rootfs
from toolkit.providers.lab import state as lab_state
from toolkit.providers.lab.state import FABRIC_IFACE, LabState
from toolkit.spec.files import MAX_PUBLIC_KEY_BYTES
from toolkit.spec.models import ClusterSpec
from toolkit.state import cluster_dir, own_dir


def ssh_key_path(cluster: str) -> Path:
    return Paths.of(cluster).ssh / "id_ed25519"


def known_hosts_path(cluster: str) -> Path:
    return Paths.of(cluster).known_hosts


class LocalLabDriver:
    name = "local"

    def __init__(self) -> None:
        self.kept: list[str] = []  # what the last `down` kept (the lab's object store), one line each
        self.deleted_storage: list[str] = []  # what the last `down --delete-storage` deleted

    def up(self, spec: ClusterSpec, progress: ProgressCallback) -> ClusterOutputs:
        lab_host.require_root()
        lab_host.ensure_tools()
        # The images first: a pool whose image cannot start nodes is refused before any state is saved.
        images = {index: image_store.require(image, where=f"node_pools[{index}].image")
                  for index, spec_pool in enumerate(spec.node_pools)
                  if (image := baked_name(spec_pool.image)) is not None}
        for index, record in images.items():
            lab_images.check_usable(record, f"node_pools[{index}].image")
        state = self._plan_and_record(spec)
        for index, record in images.items():
            lab_images.check_layout(record, state.layout, f"node_pools[{index}].image")
        base = lab_rootfs.ensure_base(progress)
        key = self._ensure_cluster_key(spec.name)
        progress(f"creating networks {state.mgmt_bridge} (management) and {state.fabric_bridge} (fabric)")
        lab_network.create_bridges(state)
        if lab_store.object_volumes(spec):
            # On the management bridge's host address, which exists from here on.
            lab_store.ensure(spec, state.host_mgmt_ip.split("/")[0], progress)
        hosts = "".join(f"{n.mgmt_ip} {n.name}\n" for n in state.nodes)
        public_key = read_text_bounded(key.with_suffix(".pub"), limit=MAX_PUBLIC_KEY_BYTES, what="public key",
                                       follow=False)
        pinned: list[str] = []
        for node in state.nodes:
            progress(f"{node.name}: namespace {node.netns}, {state.layout} root, host key")
            lab_network.create_node_network(state, node)
            own_dir(Path(node.node_dir))  # never through a link: the copy below writes there
            if state.layout == "copy" and not lab_nodes.root_dir(state, node).exists():
                # A node of a baked pool starts from the image's whole root instead of the base.
                source = lab_images.image_root(node.image) if node.image else base
                lab_rootfs.copy_root(source, lab_nodes.root_dir(state, node))
            host_key = lab_nodes.prepare(state, node, base, public_key, hosts)
            pinned.append(f"{node.mgmt_ip} {host_key}\n")
        write_atomic(known_hosts_path(spec.name), "".join(pinned))
        with ThreadPoolExecutor(max_workers=min(8, len(state.nodes))) as pool:
            list(pool.map(lambda n: lab_nodes.start(state, n, base), state.nodes))
        progress(f"{len(state.nodes)} nodes answering SSH on {state.mgmt_cidr}")
        state.phase = "up"
        lab_state.save(state)
        return self._outputs(spec, state)

    def bake_image(self, spec: ClusterSpec, name: str, progress: ProgressCallback) -> tuple[str, str, str | None]:
        """Keep the root of the lab's one node as image `name` (`gpuctl image build`): stop the node,
        copy its root (toolkit/providers/lab/images.py); return (layout, location, base key)."""
        state = self._load(spec)
        if state is None or len(state.nodes) != 1:
            raise ProviderError(f"lab {spec.name} is not a one-node bake cluster")
        node = state.nodes[0]
        progress(f"{node.name}: stopping it and copying its root into image {name}")
        lab_nodes.stop(node)
        layout, location = lab_images.bake(state, node, name)
        return layout, location, lab_rootfs.base_key() if layout == "overlay" else None

    def outputs(self, spec: ClusterSpec) -> ClusterOutputs:
        state = self._load(spec)
        if state is None or state.phase != "up":
            raise ProviderError(f"no local lab named {spec.name} is up",
                                hint=f"create it first with `{hints.spec_command(spec.name, 'up')}`")
        return self._outputs(spec, state)

    def revive(self, spec: ClusterSpec, progress: ProgressCallback) -> list[str]:
        """Restart the sshd of any node whose daemon died (what a reboot would do on a real host)."""
        lab_host.require_root()
        state = self._load(spec)
        if state is None or state.phase != "up":
            return []
        base = lab_rootfs.base_root()
        revived = []
        for node in state.nodes:
            if not lab_nodes.sshd_listening(node):
                progress(f"{node.name}: sshd is not answering; restarting it")
                lab_nodes.start(state, node, base)
                revived.append(node.name)
        return revived

    def status(self, spec: ClusterSpec) -> dict[str, object]:
        state = self._load(spec)
        if state is None:
            return {"cluster": spec.name, "provider": "local", "phase": "absent", "nodes": []}
        namespaces = lab_network.existing_netns()
        nodes = [
            {"name": n.name, "management_ip": n.mgmt_ip, "fabric_ip": n.fabric_ip,
             "namespace": n.netns if n.netns in namespaces else None,
             "sshd": "up" if lab_nodes.sshd_listening(n) else "down",
             "replay_capture": n.replay_capture}
            for n in state.nodes
        ]
        return {"cluster": spec.name, "provider": "local", "phase": state.phase,
                "management": state.mgmt_cidr, "fabric": state.fabric_cidr,
                "bridges": [state.mgmt_bridge, state.fabric_bridge], "nodes": nodes}

    def exists(self, spec: ClusterSpec) -> bool:
        try:
            if lab_state.load(spec.name) is not None:
                return True
        except ProviderError:
            return True  # a damaged state file: something was made
        return os.path.lexists(cluster_dir(spec.name)) or bool(lab_network.leftovers(spec.name))

    def down(self, spec: ClusterSpec, progress: ProgressCallback, *, delete_storage: bool = False) -> bool:
        lab_host.require_root()
        if delete_storage:
            # First, while the cluster's network still reaches the store (on its management
            # bridge): each bucket is emptied, deleted and checked gone.
            self.deleted_storage = self.delete_storage(spec, progress)
        if not self.exists(spec):
            progress(f"no lab named {spec.name} exists on this machine: nothing to remove")
            self.kept = lab_store.on_down(spec, progress)
            self._report_kept(progress)
            return False
        state = lab_state.load(spec.name, set_aside=True, progress=progress)
        if state is None:
            # No usable state (never written, deleted, or damaged and set aside): the names come
            # from the spec, and everything carrying the lab's tag is swept below as well.
            progress(f"no usable state for {spec.name}: removing by the names the spec gives and the tag "
                     f"{lab_state.lab_tag(spec.name)}")
            state = lab_state.plan(spec)
        state.phase = "removing"
        lab_state.save(state)
        # From here on every name acted on is derived from the cluster's name (its tag) and gpuctl's
        # layout, never read from the state file: processes in the lab's own namespaces or rooted in
        # its nodes directory, the namespaces and links the plan's rules name, mounts and directories
        # inside the cluster's directory. Nodes the state does not list (a lost state, a spec that
        # shrank) are found by the same rules.
        progress(f"stopping the processes of {spec.name}'s nodes")
        lab_nodes.stop_processes(lambda: lab_nodes.lab_processes(spec.name))
        # The store is reached over the management bridge: settle what is kept before it goes.
        self.kept = lab_store.on_down(spec, progress)
        progress(f"removing namespaces, veths and bridges tagged {lab_state.lab_tag(spec.name)}")
        lab_network.remove_network(spec.name)
        base = cluster_dir(spec.name)
        mounts = lab_nodes.host_mounts_under(str(base))
        for point in reversed(mounts):
            lab_host.sh(["umount", "-l", point], check=False)
        if lab_nodes.host_mounts_under(str(base)):
            # Never delete through a mount: a leaked bind of /dev would take the host's /dev along.
            raise ProviderError(f"mounts under {base} are still present; not deleting node roots",
                                hint="unmount them (see /proc/self/mountinfo) and run "
                                f"`{hints.spec_command(spec.name, 'down')}` again")
        progress("removing node roots")
        _remove_own_tree(lab_state.nodes_dir(spec.name))
        left = self.leftovers(state)
        if left:
            raise ProviderError(f"lab {spec.name} was not fully removed: {'; '.join(left)}",
                                hint=f"run `{hints.spec_command(spec.name, 'down')}` again; "
                                "if it persists, remove these by hand")
        _remove_own_tree(base)
        progress(f"nothing named for {spec.name} is left")
        self._report_kept(progress)
        return True

    def _report_kept(self, progress: ProgressCallback) -> None:
        """Volumes outlive the nodes (keep_on_down): say what was kept and how to remove it."""
        for line in self.kept:
            progress(line)

    def delete_storage(self, spec: ClusterSpec, progress: ProgressCallback) -> list[str]:
        """`gpuctl down --delete-storage`: empty and stop the lab's object store (after `down`)."""
        lab_host.require_root()
        return lab_store.delete_storage(spec, progress)

    @staticmethod
    def leftovers(state: LabState) -> list[str]:
        """Everything on the host that the plan of `state`'s cluster names; empty when fully removed.
        Only the cluster's name is taken from `state`: the names come from the plan's rules."""
        cluster = state.cluster
        left = lab_network.leftovers(cluster)
        left += [f"mount {m}" for m in lab_nodes.host_mounts_under(str(cluster_dir(cluster)))]
        left += [f"process {pid} of a node of {cluster}" for pid in lab_nodes.lab_processes(cluster)]
        nodes = lab_state.nodes_dir(cluster)
        left += [f"directory {nodes}"] if os.path.lexists(nodes) else []
        return left

    @staticmethod
    def _load(spec: ClusterSpec) -> LabState | None:
        """The recorded state, with what each node replays taken from the spec (its capture, checked
        by `validate`), never from the file: `up`, `configure`'s revive, `status` and the outputs
        copy a node's replay files from there."""
        state = lab_state.load(spec.name)
        if state is None:
            return None
        planned = {node.name: node for node in lab_state.plan(spec).nodes}
        for node in state.nodes:
            mine = planned.get(node.name)
            node.pool = mine.pool if mine is not None else node.pool
            node.replay_capture = mine.replay_capture if mine is not None else None
            node.gpu_stack = mine.gpu_stack if mine is not None else None
            # node.image stays as recorded: the node's own layer was made on that image's layer,
            # and mounting it on another would be another root (up refuses a spec that changed it).
        return state

    def _plan_and_record(self, spec: ClusterSpec) -> LabState:
        """Reuse the recorded plan (idempotent `up`), or make one and save it before creating."""
        existing = self._load(spec)
        octet = lab_state.subnet_octet(existing) if existing is not None else None
        if existing is not None and octet is None:
            # New nodes take their addresses from the lab's subnet: one gpuctl cannot read must not
            # be swapped for another, which would put the new nodes on a network of their own.
            raise ProviderError(f"lab {spec.name}'s state names a management subnet gpuctl did not write "
                                f"({existing.mgmt_cidr[:60]!r})",
                                hint=f"run `{hints.spec_command(spec.name, 'down')}`, then "
                                f"`{hints.spec_command(spec.name, 'up')}`")
        fresh = lab_state.plan(spec, lab_network.taken_octets() if existing is None else None, octet=octet)
        if existing is not None:
            had = [n.name for n in existing.nodes]
            # Growing keeps every node's index and addresses: nodes may be added after the last one
            # (a larger count in the last pool, or a new pool at the end), never between.
            if had != [n.name for n in fresh.nodes][:len(had)]:
                raise ProviderError(f"lab {spec.name} exists with other nodes than the spec lists",
                                    hint="a lab grows by nodes after its last one (the last pool's count, or a new "
                                    f"pool at the end); otherwise run `{hints.spec_command(spec.name, 'down')}` "
                                    f"first, then `{hints.spec_command(spec.name, 'up')}`")
            moved = [f"{old.name} ({old.image or 'base'} -> {new.image or 'base'})"
                     for old, new in zip(existing.nodes, fresh.nodes, strict=False) if old.image != new.image]
            if moved:
                raise ProviderError(f"lab {spec.name}: the spec changes the image its nodes started from: "
                                    f"{first(moved, 4)}",
                                    hint=f"a node keeps its image; run `{hints.spec_command(spec.name, 'down')}` "
                                    f"first, then `{hints.spec_command(spec.name, 'up')}`")
            state = existing
            state.nodes = [*existing.nodes, *fresh.nodes[len(had):]]
        else:
            # No state here, yet namespaces or links with this lab's tag exist: a lab of the same
            # name made under another GPUCTL_HOME (or whose state was lost). Building beside it would
            # put two nodes on one address; refuse and say what is there.
            present = lab_network.leftovers(spec.name)
            if present:
                raise ProviderError(
                    f"a lab with the tag {fresh.tag} (cluster name {spec.name}) already exists on this machine but "
                    f"not in {cluster_dir(spec.name).parent}: {first(present, 6)}",
                    hint="it was made under another GPUCTL_HOME (remove it with that home's `down`) or its state was "
                    f"lost (`{hints.spec_command(spec.name, 'down')}` removes it); or give this cluster another name",
                )
            state = fresh
            probe = cluster_dir(spec.name, create=True) / "overlay-probe"
            state.layout = "overlay" if lab_rootfs.overlay_supported(probe) else "copy"
        state.phase = "creating"
        lab_state.save(state)
        return state

    @staticmethod
    def _ensure_cluster_key(cluster: str) -> Path:
        key = ssh_key_path(cluster)
        own_dir(key.parent)
        if not os.path.lexists(key):
            lab_host.sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"gpuctl-{cluster}",
                         "-f", str(key)])
        return key

    @staticmethod
    def _outputs(spec: ClusterSpec, state: LabState) -> ClusterOutputs:
        pools = {p.name: p for p in spec.node_pools}
        nodes = [
            NodeOutput(
                name=n.name, pool=n.pool, instance_id=n.netns,
                instance_type=pools[n.pool].instance_type if n.pool in pools else "lab",
                private_ip=n.mgmt_ip, ssh_host=n.mgmt_ip,
                fabric_interfaces=[FabricInterface(name=FABRIC_IFACE, ipv4=n.fabric_ip)],
                replay_capture=n.replay_capture,
            )
            for n in state.nodes
        ]
        record = lab_store.load(spec.name) if lab_store.object_volumes(spec) else None
        if lab_store.object_volumes(spec) and (record is None or not lab_store.running(record)):
            raise ProviderError(f"the lab object store of {spec.name} is not running",
                                hint=f"`{hints.spec_command(spec.name, 'up')}` starts it again (a store stopped "
                                "with the host lost its data)")
        return ClusterOutputs(
            cluster=spec.name, provider="local", fabric=spec.network.fabric, mtu=spec.network.mtu,
            nodes=nodes, ssh_private_key=ssh_key_path(spec.name),
            known_hosts=known_hosts_path(spec.name),
            volumes=lab_store.volume_outputs(spec, record) if record is not None else [],
        )


def _remove_own_tree(path: Path) -> None:
    """Remove a directory of gpuctl's own layout inside the cluster's directory.

    A real directory of this user's is removed with everything in it (shutil.rmtree never follows a
    link inside it); anything else standing at that path (a link, a file) is removed as itself,
    never followed. A directory of another user's is refused: gpuctl did not make it.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ProviderError(f"{path} cannot be read ({exc.strerror}); not removing it") from None
    if not stat.S_ISDIR(info.st_mode):
        try:
            path.unlink()  # a link is removed as the link: its target is not gpuctl's
        except OSError as exc:
            raise ProviderError(f"{path} cannot be removed ({exc.strerror})") from None
        return
    if info.st_uid != os.geteuid():
        raise ProviderError(f"{path} belongs to uid {info.st_uid}, not to this user: gpuctl did not make it, "
                            "and does not remove it", hint="look at what it is and remove it by hand")
    shutil.rmtree(path, ignore_errors=True)
