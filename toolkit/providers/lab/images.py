"""Baked lab images: a configured lab node's root, kept, that new lab nodes start from.

With overlay roots (the usual layout) a node's changes to the base are its upper layer: the image
is a copy of that layer, and a node of a baked pool mounts it between the base and its own upper
layer (`lowerdir=<image>:<base>`), so it starts with every file the baked node's roles wrote. With
copied roots the image is a copy of the whole root, and a new node's root is copied from it.

What makes a node itself is left out of the image: its host key, machine id, host name and hosts
file, the operator's key, and its tuned /etc/nccl.conf (configure delivers each node's own).
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import stat
from pathlib import Path

from toolkit.errors import ProviderError
from toolkit.images import store
from toolkit.images.store import ImageRecord, image_dir
from toolkit.providers.lab import rootfs as lab_rootfs
from toolkit.providers.lab.state import LabNode, LabState

# Paths (relative to the root) that belong to one node, never to the image. Globs allowed.
NODE_OWN = ("etc/ssh/ssh_host_*", "etc/hostname", "etc/hosts", "etc/machine-id", "root/.ssh/authorized_keys",
            "etc/nccl.conf", "run/*", "tmp/*", "var/log/*")


def image_root(name: str) -> Path:
    """Where image `name`'s files lie: its layer (overlay) or its whole root (copy)."""
    return image_dir(name) / "root"


def bake(state: LabState, node: LabNode, name: str) -> tuple[str, str]:
    """Copy `node`'s root into image `name`; return (layout, location). The caller stops the node
    first (its files must not change under the copy) and removes the lab afterwards."""
    source = Path(node.node_dir) / ("upper" if state.layout == "overlay" else "root")
    target = image_root(name)
    if target.exists() or target.is_symlink():
        raise ProviderError(f"{target} already exists", hint=f"remove it with `{store.delete_command(name)}` first")
    # cp -a keeps owners, modes, links, devices (an overlay's whiteouts are 0/0 character devices)
    # and extended attributes (its opaque directories), so the layer stacks as it did on the node;
    # an attribute the image's filesystem cannot hold is an error, never silently dropped.
    lab_rootfs.copy_root(source, target, strict_xattrs=True)
    for pattern in NODE_OWN:
        remove_own(target, pattern)
    return state.layout, str(target)


def remove_own(root: Path, pattern: str) -> None:
    """Remove what `pattern` (a path under `root`, its last part a glob) names in the copied layer,
    never through a link: the layer is the node's, and root on the node may have made `tmp` a link
    to the host's `/`. A link on the way is left alone (the copy is the node's own, not the host's);
    a link that matches is removed as a link, a real directory with rmtree (which follows none)."""
    *parents, last = Path(pattern).parts
    directory = root
    for part in parents:
        directory = directory / part
        try:
            if not stat.S_ISDIR(os.lstat(directory).st_mode):
                return  # missing, a file, or a link: nothing of the node's own to strip here
        except FileNotFoundError:
            return
    with os.scandir(directory) as entries:
        for entry in entries:
            if not fnmatch.fnmatchcase(entry.name, last):
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)


def lower_dirs(record: ImageRecord, base: Path) -> str:
    """The overlay lowerdir option of a node of image `record`: its layer on top of the base root."""
    layer = Path(record.location)
    for path in (layer, base):
        # The option separates directories with ':' and options with ',': a path with either would
        # be read as something else.
        if ":" in str(path) or "," in str(path):
            raise ProviderError(f"{path}: a lab root path may not contain ':' or ','",
                                hint="set GPUCTL_HOME and GPUCTL_CACHE to paths without them")
    return f"{layer}:{base}"


def check_layout(record: ImageRecord, layout: str, where: str) -> None:
    """Refuse an image whose root is not of the lab's node layout (overlay or copy)."""
    if record.layout != layout:
        raise ProviderError(f"{where}: image {record.name} holds a {record.layout} root; this lab's nodes use "
                            f"{layout} roots", hint=f"bake it again: `{store.delete_command(record.name)}`, then "
                            f"`{store.build_command(record.name, record.pool)}`")


def check_usable(record: ImageRecord, where: str) -> None:
    """Refuse an image this lab cannot start nodes from, saying why and what to do (its layout is
    checked once the lab has one: check_layout)."""
    if record.provider != "local":
        raise ProviderError(f"{where}: image {record.name} was baked on {record.provider}, not in the local lab")
    if record.layout == "overlay" and record.base_key != lab_rootfs.base_key():
        raise ProviderError(f"{where}: image {record.name} is a layer on base root {record.base_key}; the lab's "
                            f"base is now {lab_rootfs.base_key()}",
                            hint=f"bake it again: `{store.delete_command(record.name)}`, then "
                            f"`{store.build_command(record.name, record.pool)}`")
    if not Path(record.location).is_dir():
        raise ProviderError(f"{where}: image {record.name}'s files are gone ({record.location})",
                            hint=f"`{store.delete_command(record.name)}`, then bake it again")
