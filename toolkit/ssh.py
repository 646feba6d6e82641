"""ssh to a node, built one way for every caller (`gpuctl ssh`, configure's verification, key pinning).

The argument vector is a list (no shell), host keys are always checked against a pinned file,
the login name goes through `-l` and the destination comes after `--`, so neither a user name
nor a host can ever be read as an ssh option (`-oProxyCommand=...`).

Host keys: the lab writes each node's key at creation. A cloud node's key is learned at first
contact (`pin_host_keys`, trust on first use) and recorded in the cluster's known_hosts; the
fingerprints are printed so the operator can compare them with the console, and a key that
changes later is refused by ssh, never accepted silently.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from toolkit.errors import MissingToolError
from toolkit.files import FileError, append_private, read_text_bounded
from toolkit.providers.base import ClusterOutputs, NodeOutput
from toolkit.secrets import child_env
from toolkit.state import own_dir

# A few hundred bytes per node: 1,250 nodes x 3 key types stay far below this.
MAX_KNOWN_HOSTS_BYTES = 16 * 1024 * 1024


def ssh_argv(outputs: ClusterOutputs, node: NodeOutput, command: Sequence[str] = (), *,
             batch: bool = False, known_hosts: Path | None = None) -> list[str]:
    """ssh to `node`: pinned host keys, the cluster's key if it has one, `--` before the destination."""
    pinned = known_hosts or outputs.known_hosts
    argv = ["ssh", "-p", str(node.ssh_port), "-o", "StrictHostKeyChecking=yes"]
    if batch:
        argv += ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
    if pinned:
        argv += ["-o", f"UserKnownHostsFile={pinned}"]
    if outputs.ssh_private_key:
        argv += ["-i", str(outputs.ssh_private_key), "-o", "IdentitiesOnly=yes"]
    return [*argv, "-l", node.ssh_user, "--", node.ssh_host, *command]


def _host_pattern(node: NodeOutput) -> str:
    return node.ssh_host if node.ssh_port == 22 else f"[{node.ssh_host}]:{node.ssh_port}"


def pinned_hosts(known_hosts: Path) -> set[str]:
    try:
        lines = read_text_bounded(known_hosts, limit=MAX_KNOWN_HOSTS_BYTES, what="known_hosts file",
                                  follow=False).splitlines()
    except FileError:
        return set()
    return {line.split()[0] for line in lines if line.strip() and not line.startswith("#")}


@dataclass
class Pinned:
    """What pinning found: the lines shown to the operator, and the nodes that offered no host key
    (still booting, port 22 closed), each with its reason. Those nodes are left out of the run; the
    others go on."""

    shown: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


# A node that is still booting offers no key for a minute or two: try again before giving up on it.
# Scans run in parallel, so a slow node costs its own retries once, never once per node.
PIN_TRIES = 6
PIN_WAIT_S = 10.0
PIN_WORKERS = 64


def pin_host_keys(outputs: ClusterOutputs, known_hosts: Path, progress: Callable[[str], None],
                  scan: Callable[[NodeOutput], str] | None = None, *, tries: int = PIN_TRIES,
                  wait_s: float = PIN_WAIT_S, only: Collection[str] | None = None) -> Pinned:
    """Record the host key of every node not yet in `known_hosts` (trust on first use).

    Nodes are scanned in parallel, each up to `tries` times `wait_s` apart. Only lines that name the
    scanned host itself are kept (ssh-keyscan writes the host it was given; anything else is not a
    key of that node). A node whose key is already pinned is not scanned again: a changed key must
    fail in ssh, never be re-learned. The file is appended once, in node order. `only`: scan these
    nodes alone (`configure --nodes`); the others are left for the run that names them.
    """
    scan = scan or _keyscan
    known = pinned_hosts(known_hosts)
    todo = [node for node in outputs.nodes
            if _host_pattern(node) not in known and (only is None or node.name in only)]
    pinned = Pinned()
    if not todo:
        return pinned

    def one(node: NodeOutput) -> list[str]:
        for attempt in range(max(1, tries)):
            lines = [line for line in scan(node).splitlines() if _names_host(line, node)]
            if lines:
                return lines
            if attempt + 1 < tries:
                time.sleep(wait_s)
        return []

    with ThreadPoolExecutor(max_workers=min(PIN_WORKERS, len(todo))) as pool:
        found = list(pool.map(one, todo))
    learned: list[str] = []
    for node, lines in zip(todo, found, strict=True):
        if not lines:
            pinned.failed[node.name] = (f"{node.ssh_host} offered no host key in {max(1, tries)} tries over "
                                        f"{max(0, tries - 1) * wait_s:.0f} s: check that the node is running "
                                        "and port 22 is open to your admin_cidr")
            continue
        learned += lines
        pinned.shown += [f"{node.name}: {_fingerprint(line)} (trusted on first use; compare with the console)"
                         for line in lines]
    if learned:
        own_dir(known_hosts.parent)
        append_private(known_hosts, "".join(f"{line}\n" for line in learned))
    for line in pinned.shown:
        progress(line)
    for name, reason in pinned.failed.items():
        progress(f"{name}: not reached ({reason})")
    return pinned


def _names_host(line: str, node: NodeOutput) -> bool:
    """A known_hosts line for this node: its first field is the node's host pattern, then a key type
    and a key (comments and the banner lines ssh-keyscan prints are not)."""
    fields = line.split()
    return len(fields) == 3 and not line.startswith("#") and fields[0] == _host_pattern(node)


def _keyscan(node: NodeOutput) -> str:
    try:
        done = subprocess.run(["ssh-keyscan", "-T", "10", "-p", str(node.ssh_port), "-t", "ed25519,ecdsa,rsa",
                               "--", node.ssh_host], capture_output=True, text=True, timeout=30, check=False,
                              env=child_env())
    except FileNotFoundError:
        raise MissingToolError("ssh-keyscan is not installed", hint="apt-get install openssh-client") from None
    except subprocess.TimeoutExpired:
        return ""
    return done.stdout


def _fingerprint(line: str) -> str:
    """`ED25519 SHA256:...` of one known_hosts line, computed as ssh-keygen -l does."""
    import base64
    import hashlib

    parts = line.split()
    if len(parts) < 3:
        return "unreadable key line"
    try:
        blob = base64.b64decode(parts[2], validate=True)
    except ValueError:
        return "unreadable key line"
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    return f"{parts[1]} SHA256:{digest}"
