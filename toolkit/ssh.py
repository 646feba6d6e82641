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
from collections.abc import Callable, Sequence
from pathlib import Path

from toolkit.errors import MissingToolError, ProviderError
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


def pin_host_keys(outputs: ClusterOutputs, known_hosts: Path, progress: Callable[[str], None],
                  scan: Callable[[NodeOutput], str] | None = None) -> list[str]:
    """Record the host key of every node not yet in `known_hosts` (trust on first use).

    Returns the lines printed for the operator: node, key type and SHA256 fingerprint. A node
    whose key is already pinned is not scanned again: a changed key must fail, not be re-learned.
    """
    scan = scan or _keyscan
    known = pinned_hosts(known_hosts)
    shown: list[str] = []
    for node in outputs.nodes:
        if _host_pattern(node) in known:
            continue
        lines = [line for line in scan(node).splitlines() if line.strip() and not line.startswith("#")]
        if not lines:
            raise ProviderError(f"{node.name} ({node.ssh_host}) did not offer a host key",
                                hint="check that the node is running and port 22 is open to your admin_cidr")
        own_dir(known_hosts.parent)
        append_private(known_hosts, "".join(f"{line}\n" for line in lines))
        for line in lines:
            shown.append(f"{node.name}: {_fingerprint(line)} (trusted on first use; compare with the console)")
    for line in shown:
        progress(line)
    return shown


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
