"""Ansible callback shipped to each node for a node-local run: it writes the run's events, one JSON
object a line, to the file named by GPUCTL_EVENTS.

Each line has the shape of an ansible-runner event ({"event": ..., "event_data": {...}}), holding
the fields gpuctl's tracker reads (toolkit/configure/ansible_run.py): so a run on the node and a run
from the controller are read by the same code. Results come censored (Ansible's send_callback hands
callbacks a clean copy, no_log applied), and long outputs are cut.
"""

from __future__ import annotations

import json
import os
import time

from ansible.module_utils.common.json import AnsibleJSONEncoder
from ansible.plugins.callback import CallbackBase

# A task's stdout or stderr beyond this is cut: the tracker reads short outputs only (identity,
# the fabric interfaces found), and a package manager's log would make the file large.
_KEEP = 16384
# The *_lines copies of stdout and stderr say nothing the strings do not.
_DROP = ("stdout_lines", "stderr_lines")


def _short(result):
    res = {key: value for key, value in result.items() if key not in _DROP}
    for key in ("stdout", "stderr", "msg"):
        if isinstance(res.get(key), str) and len(res[key]) > _KEEP:
            res[key] = res[key][:_KEEP] + " [cut by gpuctl]"
    if isinstance(res.get("results"), list):
        res["results"] = [_short(item) if isinstance(item, dict) else item for item in res["results"]]
    return res


def _name(task):
    # ansible-runner's task field: the task's own name (get_name() prefixes its role's), else its action.
    return task.name or task.action


def _role(task):
    role = getattr(task, "_role", None)
    return getattr(role, "_role_name", None) if role is not None else None


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "gpuctl_events"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        path = os.environ.get("GPUCTL_EVENTS")
        self._file = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115 (open for the run)

    def _write(self, event, data):
        if self._file is None:
            return
        line = json.dumps({"event": event, "created": time.time(), "event_data": data},
                          cls=AnsibleJSONEncoder, default=str)
        self._file.write(line + "\n")
        self._file.flush()

    def _host(self, event, result, **extra):
        task = result._task
        self._write(event, {"host": result._host.get_name(), "task": _name(task), "role": _role(task),
                            "task_action": task.action, "res": _short(result._result), **extra})

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._write("playbook_on_task_start", {"task": _name(task), "role": _role(task)})

    def v2_runner_on_ok(self, result):
        self._host("runner_on_ok", result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._host("runner_on_failed", result, ignore_errors=bool(ignore_errors))

    def v2_runner_on_skipped(self, result):
        self._host("runner_on_skipped", result)

    def v2_runner_on_unreachable(self, result):
        self._host("runner_on_unreachable", result)

    def v2_playbook_on_stats(self, stats):
        self._write("playbook_on_stats", {key: dict(getattr(stats, key)) for key in
                                          ("ok", "changed", "failures", "dark", "skipped", "rescued", "ignored")})
