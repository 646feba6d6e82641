"""Drive one ansible-playbook run through ansible-runner; report progress and a per-node summary.

Progress is one line per node and role as each role finishes ("t1-gpu-0 mtu: changed"). The
summary says per node ok, or the task that failed and its message, and counts changed tasks so
callers can assert idempotence.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkit.configure.discovered import DISCOVERY_TASK
from toolkit.configure.render import forks_for
from toolkit.errors import MissingToolError
from toolkit.secrets import child_env, redact

Progress = Callable[[str], None]
_RANK = {"ok": 0, "skipped": 0, "changed": 1, "failed": 2, "unreachable": 3}
# The site playbook's task that reads each node's identity for gpuctl's record (templates/site.yml.j2).
IDENTITY_TASK = "Read this node's identity (boot id, machine id) for gpuctl's record"
# Package modules whose installed names the record keeps, by the database that answers for them.
_PACKAGE_DB = {"apt": "dpkg", "dnf": "rpm", "yum": "rpm"}


@dataclass
class NodeResult:
    name: str
    ok: bool = True
    changed: int = 0
    failed_task: str | None = None
    message: str | None = None
    notes: list[str] = field(default_factory=list)  # "nvidia_driver: Skipped: lab node ..." lines
    roles: dict[str, str] = field(default_factory=dict)  # role -> "ok" / "changed" / "skipped (why)" / "failed"
    identity: str = ""  # stdout of IDENTITY_TASK: boot_id=... / machine_id=... lines
    fabric: str = ""  # stdout of DISCOVERY_TASK: the fabric interfaces found on the node (Tencent HCC)
    packages: dict[str, list[str]] = field(default_factory=dict)  # "dpkg"/"rpm" -> names the roles installed
    verified: bool = False  # passed gpuctl's verification; the site playbook did not run here
    reason: str | None = None  # why the site playbook ran on this node ("nccl.conf differs", ...)

    def absorb(self, later: NodeResult) -> None:
        """Add what a later playbook run (the deliver run after the site run) saw on this node."""
        self.ok = self.ok and later.ok
        self.changed += later.changed
        if not later.ok and self.failed_task is None:
            self.failed_task, self.message = later.failed_task, later.message
        self.notes += later.notes
        self.roles.update(later.roles)
        # What a run read off the node: the later run's, where it read it too.
        self.identity = later.identity or self.identity
        self.fabric = later.fabric or self.fabric
        for database, names in later.packages.items():
            self.packages.setdefault(database, []).extend(names)

    def line(self) -> str:
        if self.verified:
            return f"{self.name}: ok (verified, 0 changed)"
        why = f"; full run: {self.reason}" if self.reason else ""
        if self.ok:
            return f"{self.name}: ok ({self.changed} changed{why})"
        return f"{self.name}: FAILED at '{self.failed_task}': {self.message}" + (f" ({why[2:]})" if why else "")


@dataclass
class RunResult:
    nodes: dict[str, NodeResult]
    rc: int

    @property
    def ok(self) -> bool:
        return self.rc == 0 and all(n.ok for n in self.nodes.values())

    @property
    def changed(self) -> int:
        return sum(n.changed for n in self.nodes.values())

    @property
    def failed(self) -> list[str]:
        return [n.name for n in self.nodes.values() if not n.ok]


class Tracker:
    """Turns runner events into per-role progress lines and per-node results."""

    def __init__(self, hosts: list[str], progress: Progress) -> None:
        self.progress = progress
        self.nodes = {h: NodeResult(h) for h in hosts}
        self.role: str | None = None
        self.status: dict[str, str] = {}  # host -> worst state in the current role
        self.detail: dict[str, str] = {}  # host -> why the role was skipped there

    def __call__(self, event: dict[str, Any]) -> bool:
        kind = event.get("event", "")
        data = event.get("event_data", {})
        if kind == "playbook_on_task_start":
            role = data.get("role") or "site"
            if role != self.role:
                self.flush()
                self.role = role
        elif kind.startswith("runner_on_") or kind.startswith("runner_item_on_"):
            self._host_event(kind, data)
        elif kind == "playbook_on_stats":
            self.flush()
        return True  # keep the event in the artifacts

    def _host_event(self, kind: str, data: dict[str, Any]) -> None:
        host = data.get("host")
        if host not in self.nodes or kind.startswith("runner_item_on_"):
            return
        res = data.get("res") or {}
        state = {"runner_on_ok": "ok", "runner_on_skipped": "skipped", "runner_on_failed": "failed",
                 "runner_on_unreachable": "unreachable"}.get(kind)
        if state is None:
            return
        if kind == "runner_on_failed" and data.get("ignore_errors"):
            state = "ok"
        if state == "ok" and res.get("changed"):
            state = "changed"
        node = self.nodes[host]
        if state in ("ok", "changed"):
            self._observe(node, data, res)
        if state in ("failed", "unreachable"):
            node.ok = False
            node.failed_task = f"{self.role}: {data.get('task', '?')}"
            node.message = _message(res)
        msg = str(res.get("msg", ""))
        if state == "ok" and msg.startswith(("Skipped:", "Not installed:")):
            node.notes.append(f"{self.role}: {msg}")
            state = "skipped"
        elif state == "ok" and msg.startswith("Note:"):
            # What the role decided without failing (an optional acceleration it could not turn on):
            # said in the node's summary, the role still ok.
            node.notes.append(f"{self.role}: {msg}")
        # A task skipped by its `when` says nothing of the role: it is "skipped" only when no task of
        # it ran. A role that says "Skipped: ..." itself is skipped, whatever ran before.
        rank = -1 if kind == "runner_on_skipped" else _RANK[state]
        previous = self.status.get(host)
        if previous is None or rank >= _RANK[previous]:
            self.status[host] = state
        if state == "skipped" and msg:
            self.detail[host] = msg.split(": ", 1)[-1].rstrip(".")

    @staticmethod
    def _observe(node: NodeResult, data: dict[str, Any], res: dict[str, Any]) -> None:
        """Keep what gpuctl's record needs from a successful task: identity, the fabric interfaces
        found on the node and package names."""
        if data.get("task") == IDENTITY_TASK:
            node.identity = str(res.get("stdout", ""))
            return
        if data.get("task") == DISCOVERY_TASK:
            node.fabric = str(res.get("stdout", ""))
            return
        database = _PACKAGE_DB.get(str(data.get("task_action", "")).rsplit(".", 1)[-1])
        args = (res.get("invocation") or {}).get("module_args") or {}
        if database is None or args.get("state") not in (None, "present", "installed", "latest"):
            return
        names = args.get("name") or []
        names = [names] if isinstance(names, str) else names
        # Files and URLs are not names the package database answers for.
        node.packages.setdefault(database, []).extend(
            str(n) for n in names if "/" not in str(n) and not str(n).endswith((".deb", ".rpm")))

    def flush(self) -> None:
        if self.role is not None:
            for host in self.nodes:
                if host in self.status:
                    why = f" ({self.detail[host]})" if host in self.detail and self.status[host] == "skipped" else ""
                    self.nodes[host].roles[self.role] = f"{self.status[host]}{why}"
                    self.progress(f"{host} {self.role}: {self.status[host]}{why}")
        self.status = {}
        self.detail = {}

    def set_changed(self, stats: dict[str, dict[str, int]]) -> None:
        for host, count in stats.get("changed", {}).items():
            if host in self.nodes:
                self.nodes[host].changed = count
        for key in ("dark", "failures"):
            for host in stats.get(key, {}):
                if host in self.nodes and self.nodes[host].ok:
                    self.nodes[host].ok = False
                    self.nodes[host].message = self.nodes[host].message or key


def _message(res: dict[str, Any]) -> str:
    text = str(res.get("msg") or res.get("stderr") or res.get("stdout") or "no message")
    if "results" in res:  # a loop: the first failed item says most
        for item in res["results"]:
            if item.get("failed"):
                text = str(item.get("msg") or item.get("stderr") or item.get("stdout") or text)
                break
    return redact(" ".join(text.split()))[:300]


def run_playbook(
    playbook: Path, inventory: Path, hosts: list[str], progress: Progress,
    *, config: Path, limit: list[str] | None = None, extravars: dict[str, bool] | None = None,
) -> RunResult:
    """Run the playbook; with `limit`, only on those hosts (the others are neither run nor reported).
    `extravars`: switches of the run (`gpuctl_full`), booleans only: nothing a template could read.

    Ansible needs no cloud credential, so it never gets one: its environment is this process's
    without any credential variable (toolkit.secrets), and ansible-runner's private folder, which
    records that environment and every event, is a temporary one removed when the run ends.
    """
    try:
        import ansible_runner.interface
    except ImportError as exc:
        raise MissingToolError("ansible-runner is not installed",
                               hint="pip install 'ansible-runner>=2.4' (part of gpuctl's dependencies)") from exc
    tracker = Tracker(limit if limit is not None else hosts, progress)
    bin_dir = str(Path(sys.executable).parent)
    # ansible-runner cancels a run when its cancel callback says so, and checks it only between
    # reads of the playbook's output: a signal that lands after the last check would be lost. So gpuctl
    # catches SIGINT/SIGTERM itself for the run (main thread only: Python's rule for handlers), gives
    # ansible-runner the callback, puts its own handlers back afterwards, and turns any signal that
    # came during the run back into the interrupt it was, whatever the run's status says.
    interrupted = threading.Event()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    on_main = threading.current_thread() is threading.main_thread()
    if on_main:
        for sig in handlers:
            signal.signal(sig, lambda _number, _frame: interrupted.set())
    with tempfile.TemporaryDirectory(prefix="gpuctl-ansible-") as private_dir:
        runner = ansible_runner.interface.init_runner(
            private_data_dir=private_dir,
            playbook=str(playbook),
            inventory=str(inventory),
            # ansible-runner turns host key checking off unless told otherwise; gpuctl pins host keys.
            envvars={"ANSIBLE_CONFIG": str(config), "ANSIBLE_HOST_KEY_CHECKING": "True",
                     "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"},
            suppress_env_files=True,
            event_handler=tracker,
            quiet=True,
            cancel_callback=interrupted.is_set,
            forks=forks_for(len(tracker.nodes)),
            **({"extravars": dict(extravars)} if extravars else {}),
            **({"limit": ",".join(limit)} if limit is not None and set(limit) != set(hosts) else {}),
        )
        runner.config.env = child_env(env=runner.config.env)
        try:
            runner.run()
        finally:
            if on_main:
                for sig, handler in handlers.items():
                    signal.signal(sig, handler)
        if interrupted.is_set() or runner.status == "canceled":
            raise KeyboardInterrupt
        tracker.set_changed(runner.stats or {})
        result = RunResult(nodes=tracker.nodes, rc=int(runner.rc))
        tail = ""
        if result.rc != 0 and not result.failed and runner.stdout:
            tail = " ".join(runner.stdout.read().split()[-60:])
    if result.rc != 0 and not result.failed:
        # ansible-playbook stopped before any node reported (bad YAML, missing role ...).
        for node in result.nodes.values():
            node.ok = False
            node.failed_task = "ansible-playbook"
            node.message = f"the run failed before reaching this node (rc {result.rc}): {redact(tail)[-400:]}"
    return result
