"""The clusters recorded on this machine: one directory per cluster under `<gpuctl home>/clusters/`.

Read without the Pulumi CLI, from the files the Automation API leaves:

- `pulumi-project/Pulumi.<cluster>.yaml`: the stack's config, in the work directory gpuctl always
  keeps here whatever the backend (`gpuctl:clusterId`, `gpuctl:createdAt`, `gpuctl:owner`, and the
  region under `alicloud:region` / `tencentcloud:region`, which says the provider too);
- the checkpoint of Pulumi's file backend, `<backend>/.pulumi/stacks/<project>/<cluster>.json`
  (`.json.gz` when Pulumi gzips it): the root stack resource's outputs (`expiresAt`, `nodes`).
  Only where the backend is a local directory (gpuctl's default, or a file:// GPUCTL_PULUMI_BACKEND);
- `lab-state.json` for a local lab (its creation time; a lab records no TTL).

A file that cannot be read becomes a note on the cluster, not a failure of the whole scan.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from toolkit.files import FileError, expand_user, gunzip_bounded, read_bounded, read_text_bounded
from toolkit.providers.cloud_api import REGION_ID
from toolkit.providers.pulumi.backend import BACKEND_ENV
from toolkit.providers.pulumi.pins import CONFIG_CLUSTER_ID, CONFIG_CREATED_AT, CONFIG_OWNER, parse_created_at
from toolkit.providers.pulumi.stack_state import STACK_TYPE, leftover_resources
from toolkit.state import gpuctl_home

# The stack config key of each cloud's region, which is how a stack says which cloud it is on.
REGION_KEYS = {"alicloud:region": "alicloud", "tencentcloud:region": "tencentcloud"}
PROJECTS = {"alicloud": "gpuctl-alicloud", "tencentcloud": "gpuctl-tencentcloud"}
LAB_STATE = "lab-state.json"
# A stack of 1,250 nodes checkpoints to tens of MiB; the config to a few KiB.
MAX_CHECKPOINT_BYTES = 256 * 1024 * 1024
MAX_CONFIG_BYTES = 1024 * 1024


@dataclass(frozen=True)
class StateCluster:
    """One cluster as this machine records it."""

    name: str
    provider: str  # alicloud, tencentcloud or local
    region: str | None
    cluster_id: str | None
    owner: str | None
    created_at: datetime | None
    expires_at: datetime | None  # the stack's expiresAt; None where the checkpoint was not read
    instance_types: tuple[str, ...] = ()  # one per node the stack lists
    resources: int | None = None  # cloud resources in the checkpoint; None: not read
    notes: tuple[str, ...] = field(default=())


def scan(home: Path | None = None, env: Mapping[str, str] | None = None) -> list[StateCluster]:
    """Every cluster directory under the gpuctl home, in name order."""
    env = os.environ if env is None else env
    base = (home or gpuctl_home()) / "clusters"
    try:
        folders = sorted(p for p in base.iterdir() if p.is_dir())
    except FileNotFoundError:
        return []
    found = []
    for folder in folders:
        cluster = read_cluster(folder, env)
        if cluster is not None:
            found.append(cluster)
    return found


def read_cluster(folder: Path, env: Mapping[str, str]) -> StateCluster | None:
    """The cluster a directory records; None for a directory that records none (a lab's leftover
    node directory, an empty stack workspace)."""
    name = folder.name
    if (folder / LAB_STATE).exists():
        return _lab(name)
    config, problem = stack_config(folder / "pulumi-project", name)
    if config is None:
        return None if problem is None else StateCluster(name, "unknown", None, None, None, None, None,
                                                         notes=(problem,))
    provider = next((REGION_KEYS[key] for key in REGION_KEYS if config.get(key)), None)
    if provider is None:
        return None  # a workspace whose stack never got its region: `up` stopped before the first call
    notes: list[str] = []
    expires: datetime | None = None
    types: tuple[str, ...] = ()
    resources: int | None = None
    checkpoint = checkpoint_path(folder, PROJECTS[provider], name, env)
    if checkpoint is None:
        notes.append(f"the stack lives in a remote backend ({BACKEND_ENV}); its outputs were not read")
    else:
        outputs, resources, problem = read_checkpoint(checkpoint, name)
        if problem:
            notes.append(problem)
        expires = parse_created_at(outputs.get("expiresAt"))
        nodes = outputs.get("nodes")
        types = tuple(n["instance_type"][:200] for n in nodes if isinstance(n, Mapping)
                      and isinstance(n.get("instance_type"), str) and n["instance_type"]) \
            if isinstance(nodes, list) else ()
    region = config.get(f"{provider}:region")
    if region is not None and not REGION_ID.fullmatch(region):
        notes.append(f"the stack config's region {ascii(region)[:80]} is not a region id: that region is not searched")
        region = None
    return StateCluster(
        name=name, provider=provider, region=region,
        cluster_id=config.get(CONFIG_CLUSTER_ID), owner=config.get(CONFIG_OWNER),
        created_at=parse_created_at(config.get(CONFIG_CREATED_AT)), expires_at=expires,
        instance_types=types, resources=resources, notes=tuple(notes),
    )


def stack_config(work_dir: Path, stack: str) -> tuple[dict[str, str] | None, str | None]:
    """(the plain string values of the stack's config, None) or (None, why it is unreadable);
    (None, None) when the workspace has no such file. Secret values are left out."""
    for ext in (".yaml", ".yml", ".json"):
        path = work_dir / f"Pulumi.{stack}{ext}"
        if not os.path.lexists(path):
            continue
        try:
            data = yaml.safe_load(read_text_bounded(path, limit=MAX_CONFIG_BYTES, what="stack config", follow=False))
        except FileError as problem:
            return None, str(problem)
        except (yaml.YAMLError, RecursionError, ValueError) as exc:
            # ValueError: an integer of more digits than Python converts (PyYAML builds it with int()).
            return None, f"{path}: cannot be read ({type(exc).__name__})"
        values = data.get("config") if isinstance(data, Mapping) else None
        if not isinstance(values, Mapping):
            return {}, None
        # A number is read as its text (an all-digit id unquoted); PyYAML refuses the ones too long to convert.
        return {str(k): str(v) for k, v in values.items() if isinstance(v, str | int | float) and v != ""}, None
    return None, None


def checkpoint_path(folder: Path, project: str, stack: str, env: Mapping[str, str]) -> Path | None:
    """Where the file backend keeps the stack's checkpoint; None when the backend is not a local directory."""
    url = env.get(BACKEND_ENV) or f"file://{folder / 'pulumi'}"
    if not url.startswith("file://"):
        return None
    root = expand_user(url.removeprefix("file://"), where=BACKEND_ENV) / ".pulumi" / "stacks"
    candidates = [root / project / f"{stack}.json", root / project / f"{stack}.json.gz",
                  root / f"{stack}.json", root / f"{stack}.json.gz"]  # project-scoped first, then the older layout
    return next((path for path in candidates if path.exists()), candidates[0])


def read_checkpoint(path: Path, stack: str) -> tuple[dict[str, Any], int | None, str | None]:
    """(the root stack's outputs, the cloud resources it holds, a problem or None)."""
    if not os.path.lexists(path):
        return {}, 0, "no checkpoint in the file backend: the stack holds nothing (never created, or destroyed)"
    try:
        # Bounded twice: the file as stored, and what a .gz inflates to (a small gzip bomb stays small).
        raw = read_bounded(path, limit=MAX_CHECKPOINT_BYTES, what="Pulumi checkpoint")
        if path.suffix == ".gz":
            raw = gunzip_bounded(raw, limit=MAX_CHECKPOINT_BYTES, source=path, what="Pulumi checkpoint")
        data = json.loads(raw)
    except FileError as problem:
        return {}, None, str(problem)
    except (ValueError, RecursionError) as exc:
        return {}, None, f"{path}: cannot be read ({type(exc).__name__})"
    # Each level read as what Pulumi writes only when it is that (a string where an object belongs is nothing).
    checkpoint = data.get("checkpoint") if isinstance(data, Mapping) else None
    latest = checkpoint.get("latest") if isinstance(checkpoint, Mapping) else None
    resources = latest.get("resources") if isinstance(latest, Mapping) else None
    outputs: dict[str, Any] = {}
    for resource in resources if isinstance(resources, list) else []:
        if isinstance(resource, Mapping) and resource.get("type") == STACK_TYPE:
            found = resource.get("outputs")
            outputs = dict(found) if isinstance(found, Mapping) else {}
    if resources is None:
        return outputs, 0, None  # a stack that holds nothing (no `latest`, or no resources in it)
    if not isinstance(resources, list):
        return outputs, None, f"{path}: its resources are not a list; not read"
    return outputs, len(leftover_resources({"resources": resources}, stack)), None


def _lab(name: str) -> StateCluster:
    from toolkit.errors import GpuctlError
    from toolkit.providers.lab import state as lab_state
    from toolkit.timestamps import parse_iso

    try:
        state = lab_state.load(name)
    except GpuctlError as error:
        return StateCluster(name, "local", None, None, None, None, None, notes=(error.message,))
    created = parse_iso(state.created_at) if state is not None else None
    return StateCluster(name, "local", None, None, None, created, None,
                        notes=("a lab records no TTL: give its spec to know when it expires",))
