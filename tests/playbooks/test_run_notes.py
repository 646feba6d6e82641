"""What a role says without failing reaches the node's summary: "Note:" lines are kept, the role stays ok."""

from __future__ import annotations

import pytest

from toolkit.configure.ansible_run import Tracker

pytestmark = pytest.mark.unit


def _events(role: str, host: str, *messages: str) -> list[dict[str, object]]:
    # The shapes ansible-runner hands its event handler (event, event_data.role/host/task/res).
    out: list[dict[str, object]] = [{"event": "playbook_on_task_start", "event_data": {"role": role}}]
    out += [{"event": "runner_on_ok", "event_data": {"host": host, "task": "say", "res": {"msg": m}}}
            for m in messages]
    return [*out, {"event": "playbook_on_stats", "event_data": {}}]


def test_a_note_is_kept_and_the_role_stays_ok() -> None:
    lines: list[str] = []
    tracker = Tracker(["gpu-0"], lines.append)
    note = ("Note: GPUDirect RDMA is off (the kernel (5.15.0-91-generic) exports no RDMA peer-memory API "
            "(ib_register_peer_memory_client), which nvidia-peermem needs); NCCL copies through host memory.")
    for event in _events("nvidia_driver", "gpu-0", "GPUDirect RDMA: none.", note):
        tracker(event)
    node = tracker.nodes["gpu-0"]
    assert node.notes == [f"nvidia_driver: {note}"]
    assert node.ok
    assert node.roles["nvidia_driver"] == "ok"


def test_a_skip_is_still_a_skip() -> None:
    tracker = Tracker(["gpu-0"], lambda line: None)
    for event in _events("nvidia_driver", "gpu-0", "Skipped: lab node without a GPU"):
        tracker(event)
    assert tracker.nodes["gpu-0"].roles["nvidia_driver"].startswith("skipped")
