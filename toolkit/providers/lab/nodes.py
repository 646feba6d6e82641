"""One lab node: its root (overlay or copy of the base), its identity, and its sshd.

sshd runs as `ip netns exec <ns> unshare --mount --uts --kill-child sh -c '...; exec chroot ROOT
sshd -D'`: the node's network namespace, a private mount namespace in which the overlay, /proc,
/dev and /sys are mounted (so they vanish with the node's last process and never leak into the
host's mount table), and its own hostname. Everything the node keeps across restarts (host keys,
configuration the playbooks wrote) lives in its writable layer on disk.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from toolkit.errors import ProviderError
from toolkit.files import log_tail, open_private, write_atomic
from toolkit.images import store as image_store
from toolkit.providers.lab import gpu_stack as lab_gpu_stack
from toolkit.providers.lab import images as lab_images
from toolkit.providers.lab import node_files
from toolkit.providers.lab import replay as lab_replay
from toolkit.providers.lab.host import sh
from toolkit.providers.lab.network import own_netns_present
from toolkit.providers.lab.state import LabNode, LabState, nodes_dir
from toolkit.state import own_dir

HOST_KEY = "ssh_host_ed25519_key"  # in the node's /etc/ssh
SSHD = "/usr/sbin/sshd"  # inside a node root; a launcher's script ends `exec chroot ROOT SSHD`
SSHD_DROPIN = """\
# Written by gpuctl for a lab node. Key-only root login from the cluster's own key pair.
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
PidFile /run/sshd.pid
MaxStartups 200
MaxSessions 200
"""


def writable_dir(state: LabState, node: LabNode) -> Path:
    """Where files for the node are written from the host (the overlay's upper layer or the copy)."""
    return Path(node.node_dir) / ("upper" if state.layout == "overlay" else "root")


def root_dir(state: LabState, node: LabNode) -> Path:
    """The node's `/` as its own processes see it."""
    return Path(node.node_dir) / ("merged" if state.layout == "overlay" else "root")


def prepare(state: LabState, node: LabNode, base: Path, public_key: str, hosts: str) -> str:
    """Write the node's identity into its writable layer; return its host public key line.

    The layer is the node's own (root on the node may have put links anywhere in it): every write
    goes through `node_files`, which never follows one.
    """
    layer = writable_dir(state, node)
    own_dir(Path(node.node_dir))  # a real directory of gpuctl's, down from the home: no link on the way
    if state.layout == "overlay":
        for sub in ("upper", "work", "merged"):
            (Path(node.node_dir) / sub).mkdir(exist_ok=True)
    with node_files.directory(layer, "etc", base=base) as etc:
        node_files.write(etc, "hostname", node.name + "\n", mode=0o644)
        node_files.write(etc, "hosts", f"127.0.0.1 localhost\n{hosts}", mode=0o644)
    with node_files.directory(layer, "etc/ssh", base=base) as ssh_dir:
        public = node_files.read(ssh_dir, HOST_KEY + ".pub", limit=4096)
        # Kept across restarts: the pinned host key must not change.
        if public is None or node_files.read(ssh_dir, HOST_KEY, limit=16 * 1024) is None:
            private, public = _new_host_key(node.name)
            node_files.write(ssh_dir, HOST_KEY, private, mode=0o600)
            node_files.write(ssh_dir, HOST_KEY + ".pub", public, mode=0o644)
    with node_files.directory(layer, "etc/ssh/sshd_config.d", base=base) as dropins:
        node_files.write(dropins, "gpuctl.conf", SSHD_DROPIN, mode=0o644)
    with node_files.directory(layer, "root/.ssh", base=base) as dot_ssh:
        os.fchmod(dot_ssh, 0o700)
        node_files.write(dot_ssh, "authorized_keys", public_key, mode=0o600)
    with node_files.directory(layer, "run/sshd", base=base):
        pass
    if node.replay_capture:
        for made in ("usr/local/bin", "usr/local/share"):
            with node_files.directory(layer, made, base=base):
                pass
        lab_replay.install(Path(node.replay_capture), layer)
    if node.gpu_stack is not None:
        lab_gpu_stack.install(layer, base, node.gpu_stack)
    kind, blob = public.decode(errors="replace").split()[:2]
    return f"{kind} {blob}"


def _new_host_key(comment: str) -> tuple[bytes, bytes]:
    """A new ed25519 host key pair (private, public), made in a private directory of the host's."""
    with tempfile.TemporaryDirectory(prefix="gpuctl-hostkey-") as scratch:
        key = Path(scratch) / HOST_KEY
        sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(key)])
        return key.read_bytes(), key.with_suffix(".pub").read_bytes()


def _launch_script(state: LabState, node: LabNode, base: Path) -> str:
    root = root_dir(state, node)
    q = shlex.quote
    lines = ["set -e", f"hostname {q(node.name)}"]
    if state.layout == "overlay":
        # A node of a baked pool: the image's layer sits between the base and the node's own layer.
        lower = lab_images.lower_dirs(image_store.require(node.image, where=f"lab node {node.name}"), base) \
            if node.image else str(base)
        opts = f"lowerdir={lower},upperdir={node.node_dir}/upper,workdir={node.node_dir}/work"
        lines.append(f"mount -t overlay overlay -o {q(opts)} {q(str(root))}")
    lines += [
        f"mount -t proc proc {q(str(root / 'proc'))}",
        f"mount --rbind /dev {q(str(root / 'dev'))}",
        f"mount --rbind /sys {q(str(root / 'sys'))}",
        f"exec chroot {q(str(root))} {SSHD} -D -e",
    ]
    return "\n".join(lines)


def pids_in(netns: str) -> list[int]:
    return [int(p) for p in sh(["ip", "netns", "pids", netns], check=False).split() if p.isdigit()]


def sshd_listening(node: LabNode, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((node.mgmt_ip, 22), timeout=timeout) as conn:
            return conn.recv(4).startswith(b"SSH")
    except OSError:
        return False


def start(state: LabState, node: LabNode, base: Path) -> None:
    """Start the node's sshd unless it is already answering; wait until it answers."""
    if sshd_listening(node):
        return
    stop(node)  # a half-dead node (sessions alive, listener gone) is restarted cleanly
    node_dir = own_dir(Path(node.node_dir))
    # The node's folder is gpuctl's own (own_dir): its files are opened without following a link.
    with os.fdopen(open_private(node_dir / "sshd.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as log:
        process = subprocess.Popen(
            ["ip", "netns", "exec", node.netns, "unshare", "--mount", "--uts", "--propagation", "private",
             "--kill-child", "--", "/bin/sh", "-c", _launch_script(state, node, base)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
        )
    write_atomic(node_dir / "launcher.pid", f"{process.pid}\n")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if sshd_listening(node):
            return
        if process.poll() is not None:
            break
        time.sleep(0.05)
    tail = log_tail(node_dir / "sshd.log")
    raise ProviderError(f"sshd of lab node {node.name} did not start: {tail.strip()}")


def stop(node: LabNode) -> None:
    """Stop every process in the node's namespace: TERM, then KILL what is left after 2 s."""
    stop_processes(lambda: sorted(set(pids_in(node.netns)) | set(node_processes(node))))


def stop_processes(find: Callable[[], list[int]]) -> None:
    """TERM what `find` returns, then KILL what is left after 2 s."""
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
        pids = find()
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and find():
            time.sleep(0.05)


def lab_processes(cluster: str) -> list[int]:
    """Every process that is verifiably one of the lab's nodes': in a namespace the lab's plan names,
    or (even after its namespace is gone) chrooted inside the lab's nodes directory, or gpuctl's
    launcher of a node there. Named from the cluster alone, never from its state file."""
    in_namespaces = {pid for netns in own_netns_present(cluster) for pid in pids_in(netns)}
    return sorted(in_namespaces | set(processes_under(nodes_dir(cluster))))


def node_processes(node: LabNode) -> list[int]:
    """The node's processes by its directory, even after the node's namespace is gone (a crash of
    `down` between deleting a namespace and stopping what ran in it)."""
    return processes_under(Path(node.node_dir))


def processes_under(directory: Path) -> list[int]:
    """Processes whose root lies inside `directory` (a node's, or all nodes'), and gpuctl's own
    launchers of a node root there (the `sh -c` script ending `exec chroot ROOT sshd`, before it
    has chrooted). Paths are compared a component at a time: node 1's directory never matches
    node 10's, and a command line that merely mentions the directory is not a node's."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            root = os.readlink(entry / "root")
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        launched = _launched_root(argv)
        if _inside(root, directory) or (launched is not None and _inside(launched, directory)):
            found.append(int(entry.name))
    return found


def _launched_root(argv: list[bytes]) -> str | None:
    """The node root a launcher process of gpuctl's chroots into, or None if it is not one."""
    if b"-c" not in argv[:-1]:
        return None
    script = argv[argv.index(b"-c") + 1].decode(errors="replace")
    last = script.rstrip("\n").rsplit("\n", 1)[-1]
    try:
        words = shlex.split(last)
    except ValueError:
        return None
    if words[:2] == ["exec", "chroot"] and len(words) >= 4 and words[3] == SSHD:
        return words[2]
    return None


def _inside(path: str, directory: Path) -> bool:
    path = path.removesuffix(" (deleted)")  # how the kernel shows a root whose directory was removed
    return path == str(directory) or path.startswith(str(directory).rstrip("/") + "/")


def host_mounts_under(path: str) -> list[str]:
    """Mount points in this mount namespace inside `path` (a component at a time)."""
    mounts: list[str] = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            # mountinfo writes space, tab, newline and backslash in a path as \ooo octal escapes
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if _inside(point, Path(path)):
                mounts.append(point)
    return mounts
