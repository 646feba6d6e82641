"""The part of the lifecycle agent's configuration that comes from the spec.

Python decides, Ansible delivers: this is computed here and handed to the lifecycle role as one
inventory variable (`gpuctl_lifecycle`, `!unsafe` like every inventory string), which the role
writes into /etc/gpuctl/lifecycle.json as JSON. The endpoints and the lab-only overrides are the
role's own variables (playbooks/roles/lifecycle/defaults/main.yml), never the spec's.
"""

from __future__ import annotations

from typing import Any

from toolkit.spec.models import ClusterSpec

# The provider whose metadata and API the agent speaks. The lab stands in for Alibaba: its fakes
# answer Alibaba's metadata paths and ECS's signature (tests/lab/test_lifecycle_lab.py).
AGENT_CLOUD = {"alicloud": "alicloud", "tencentcloud": "tencentcloud", "local": "alicloud"}


def agent_wanted(spec: ClusterSpec) -> bool:
    """Does this cluster get the lifecycle role (and its agent)? Off unless the spec asks."""
    return spec.lifecycle.agent_wanted


def agent_settings(spec: ClusterSpec) -> dict[str, Any]:
    """The spec's lifecycle settings as the agent reads them (Config in the agent's own file)."""
    lifecycle = spec.lifecycle
    minutes = lifecycle.idle_stop_minutes
    return {
        "cloud": AGENT_CLOUD[spec.provider],
        "idle_seconds": minutes * 60 if minutes is not None else 0,
        "idle_action": lifecycle.idle_action,
        "idle_signals": list(lifecycle.idle_signals),
        "on_interruption": lifecycle.on_interruption or "",
    }


def checkpoint_dir(spec: ClusterSpec) -> str:
    """Where the interruption hook should write checkpoints (GPUCTL_CHECKPOINT_DIR): the mount path
    of the volume `lifecycle.checkpoint_volume` names, else of the only volume; '' otherwise."""
    named = spec.lifecycle.checkpoint_volume
    volumes = [v for v in spec.storage if v.name == named] if named else list(spec.storage)
    return volumes[0].mount_path if len(volumes) == 1 else ""
