"""Python decides: each node's fetched bundle in, that node's tuned NCCL files out.

Between the site playbook (which gathers every node's topology and fetches it as a tar) and the
deliver playbook (which installs files), gpuctl unpacks each bundle, detects and tunes in this
process, and writes nccl.conf and explain.json per node. Nothing here is a template and nothing
from a spec passes through Ansible: overrides go straight from the spec into the tuner.

/etc/nccl.conf is the one place a node's settings live: NCCL reads it itself at init and lets the
process environment win over it (src/misc/param.cc, setenv(..., 0)), so an exported copy in
/etc/profile.d would silently override any edit of nccl.conf in every login shell. gpuctl therefore
writes no environment file; `gpuctl tune --format env` prints one for a job that cannot see
/etc/nccl.conf (a container), as an explicit choice.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING

from toolkit.errors import ParseError
from toolkit.files import FileError, read_bounded, read_text_bounded, write_atomic
from toolkit.state import own_dir

if TYPE_CHECKING:
    from toolkit.spec.models import ClusterSpec
    from toolkit.tuning.config import NcclConfig

# A gather bundle is some command outputs: a few MB. A node that sends more is broken or hostile.
MAX_BUNDLE_BYTES = 64 * 1024 * 1024
MAX_BUNDLE_FILES = 2000
NODE_FILES = ("nccl.conf", "explain.json")
MAX_NODE_FILE_BYTES = 4 * 1024 * 1024  # nccl.conf and explain.json are a few KiB
# Written by gpuctl before nccl.conf became the only copy of the settings; removed when found.
FORMER_NODE_FILES = ("nccl.sh",)


def unpack_bundle(tar_path: Path, dest: Path) -> Path:
    """Replace `dest` with the content of the node's bundle tar; regular files and folders only.

    The tar comes from a node, so it is untrusted: Python's `data` filter refuses absolute paths,
    `..`, links out of the folder and device files, and the size and count are capped.
    """
    try:
        with tarfile.open(tar_path) as archive:
            members = archive.getmembers()
            if len(members) > MAX_BUNDLE_FILES or sum(m.size for m in members) > MAX_BUNDLE_BYTES:
                raise ParseError(f"bundle is larger than {MAX_BUNDLE_FILES} files or {MAX_BUNDLE_BYTES} bytes",
                                 source=str(tar_path))
            keep = [m for m in members if m.isfile() or m.isdir()]
            staging = dest.with_name(dest.name + ".new")
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True, mode=0o700)
            archive.extractall(staging, members=keep, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise ParseError(f"the node's bundle cannot be unpacked ({exc})", source=str(tar_path)) from None
    shutil.rmtree(dest, ignore_errors=True)
    staging.replace(dest)
    return dest


def tune_spec_node(spec: ClusterSpec, bundle: Path, fabric_interface: str | None, *,
                   image_stack: bool = False) -> NcclConfig:
    """The NCCL settings for one node from its gathered bundle, with the spec's fabric, MTU, NCCL
    version and overrides. `image_stack`: the node's pool keeps the image's NCCL (gpu_stack image),
    so the version is the one gathered on the node, not the spec's pin it did not install."""
    from toolkit.topology.detect import detect_paths
    from toolkit.tuning.engine import tune

    return tune(detect_paths([bundle]), fabric=spec.network.fabric, mtu=spec.network.mtu,
                nccl_version=None if image_stack else spec.software.nccl, overrides=spec.nccl_override_values(),
                provider=spec.provider if spec.provider in ("alicloud", "tencentcloud") else None,
                fabric_interface=fabric_interface)


def write_node_files(config: NcclConfig, out: Path) -> bool:
    """Write nccl.conf and explain.json into `out` (and drop a former nccl.sh); return whether
    anything changed."""
    files = {
        "nccl.conf": config.render_nccl_conf(),
        "explain.json": json.dumps(config.to_document(), indent=2, sort_keys=True) + "\n",
    }
    own_dir(out)
    changed = False
    for name in FORMER_NODE_FILES:
        if (out / name).exists():
            (out / name).unlink()
            changed = True
    for name, text in files.items():
        target = out / name
        if _current(target) != text:
            write_atomic(target, text)
            changed = True
    return changed


def _current(target: Path) -> str | None:
    """What gpuctl wrote at `target` last time; None when nothing readable is there (a link is not read)."""
    try:
        return read_text_bounded(target, limit=MAX_NODE_FILE_BYTES, what="node file", follow=False)
    except FileError:
        return None


def load_explained(out: Path) -> NcclConfig | None:
    """The settings a node was given, read back from its explain.json (None when there is none)."""
    from toolkit.tuning.config import NcclConfig

    try:
        document = json.loads(read_bounded(out / "explain.json", limit=MAX_NODE_FILE_BYTES, what="explain.json",
                                           follow=False))
        return NcclConfig.from_document(document)
    except (FileError, ValueError, KeyError, TypeError, RecursionError):
        return None
