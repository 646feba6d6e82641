"""Verify, then converge only what differs: the fast path of `gpuctl configure`.

After a node's successful full run gpuctl records, in the cluster directory, what decided that
node's configuration (a fingerprint of its inventory vars, the rendered site playbook, every file
of the roles the play uses, the gather script, the tuning code and the node's rendered NCCL files)
and what the run left on the node (identity, the MTU of every fabric interface, hashes of the installed NCCL files,
packages, peers). On the next run a node whose fingerprint is unchanged gets one ssh round trip
that checks that observable state instead of ~45 Ansible tasks (its peer pings are the mtu role's
own check, on the same sparse set of peers); any difference sends the node
through the full site playbook, with the reason said.

Identity (boot id, machine id) is recorded beside the fingerprint, not hashed into it: only the
node can say its current identity, and keeping it apart lets the summary say "rebooted" rather
than "fingerprint differs".
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkit import paths as _paths
from toolkit.configure.digest import sha, tree_digest
from toolkit.configure.discovered import addresses
from toolkit.configure.render import InventoryData
from toolkit.files import FileError, read_bounded, write_atomic
from toolkit.providers.base import ClusterOutputs
from toolkit.secrets import child_env
from toolkit.ssh import ssh_argv
from toolkit.state import own_dir

REPO = _paths.REPO
ROLES_PATH = _paths.ROLES_PATH  # the roles the playbooks run (a module attribute: tests swap it)

# Code on the controller that turns a gathered bundle into nccl.conf: a change there changes what
# the nccl_conf role would install, so it belongs in the fingerprint like a role file does.
TUNING_SOURCES = (REPO / "toolkit" / "tuning", REPO / "toolkit" / "topology",
                  REPO / "toolkit" / "configure" / "decide.py")
# Where the nccl_conf role installs the tuned files (its defaults; those are hashed with the role).
NCCL_FILES = {"nccl.conf": "/etc/nccl.conf"}
# Files the nccl_conf role removes: gpuctl's former profile.d copy of the settings, which overrode
# /etc/nccl.conf in login shells. Verification checks they stay gone.
NCCL_ABSENT = ("/etc/profile.d/nccl.sh",)
# 2: every fabric interface's MTU is expected (1 held the first interface only).
RECORD_VERSION = 2
# The same shell the site playbook runs to read the identity during a full run, so the value the
# record holds and the value verification reads come from one definition.
IDENTITY_SH = ('echo "boot_id=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)"; '
               'echo "machine_id=$(cat /etc/machine-id 2>/dev/null)"')
# Reasons a fingerprint part gives when it differs, in the words the summary uses.
PART_REASONS = {
    "vars": "inventory vars changed", "site": "playbooks changed", "roles": "roles changed",
    "gather": "gather script changed", "tuning": "tuning code changed", "rendered": "rendered NCCL files changed",
    "peers": "peers changed",
}
# The fabric peer check the mtu role runs after setting the MTU: the probe runs the same script on
# the peers the record holds (peers.peers_of's sparse pattern). A full-size do-not-fragment ping is
# tried PING_TRIES times, PING_WAIT_S apart, before the peer counts as failed; then a 56-byte ping
# tells "unreachable" from "path MTU too small".
PEER_PING_SCRIPT = ("mtu", "files", "peer_ping.sh")
# The host vars that name a node's MTU peers (render.py). They decide only which paths the node's
# check pings, never what is installed on it: they are hashed in the "peers" part, not in "vars",
# so a node whose peers alone changed (a node was appended) re-runs its pings, not its roles.
PEER_VARS = ("gpuctl_mtu_peers", "gpuctl_mtu_peer_names", "gpuctl_mtu_peer_nodes")
PING_TRIES = 3
PING_WAIT_S = 0.5
PING_TIMEOUT_S = 1


# ------------------------------------------------------------------------------------ fingerprint

def _own_sha(path: Path) -> str:
    """The digest of a file gpuctl wrote in the cluster's folder, "-" when there is none; bounded and
    never through a link (a link there is refused: FileError)."""
    if not path.exists() and not path.is_symlink():
        return "-"
    return sha(read_bounded(path, limit=MAX_OWN_FILE_BYTES, what="file gpuctl wrote", follow=False))


def shared_parts(roles: Sequence[str], data: InventoryData) -> dict[str, str]:
    """The digests that are the same for every node of a run (roles, gather script, tuning code):
    computed once per run, not once per node (at 1,250 nodes, per node cost a minute)."""
    gather = str(data.group.get("gpuctl_gather_script") or "")
    return {
        "roles": tree_digest(ROLES_PATH / role for role in roles),
        "gather": sha(Path(gather).read_bytes()) if gather and Path(gather).is_file() else "",
        "tuning": tree_digest(TUNING_SOURCES),
    }


def fingerprint_parts(base: Path, node: str, roles: Sequence[str], data: InventoryData,
                      shared: dict[str, str] | None = None) -> dict[str, str]:
    """The digest of each input that decides `node`'s configuration (see PART_REASONS); `shared`:
    shared_parts(roles, data) when the caller has it."""
    shared = shared if shared is not None else shared_parts(roles, data)
    rendered = [base / "nccl" / node / name for name in NCCL_FILES]
    playbooks = [base / "site.yml", base / "deliver.yml"]
    host = {key: value for key, value in data.hosts[node].items() if key not in PEER_VARS}
    peers = {key: data.hosts[node].get(key) for key in PEER_VARS}
    return {
        "vars": sha(json.dumps({"host": host, "group": data.group}, sort_keys=True).encode()),
        "site": sha(b"".join(_own_sha(p).encode() for p in playbooks)),
        "roles": shared["roles"],
        "gather": shared["gather"],
        "tuning": shared["tuning"],
        "rendered": sha(b"".join(_own_sha(p).encode() for p in rendered)),
        "peers": sha(json.dumps(peers, sort_keys=True).encode()),
    }


def fingerprint(parts: dict[str, str]) -> str:
    return sha(json.dumps(parts, sort_keys=True).encode())


# ------------------------------------------------------------------------------------ records

# A record is a few KiB; anything larger was not written by gpuctl.
MAX_RECORD_BYTES = 1024 * 1024
MAX_OWN_FILE_BYTES = 16 * 1024 * 1024  # the playbooks and a node's NCCL files are kilobytes

def record_dir(base: Path) -> Path:
    return base / "converge"


def record_path(base: Path, node: str) -> Path:
    return record_dir(base) / f"{node}.json"


def load_record(base: Path, node: str) -> dict[str, Any] | None:
    try:
        record = json.loads(read_bounded(record_path(base, node), limit=MAX_RECORD_BYTES, what="converge record",
                                         follow=False))
    except (FileError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) and record.get("version") == RECORD_VERSION else None


def forget(base: Path, nodes: Iterable[str]) -> None:
    """Drop the records of nodes about to be configured: a run that fails half-way must not leave
    an older record that a later verification could pass against."""
    for node in nodes:
        record_path(base, node).unlink(missing_ok=True)


def parse_keyvals(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def write_record(base: Path, node: str, roles: Sequence[str], data: InventoryData, *, identity: dict[str, str],
                 packages: dict[str, list[str]], found: list[dict[str, str]] | None = None,
                 found_peers: list[str] | None = None, shared: dict[str, str] | None = None) -> dict[str, Any]:
    """Record a node's successful full run: its fingerprint and the state to verify next time.

    `found` and `found_peers`: on a node whose fabric the run found on the node (Tencent HCC), its
    interfaces and the addresses its mtu role pinged; the inventory knows neither.
    """
    parts = fingerprint_parts(base, node, roles, data, shared)
    host = data.hosts[node]
    files = {NCCL_FILES[name]: _own_sha(base / "nccl" / node / name)
             for name in NCCL_FILES if (base / "nccl" / node / name).is_file()}
    record = {
        "version": RECORD_VERSION, "node": node, "fingerprint": fingerprint(parts), "parts": parts,
        "identity": {"boot_id": identity.get("boot_id", ""), "machine_id": identity.get("machine_id", "")},
        "expect": {
            "fabric_interfaces": [i["name"] for i in found] if found else fabric_interfaces(host),
            # The addresses peers ping this node at: a failed ping to one counts against the pinger
            # only while this node looks healthy (verify).
            "addresses": own_addresses(host, found),
            "absent": list(NCCL_ABSENT),
            "mtu": int(data.group.get("gpuctl_mtu", 0)),
            "files": files,
            "packages": {kind: sorted(set(names)) for kind, names in packages.items() if names},
            "peers": data.peers(node) or list(found_peers or []),
        },
    }
    own_dir(record_dir(base))
    write_atomic(record_path(base, node), json.dumps(record, indent=2, sort_keys=True) + "\n")
    return record


# ------------------------------------------------------------------------------------ verification

def probe_script(record: dict[str, Any]) -> str:
    """One shell script that reports, as key=value lines, everything the record expects.

    It needs no root: /proc, /sys and /etc reads, sha256sum, dpkg-query/rpm and ping.
    """
    expect = record["expect"]
    mtu = int(expect["mtu"])
    q = shlex.quote
    lines = ["set -u", IDENTITY_SH]
    for index, interface in enumerate(expect["fabric_interfaces"]):
        lines.append(f'echo "mtu{index}=$(cat /sys/class/net/{q(interface)}/mtu 2>/dev/null)"')
    for index, path in enumerate(sorted(expect["files"])):
        lines.append(f'echo "file{index}=$(sha256sum < {q(path)} 2>/dev/null | cut -d" " -f1)"')
    for path in expect["absent"]:
        lines.append(f'[ ! -e {q(path)} ] || echo "present={path}"')
    for name in expect["packages"].get("dpkg", []):
        # apt pins look like name=version: check both the install state and the version.
        pkg, _, version = name.partition("=")
        want = f"installed {version}" if version else "installed"
        fmt = "${db:Status-Status} ${Version}" if version else "${db:Status-Status}"
        lines.append(f'[ "$(dpkg-query -W -f={q(fmt)} {q(pkg)} 2>/dev/null)" = {q(want)} ] '
                     f'|| echo "missing={name}"')
    for name in expect["packages"].get("rpm", []):
        lines.append(f'rpm -q {q(name)} >/dev/null 2>&1 || echo "missing={name}"')
    if expect["peers"]:
        # Pings run in parallel: an unreachable peer costs its retries once, not once per peer.
        script = ROLES_PATH.joinpath(*PEER_PING_SCRIPT).read_text()
        args = [str(mtu - 28), str(PING_TRIES), str(PING_WAIT_S), str(PING_TIMEOUT_S), *map(str, expect["peers"])]
        lines.append(f"sh -c {q(script)} peer_ping {' '.join(q(arg) for arg in args)}")
    lines.append("echo done=1")
    return "\n".join(lines) + "\n"


@dataclass
class Probe:
    """What one node's verification saw: problems local to the node, and peers it could not ping:
    `ping_failed` answered 56-byte pings but no full-size one (path MTU too small),
    `ping_unreachable` answered neither."""

    node: str
    reachable: bool = True
    problems: list[str] = field(default_factory=list)
    ping_failed: list[str] = field(default_factory=list)
    ping_unreachable: list[str] = field(default_factory=list)


def judge(node: str, record: dict[str, Any], rc: int, stdout: str, stderr: str) -> Probe:
    probe = Probe(node)
    seen = parse_keyvals(stdout)
    if rc != 0 or seen.get("done") != "1":
        probe.reachable = False
        tail = " ".join((stderr or stdout).split())[-200:]
        probe.problems.append(f"unreachable for verification (rc {rc}: {tail or 'no output'})")
        return probe
    expect, identity = record["expect"], record["identity"]
    if seen.get("boot_id") != identity["boot_id"]:
        probe.problems.append("rebooted")
    if seen.get("machine_id") != identity["machine_id"]:
        probe.problems.append("machine-id changed")
    for index, interface in enumerate(expect["fabric_interfaces"]):
        got_mtu = seen.get(f"mtu{index}", "")
        if got_mtu != str(expect["mtu"]):
            probe.problems.append(f"{interface}: MTU {got_mtu} != {expect['mtu']}" if got_mtu
                                  else f"no fabric interface {interface}")
    for index, path in enumerate(sorted(expect["files"])):
        got = seen.get(f"file{index}", "")
        if got != expect["files"][path]:
            # sha256sum never runs when the redirection fails: an empty answer means no file.
            probe.problems.append(f"{Path(path).name} {'missing' if not got else 'differs'}")
    for line in stdout.splitlines():
        if line.startswith("missing="):
            probe.problems.append(f"package {line.split('=', 1)[1]} not installed")
        elif line.startswith("present="):
            probe.problems.append(f"{line.split('=', 1)[1]} present again (it overrides /etc/nccl.conf)")
        elif line.startswith("ping_mtu="):
            probe.ping_failed.append(line.split("=", 1)[1])
        elif line.startswith("ping_down="):
            probe.ping_unreachable.append(line.split("=", 1)[1])
    return probe


def _run_probe(outputs: ClusterOutputs, node: str, record: dict[str, Any]) -> Probe:
    target = next(n for n in outputs.nodes if n.name == node)
    try:
        done = subprocess.run(ssh_argv(outputs, target, ["sh", "-s"], batch=True), input=probe_script(record),
                              capture_output=True, text=True, timeout=60, check=False, env=child_env())
    except subprocess.TimeoutExpired:
        return judge(node, record, 124, "", "verification timed out after 60 s")
    return judge(node, record, done.returncode, done.stdout, done.stderr)


def verify(outputs: ClusterOutputs, records: dict[str, dict[str, Any]],
           healthy: Iterable[str] = ()) -> dict[str, list[str]]:
    """Probe every node in `records` in parallel; return the problems per node ([] = verified).
    `healthy`: addresses of nodes known good without a probe (those a run just configured).

    A failed ping from A to B counts against A only when B itself looked healthy (reachable, right
    MTU, nothing else wrong): when B's MTU drifted, A's ping to B fails too, but it is B that needs
    the playbook, and B's mtu role pings A again after healing. A peer that is not being verified
    (it gets the full run anyway) is likewise not held against A.
    """
    if not records:
        return {}
    with ThreadPoolExecutor(max_workers=min(32, len(records))) as pool:
        probes = list(pool.map(lambda n: _run_probe(outputs, n, records[n]), records))
    healthy_ips = {address for p in probes if p.reachable and not p.problems
                   for address in records[p.node]["expect"].get("addresses") or [_own_address(outputs, p.node)]}
    healthy_ips.update(healthy)
    problems: dict[str, list[str]] = {}
    for probe in probes:
        found = list(probe.problems)
        # A node already failing locally (its MTU, say) explains its own failed pings.
        mtu = int(records[probe.node]["expect"]["mtu"])
        for peer in probe.ping_failed if not found else []:
            if peer in healthy_ips:
                found.append(f"ping -M do -s {mtu - 28} to {peer} failed {PING_TRIES} times, 56-byte ping ok: "
                             f"path MTU below {mtu}")
        for peer in probe.ping_unreachable if not found else []:
            if peer in healthy_ips:
                found.append(f"{peer} unreachable over the fabric (56-byte ping failed too)")
        problems[probe.node] = found
    return problems


def fabric_interfaces(host: dict[str, Any]) -> list[str]:
    """Every fabric interface of a node's inventory vars, by name (the first alone in an inventory
    without gpuctl_fabric_interfaces)."""
    names = [str(i["name"]) for i in host.get("gpuctl_fabric_interfaces") or []]
    first = str(host.get("gpuctl_fabric_interface") or "")
    return names or ([first] if first else [])


def own_addresses(host: dict[str, Any], found: list[dict[str, str]] | None = None) -> list[str]:
    """Every fabric address of a node (without prefix): those found on it, else its inventory's
    rails with an address, else its first fabric address."""
    rails = found or host.get("gpuctl_fabric_interfaces") or []
    listed = addresses(rails)
    first = str(host.get("gpuctl_fabric_ip") or "").split("/")[0]
    return listed or ([first] if first else [])


def _own_address(outputs: ClusterOutputs, node_name: str) -> str:
    """The address the node's peers ping: that of its first fabric interface (gpuctl_fabric_ip),
    the one the mtu role's peer check uses too."""
    node = next(n for n in outputs.nodes if n.name == node_name)
    fabric = node.fabric_interfaces[0] if node.fabric_interfaces else None
    return ((fabric.ipv4 or "") if fabric else "").split("/")[0]


@dataclass
class Plan:
    """What configure does with each node before any playbook runs.

    `verify`: records of nodes probed now, before any playbook: those whose inputs are unchanged,
    and those whose peer set alone changed (with the peers their record holds), so a node that
    drifted on its own runs the playbook instead of failing the new node's pings. `reasons`: nodes
    that need the site playbook, with why. `repeer`: nodes whose peer set alone changed (a node was
    appended near them): their record with the new peers, probed again after the run, when the new
    peers are up. `added`: the peer addresses each repeer node has not pinged before.
    """

    verify: dict[str, dict[str, Any]] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    repeer: dict[str, dict[str, Any]] = field(default_factory=dict)
    added: dict[str, list[str]] = field(default_factory=dict)


def plan(base: Path, nodes: Sequence[str], roles: Sequence[str], data: InventoryData,
         shared: dict[str, str] | None = None) -> Plan:
    """Split nodes by record and fingerprint (see Plan); `shared`: shared_parts(roles, data)."""
    split = Plan()
    shared = shared if shared is not None else shared_parts(roles, data)
    for node in nodes:
        record = load_record(base, node)
        if record is None:
            split.reasons[node] = "no record of a successful run"
            continue
        parts = fingerprint_parts(base, node, roles, data, shared)
        if fingerprint(parts) == record.get("fingerprint"):
            split.verify[node] = record
            continue
        old = record.get("parts") or {}
        changed = [k for k in PART_REASONS if parts.get(k) != old.get(k)]
        # Peers named by address only: a node whose peers are found on the nodes (HCC) needs the
        # run to learn their addresses.
        if changed == ["peers"] and data.peers(node):
            split.verify[node] = record
            split.repeer[node] = with_peers(record, data.peers(node))
            before = set(map(str, record["expect"].get("peers") or []))
            split.added[node] = [peer for peer in data.peers(node) if peer not in before]
            continue
        split.reasons[node] = ", ".join(PART_REASONS[k] for k in changed) or "fingerprint differs"
    return split


def is_current(base: Path, node: str, record: dict[str, Any], roles: Sequence[str], data: InventoryData,
               shared: dict[str, str] | None = None) -> bool:
    """Whether `record` (node's, as load_record read it) is that of a successful run for today's inputs."""
    return node in data.hosts and \
        record.get("fingerprint") == fingerprint(fingerprint_parts(base, node, roles, data, shared))


def with_peers(record: dict[str, Any], peers: list[str]) -> dict[str, Any]:
    """A copy of `record` that expects the pings to reach `peers`."""
    return {**record, "expect": {**record["expect"], "peers": list(peers)}}


def rebase_record(base: Path, node: str, roles: Sequence[str], data: InventoryData,
                  record: dict[str, Any], shared: dict[str, str] | None = None) -> dict[str, Any]:
    """Rewrite a verified node's record for today's inputs, when only its peers changed and the
    probe reached every new peer: the same identity and observed state, the new fingerprint."""
    parts = fingerprint_parts(base, node, roles, data, shared)
    rebased = {**with_peers(record, data.peers(node)), "fingerprint": fingerprint(parts), "parts": parts}
    write_atomic(record_path(base, node), json.dumps(rebased, indent=2, sort_keys=True) + "\n")
    return rebased
