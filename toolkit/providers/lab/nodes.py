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
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from toolkit.errors import ProviderError
from toolkit.providers.lab import replay as lab_replay
from toolkit.providers.lab.host import sh
from toolkit.providers.lab.state import LabNode, LabState

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


def _mkdirs(base: Path, layer: Path, rel: str) -> Path:
    """mkdir -p in the writable layer, copying each directory's mode from the base, because an
    overlay takes a directory's mode from the upper layer (a 0755 /root would upset sshd)."""
    current = layer
    for part in Path(rel).parts:
        current = current / part
        if not current.exists():
            current.mkdir()
            source = base / current.relative_to(layer)
            if source.is_dir():
                os.chmod(current, source.stat().st_mode & 0o7777)
    return current


def prepare(state: LabState, node: LabNode, base: Path, public_key: str, hosts: str) -> str:
    """Write the node's identity into its writable layer; return its host public key line."""
    layer = writable_dir(state, node)
    if state.layout == "overlay":
        for sub in ("upper", "work", "merged"):
            (Path(node.node_dir) / sub).mkdir(parents=True, exist_ok=True)
    (_mkdirs(base, layer, "etc") / "hostname").write_text(node.name + "\n")
    (layer / "etc/hosts").write_text(f"127.0.0.1 localhost\n{hosts}")
    ssh_dir = _mkdirs(base, layer, "etc/ssh")
    key = ssh_dir / "ssh_host_ed25519_key"
    if not key.exists():  # kept across restarts: the pinned host key must not change
        sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", node.name, "-f", str(key)])
    (_mkdirs(base, layer, "etc/ssh/sshd_config.d") / "gpuctl.conf").write_text(SSHD_DROPIN)
    dot_ssh = _mkdirs(base, layer, "root/.ssh")
    os.chmod(dot_ssh, 0o700)
    authorized = dot_ssh / "authorized_keys"
    authorized.write_text(public_key)
    os.chmod(authorized, 0o600)
    _mkdirs(base, layer, "run/sshd")
    if node.replay_capture:
        _mkdirs(base, layer, "usr/local/bin")
        _mkdirs(base, layer, "usr/local/share")
        lab_replay.install(Path(node.replay_capture), layer)
    kind, blob = key.with_suffix(".pub").read_text().split()[:2]
    return f"{kind} {blob}"


def _launch_script(state: LabState, node: LabNode, base: Path) -> str:
    root = root_dir(state, node)
    q = shlex.quote
    lines = ["set -e", f"hostname {q(node.name)}"]
    if state.layout == "overlay":
        opts = f"lowerdir={base},upperdir={node.node_dir}/upper,workdir={node.node_dir}/work"
        lines.append(f"mount -t overlay overlay -o {q(opts)} {q(str(root))}")
    lines += [
        f"mount -t proc proc {q(str(root / 'proc'))}",
        f"mount --rbind /dev {q(str(root / 'dev'))}",
        f"mount --rbind /sys {q(str(root / 'sys'))}",
        f"exec chroot {q(str(root))} /usr/sbin/sshd -D -e",
    ]
    return "\n".join(lines)


def pids_in(netns: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True, check=False)
    return [int(p) for p in out.stdout.split()]


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
    log = (Path(node.node_dir) / "sshd.log").open("ab")
    process = subprocess.Popen(
        ["ip", "netns", "exec", node.netns, "unshare", "--mount", "--uts", "--propagation", "private",
         "--kill-child", "--", "/bin/sh", "-c", _launch_script(state, node, base)],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
    )
    (Path(node.node_dir) / "launcher.pid").write_text(f"{process.pid}\n")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if sshd_listening(node):
            return
        if process.poll() is not None:
            break
        time.sleep(0.05)
    tail = (Path(node.node_dir) / "sshd.log").read_text(errors="replace")[-600:]
    raise ProviderError(f"sshd of lab node {node.name} did not start: {tail.strip()}")


def stop(node: LabNode) -> None:
    """Stop every process in the node's namespace: TERM, then KILL what is left after 2 s."""
    stop_processes(lambda: pids_in(node.netns) + node_processes(node))


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


def node_processes(node: LabNode) -> list[int]:
    """Processes whose root or command line lies in the node's directory, even after the node's
    namespace is gone (a crash of `up` between creating a namespace and recording it)."""
    return processes_under(node.node_dir)


def processes_under(marker: str) -> list[int]:
    """Processes whose root or command line lies under `marker` (a node's or all nodes' directory)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            root = os.readlink(entry / "root")
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if root.startswith(marker) or marker in cmdline:
            found.append(int(entry.name))
    return found


def host_mounts_under(path: str) -> list[str]:
    mounts: list[str] = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            point = line.split()[4]
            if point.startswith(path):
                mounts.append(point)
    return mounts
