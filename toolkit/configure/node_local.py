"""Node-local runs (`gpuctl configure --node-local`): the site playbook runs on each node itself.

Run from the controller, the site playbook costs Ansible's strategy process about 60 ms per node
per task (docs/scale.md): about 60 tasks a node make 78 minutes at 1,250 nodes before any package is
installed. A node-local run ships the rendered site playbook, its roles and the controller's own
ansible-core (pure Python, the same version) to each node once, starts it there with a local
connection, every node at once, and fetches each node's report: the controller pays a few tasks per
node (templates/node_local.yml.j2), and the nodes install in parallel instead of in waves of forks.

The site playbook is the same file either way, so a node's fingerprint does not depend on how it
was configured. What differs is each node's own inventory (its vars only, every string `!unsafe`,
connection local, the controller's paths replaced by the shipped ones) and the mtu role, which sets
the MTU at runtime only there: the controller's play runs the role again once every node has set it,
so the peers are pinged then, as in a run from the controller. Each node's events come back in
ansible-runner's shape (playbooks/node_local/callback_plugins/gpuctl_events.py) and feed the same
tracker as a controller run's.
"""

from __future__ import annotations

import importlib.metadata
import io
import json
import tarfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.configure.ansible_run import NodeResult, Progress, Tracker
from toolkit.configure.digest import sha, tree_digest
from toolkit.configure.render import InventoryData, render_inventory, unsafe_yaml
from toolkit.files import write_atomic
from toolkit.paths import REPO, ROLES_PATH
from toolkit.secrets import redact
from toolkit.state import own_dir

# The node-side files: the launcher, the events callback and the run's ansible.cfg.
NODE_SIDE = REPO / "playbooks" / "node_local"
# ansible-core and the packages it imports to run a playbook (its requirements without
# cryptography, which only vault and some modules need and is compiled per Python), by distribution
# name and importable top-level name. All are pure Python, or fall back to it (PyYAML, MarkupSafe),
# so they run on the node's Python whatever its minor version.
LIBRARIES = {"ansible-core": "ansible", "Jinja2": "jinja2", "MarkupSafe": "markupsafe", "PyYAML": "yaml",
             "packaging": "packaging", "resolvelib": "resolvelib"}
# Where the shipped directory lives on the node: /var/lib/gpuctl-local-<digest>. A new bundle gets a
# new directory (and the launcher removes the old ones), so a node never runs a mix of two.
REMOTE_PARENT = "/var/lib"
# How long a node's run may take before the controller gives it up: a first install of driver,
# CUDA and NCCL over a slow public link is tens of minutes.
TIMEOUT_S = 3 * 3600
# The controller's connection vars, and its paths that the node's run replaces or does not use.
_CONTROLLER_VARS = ("ansible_host", "ansible_port", "ansible_user", "ansible_become", "ansible_ssh_common_args",
                    "ansible_ssh_private_key_file", "ansible_python_interpreter", "gpuctl_nccl_dir")
# What a node's report may hold, each at most this many bytes: a node is not trusted to size them.
_MAX_EVENTS = 64 << 20
_MAX_BUNDLE = 256 << 20


@dataclass(frozen=True)
class LocalRun:
    """One configure's node-local files on the controller, and the directory they go to on the nodes."""

    playbook: Path  # node_local.yml in the cluster's directory
    bundle: Path  # the tar.gz shipped to every node
    remote_dir: str
    inventories: Path  # <node>.yml: each node's own inventory
    results: Path  # <node>.tar: each node's report, fetched back


def _library_dirs() -> list[tuple[str, Path]]:
    dirs = []
    for distribution, name in LIBRARIES.items():
        module = importlib.import_module(name)
        dirs.append((distribution, Path(str(module.__file__)).parent))
    return dirs


def bundle_digest(site: str, roles: Sequence[str], gather: Path) -> str:
    """What the shipped bundle holds: the libraries' versions, the roles, the gather script, the
    site playbook, the node-side files and this module (which builds it). Equal digests, equal
    bundles: each is shipped once."""
    versions = {distribution: importlib.metadata.version(distribution) for distribution in LIBRARIES}
    parts = [json.dumps(versions, sort_keys=True), tree_digest(ROLES_PATH / role for role in roles),
             sha(gather.read_bytes()), sha(site.encode()), tree_digest([NODE_SIDE, Path(__file__)])]
    return sha("\n".join(parts).encode())[:16]


def _clean(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Root's files, nobody else's to write, without compiled caches (the node compiles its own)."""
    if "__pycache__" in info.name.split("/") or info.name.endswith(".pyc"):
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mode &= 0o755
    return info


def _add_text(archive: tarfile.TarFile, name: str, text: str, mode: int = 0o644) -> None:
    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.uname, info.gname = len(data), mode, "root", "root"
    archive.addfile(info, io.BytesIO(data))


def build_bundle(directory: Path, digest: str, site: str, roles: Sequence[str], gather: Path) -> Path:
    """The bundle for `digest` in `directory` (built once; bundles of other digests removed)."""
    target = directory / f"bundle-{digest}.tar.gz"
    if target.is_file():
        return target
    for old in directory.glob("bundle-*.tar.gz"):
        old.unlink(missing_ok=True)
    top = f"gpuctl-local-{digest}"
    partial = target.with_suffix(".partial")
    with tarfile.open(partial, "w:gz", compresslevel=6) as archive:
        root = tarfile.TarInfo(top)
        root.type, root.mode, root.uname, root.gname = tarfile.DIRTYPE, 0o700, "root", "root"
        archive.addfile(root)
        for distribution, path in _library_dirs():
            archive.add(path, arcname=f"{top}/lib/{path.name}", filter=_clean)
            # ansible-core asks importlib.metadata for its requirements' versions at start: each
            # gets the distribution's name and version, all that lookup reads.
            version = importlib.metadata.version(distribution)
            _add_text(archive, f"{top}/lib/{distribution}-{version}.dist-info/METADATA",
                      f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n")
        for role in roles:
            archive.add(ROLES_PATH / role, arcname=f"{top}/roles/{role}", filter=_clean)
        archive.add(NODE_SIDE / "callback_plugins", arcname=f"{top}/callback_plugins", filter=_clean)
        archive.add(NODE_SIDE / "launch.sh", arcname=f"{top}/launch.sh", filter=_clean)
        archive.add(NODE_SIDE / "ansible.cfg", arcname=f"{top}/ansible.cfg", filter=_clean)
        archive.add(gather, arcname=f"{top}/gather/{gather.name}", filter=_clean)
        _add_text(archive, f"{top}/site.yml", site)
    partial.chmod(0o600)
    partial.replace(target)
    return target


def node_inventory(data: InventoryData, name: str, remote_dir: str, gather: Path, *,
                   cluster: str, provider: str) -> str:
    """`name`'s own inventory for its run: its host vars and the group's, without the controller's
    connection vars, connection local, the shipped gather script, bundles kept on the node, and the
    mtu role at runtime only."""
    host = {key: value for key, value in data.hosts[name].items() if key not in _CONTROLLER_VARS}
    group = {key: value for key, value in data.group.items() if key not in _CONTROLLER_VARS}
    group.update(ansible_connection="local", gpuctl_gather_script=f"{remote_dir}/gather/{gather.name}",
                 gpuctl_bundle_dir=f"{remote_dir}/run/bundles", mtu_runtime_only=True)
    return render_inventory(InventoryData(hosts={name: host}, group=group), cluster=cluster, provider=provider)


def prepare(base: Path, data: InventoryData, names: Iterable[str], *, site: str, roles: Sequence[str],
            cluster: str, provider: str) -> LocalRun:
    """Write what the node-local playbook reads: the bundle, each named node's inventory and
    node_local_vars.yml (the paths, as !unsafe data: a path is never a template)."""
    gather = Path(str(data.group["gpuctl_gather_script"]))
    local = base / "local"
    own_dir(local)
    digest = bundle_digest(site, roles, gather)
    remote_dir = f"{REMOTE_PARENT}/gpuctl-local-{digest}"
    bundle = build_bundle(local, digest, site, roles, gather)
    inventories, results = local / "inventories", local / "results"
    for directory in (inventories, results):
        own_dir(directory)
    for name in names:
        write_atomic(inventories / f"{name}.yml",
                     node_inventory(data, name, remote_dir, gather, cluster=cluster, provider=provider))
        (results / f"{name}.tar").unlink(missing_ok=True)  # a report is this run's or none
    write_atomic(base / "node_local_vars.yml", "---\n# Written by gpuctl for node_local.yml.\n" + unsafe_yaml({
        "gpuctl_local_bundle": str(bundle), "gpuctl_local_dir": remote_dir,
        "gpuctl_local_inventories": str(inventories), "gpuctl_local_results": str(results),
        "gpuctl_local_timeout": TIMEOUT_S}))
    return LocalRun(playbook=base / "node_local.yml", bundle=bundle, remote_dir=remote_dir,
                    inventories=inventories, results=results)


def _member(archive: tarfile.TarFile, name: str, limit: int) -> bytes | None:
    """One regular file of a node's report, read whole if it is at most `limit` bytes."""
    try:
        info = archive.getmember(name)
    except KeyError:
        return None
    if not info.isreg() or info.size > limit:
        return None
    handle = archive.extractfile(info)
    return handle.read() if handle is not None else None


def read_report(report: Path, name: str, progress: Progress, bundles: Path) -> NodeResult | None:
    """What `name`'s run reported: its result from its events, said as progress lines role by role,
    and its topology bundle moved to `bundles/<name>.tar`. None where there is no report (the
    controller's play failed the node before it came back, and says why)."""
    if not report.is_file():
        return None
    tracker = Tracker([name], progress)
    try:
        with tarfile.open(report) as archive:
            events = _member(archive, "events.jsonl", _MAX_EVENTS)
            rc = (_member(archive, "rc", 64) or b"").decode(errors="replace").strip()
            output = (_member(archive, "output", 8192) or b"").decode(errors="replace")
            bundle = _member(archive, f"bundles/{name}.tar", _MAX_BUNDLE)
    except (OSError, tarfile.TarError) as exc:
        return _failed(name, f"its report could not be read ({type(exc).__name__})")
    stats: dict[str, Any] = {}
    for line in (events or b"").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or not isinstance(event.get("event_data"), dict):
            continue
        if event.get("event") == "playbook_on_stats":
            stats = event["event_data"]
        tracker(event)
    tracker.flush()
    tracker.set_changed(stats)
    node = tracker.nodes[name]
    if bundle is not None:
        write_atomic(bundles / f"{name}.tar", bundle)
    if rc != "0" and node.ok:
        # The run ended before any task failed (no Python for it, a playbook it could not read).
        why = " ".join(output.split())[-400:] or "no output"
        node.ok, node.failed_task = False, "node-local run"
        node.message = redact(f"exit status {rc or 'unknown'}: {why}")
    return node


def _failed(name: str, message: str) -> NodeResult:
    return NodeResult(name, ok=False, failed_task="node-local run", message=message)
