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
# The two runs on each node: the site playbook, then (after gpuctl tuned the node) finish.yml.
PHASES = ("site", "finish")
# The controller's connection vars, and its paths that the node's run replaces or does not use.
_CONTROLLER_VARS = ("ansible_host", "ansible_port", "ansible_user", "ansible_become", "ansible_ssh_common_args",
                    "ansible_ssh_private_key_file", "ansible_python_interpreter", "gpuctl_nccl_dir")
# What a node's report may hold, each at most this many bytes: a node is not trusted to size them.
_MAX_EVENTS = 64 << 20
_MAX_BUNDLE = 256 << 20
_LIMITS = {"events.jsonl": _MAX_EVENTS, "rc": 64, "output": 8192}
_MAX_REPORT = _MAX_EVENTS + _MAX_BUNDLE + (1 << 20)
_MAX_MEMBERS = 64


@dataclass(frozen=True)
class LocalRun:
    """One configure's node-local files on the controller, and the directory they go to on the nodes."""

    bundle: Path  # the tar.gz shipped to every node
    remote_dir: str
    inventories: Path  # <node>.site.yml, <node>.finish.yml: each node's own inventory per phase
    results: Path  # <node>.<phase>.tar: each node's report, fetched back
    tuned: Path  # <node>.tar: the files gpuctl tuned for the node, shipped for the finish phase
    gather: Path  # the gather script on the controller (shipped in the bundle)


def _library_dirs() -> list[tuple[str, Path]]:
    dirs = []
    for distribution, name in LIBRARIES.items():
        module = importlib.import_module(name)
        dirs.append((distribution, Path(str(module.__file__)).parent))
    return dirs


def bundle_digest(playbooks: dict[str, str], roles: Sequence[str], gather: Path) -> str:
    """What the shipped bundle holds: the libraries' versions, the roles, the gather script, the
    playbooks (site.yml, finish.yml), the node-side files and this module (which builds it). Equal
    digests, equal bundles: each is shipped once."""
    versions = {distribution: importlib.metadata.version(distribution) for distribution in LIBRARIES}
    parts = [json.dumps(versions, sort_keys=True), tree_digest(ROLES_PATH / role for role in roles),
             sha(gather.read_bytes()), sha(json.dumps(playbooks, sort_keys=True).encode()),
             tree_digest([NODE_SIDE, Path(__file__)])]
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
    _add_bytes(archive, name, text.encode(), mode)


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.uname, info.gname = len(data), mode, "root", "root"
    archive.addfile(info, io.BytesIO(data))


def build_bundle(directory: Path, digest: str, playbooks: dict[str, str], roles: Sequence[str],
                 gather: Path) -> Path:
    """The bundle for `digest` in `directory` (built once; bundles of other digests removed).
    `playbooks`: file name -> text; site.yml is the archive's last member (the unarchive's `creates`)."""
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
        for name in sorted(playbooks, key=lambda name: name == "site.yml"):
            _add_text(archive, f"{top}/{name}", playbooks[name])
    partial.chmod(0o600)
    partial.replace(target)
    return target


def node_inventory(data: InventoryData, name: str, remote_dir: str, gather: Path, *, cluster: str, provider: str,
                   phase: str = "site", unjudged: Sequence[str] = (), known: dict[str, list[str]] | None = None) -> str:
    """`name`'s own inventory for its `phase` run: its host vars and the group's, without the
    controller's connection vars, connection local, and the shipped files in place of the
    controller's. site: the mtu role at runtime only. finish: the peers not to judge (`unjudged`,
    addresses of nodes that failed this run), and where the peers' fabric was found on the nodes
    (Tencent HCC) their addresses from `known`, since no other host is in the node's play."""
    host = {key: value for key, value in data.hosts[name].items() if key not in _CONTROLLER_VARS}
    group = {key: value for key, value in data.group.items() if key not in _CONTROLLER_VARS}
    group.update(ansible_connection="local", gpuctl_gather_script=f"{remote_dir}/gather/{gather.name}",
                 gpuctl_bundle_dir=f"{remote_dir}/run/bundles")
    if phase == "site":
        group["mtu_runtime_only"] = True
    else:
        group.update(gpuctl_nccl_dir=f"{remote_dir}/finish/nccl", gpuctl_mtu_unjudged=list(unjudged))
        peer_nodes = host.pop("gpuctl_mtu_peer_nodes", None)
        if peer_nodes is not None:
            found = known or {}
            host["gpuctl_mtu_peers"] = [address for peer in peer_nodes for address in found.get(peer, [])]
            host["gpuctl_mtu_peer_names"] = {address: peer for peer in peer_nodes for address in found.get(peer, [])}
    return render_inventory(InventoryData(hosts={name: host}, group=group), cluster=cluster, provider=provider)


def prepare(base: Path, data: InventoryData, names: Iterable[str], *, playbooks: dict[str, str],
            roles: Sequence[str], cluster: str, provider: str) -> LocalRun:
    """Write what the site phase reads: the bundle, each named node's inventory and
    node_local_vars.yml (the paths, as !unsafe data: a path is never a template)."""
    gather = Path(str(data.group["gpuctl_gather_script"]))
    local = base / "local"
    own_dir(local)
    digest = bundle_digest(playbooks, roles, gather)
    remote_dir = f"{REMOTE_PARENT}/gpuctl-local-{digest}"
    bundle = build_bundle(local, digest, playbooks, roles, gather)
    run = LocalRun(bundle=bundle, remote_dir=remote_dir, inventories=local / "inventories",
                   results=local / "results", tuned=local / "tuned", gather=gather)
    for directory in (run.inventories, run.results, run.tuned):
        own_dir(directory)
    for name in names:
        write_atomic(run.inventories / f"{name}.site.yml",
                     node_inventory(data, name, remote_dir, gather, cluster=cluster, provider=provider))
        for phase in PHASES:  # a report is this run's or none
            (run.results / f"{name}.{phase}.tar").unlink(missing_ok=True)
    write_atomic(base / "node_local_vars.yml", "---\n# Written by gpuctl for node_local_site.yml and "
                 "node_local_finish.yml.\n" + unsafe_yaml({
                     "gpuctl_local_bundle": str(bundle), "gpuctl_local_dir": remote_dir,
                     "gpuctl_local_inventories": str(run.inventories), "gpuctl_local_results": str(run.results),
                     "gpuctl_local_tuned": str(run.tuned), "gpuctl_local_timeout": TIMEOUT_S}))
    return run


def prepare_finish(run: LocalRun, data: InventoryData, names: Iterable[str], nccl: Path, *, unjudged: Sequence[str],
                   known: dict[str, list[str]], cluster: str, provider: str) -> None:
    """Write what the finish phase reads: each named node's inventory, and a tar of the settings
    gpuctl tuned for it (`nccl`/<node>/nccl.conf, the one file the nccl_conf role installs),
    unpacked on the node as finish/nccl/<node>/nccl.conf."""
    for name in names:
        write_atomic(run.inventories / f"{name}.finish.yml",
                     node_inventory(data, name, run.remote_dir, run.gather, cluster=cluster, provider=provider,
                                    phase="finish", unjudged=unjudged, known=known))
        packed = io.BytesIO()
        with tarfile.open(fileobj=packed, mode="w") as archive:
            tuned = nccl / name / "nccl.conf"
            if tuned.is_file() and not tuned.is_symlink():
                _add_bytes(archive, f"finish/nccl/{name}/nccl.conf", tuned.read_bytes())
        write_atomic(run.tuned / f"{name}.tar", packed.getvalue())


def _members(archive: tarfile.TarFile, wanted: set[str]) -> dict[str, bytes]:
    """The regular files of a node's report that gpuctl reads, each read whole if within its limit;
    at most _MAX_MEMBERS headers are looked at (a report is a handful of files)."""
    found: dict[str, bytes] = {}
    for count, info in enumerate(archive):
        if count >= _MAX_MEMBERS:
            break
        if info.name in wanted and info.isreg() and info.size <= _LIMITS.get(info.name, _MAX_BUNDLE):
            handle = archive.extractfile(info)
            if handle is not None:
                found[info.name] = handle.read()
    return found


def _well_formed(event: Any) -> bool:
    """An event with the types the tracker reads: a node's report is not trusted to have them."""
    if not isinstance(event, dict) or not isinstance(event.get("event"), str):
        return False
    data = event.get("event_data")
    if not isinstance(data, dict):
        return False
    return (all(isinstance(data.get(key, ""), str | None) for key in ("host", "task", "role", "task_action"))
            and isinstance(data.get("res", {}), dict))


def read_report(report: Path, name: str, progress: Progress, bundles: Path) -> NodeResult | None:
    """What `name`'s run reported: its result from its events, said as progress lines role by role,
    and its topology bundle moved to `bundles/<name>.tar`. None where there is no report (the
    controller's play failed the node before it came back, and says why). A report that cannot be
    read fails this node alone, with why."""
    if not report.is_file():
        return None
    bundle_name = f"bundles/{name}.tar"
    try:
        size = report.stat().st_size
        if size > _MAX_REPORT:
            return _failed(name, f"its report is {size} bytes, more than gpuctl reads ({_MAX_REPORT})")
        # An uncompressed tar, as launch.sh writes it: nothing is inflated on the controller.
        with tarfile.open(report, "r:") as archive:
            files = _members(archive, {"events.jsonl", "rc", "output", bundle_name})
    except (OSError, tarfile.TarError) as exc:
        return _failed(name, f"its report could not be read ({type(exc).__name__})")
    rc = files.get("rc", b"").decode(errors="replace").strip()
    output = files.get("output", b"").decode(errors="replace")
    tracker = Tracker([name], progress)
    stats: dict[str, Any] = {}
    try:
        for line in files.get("events.jsonl", b"").splitlines():
            try:
                event = json.loads(line)
            except (ValueError, RecursionError):  # not JSON, or nested past what the parser follows
                continue
            if not _well_formed(event):
                continue
            if event["event"] == "playbook_on_stats":
                stats = {key: value for key, value in event["event_data"].items() if isinstance(value, dict)}
            tracker(event)
        tracker.flush()
        tracker.set_changed(stats)
    except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:
        return _failed(name, f"its events could not be read ({type(exc).__name__})")
    node = tracker.nodes[name]
    if bundle_name in files:
        write_atomic(bundles / f"{name}.tar", files[bundle_name])
    if rc != "0" and node.ok:
        # The run ended before any task failed (no Python for it, a playbook it could not read).
        why = " ".join(output.split())[-400:] or "no output"
        node.ok, node.failed_task = False, "node-local run"
        node.message = redact(f"exit status {rc or 'unknown'}: {why}")
    return node


def _failed(name: str, message: str) -> NodeResult:
    return NodeResult(name, ok=False, failed_task="node-local run", message=message)
