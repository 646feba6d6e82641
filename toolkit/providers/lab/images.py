"""Baked lab images: a configured lab node's root, kept, that new lab nodes start from.

With overlay roots (the usual layout) a node's changes to the base are its upper layer: the image
is a copy of that layer, and a node of a baked pool mounts it between the base and its own upper
layer (`lowerdir=<image>:<base>`), so it starts with every file the baked node's roles wrote. With
copied roots the image is a copy of the whole root, and a new node's root is copied from it.

What makes a node itself is left out of the image: its host key, machine id, host name and hosts
file, the operator's key, and its tuned /etc/nccl.conf (configure delivers each node's own).
"""

from __future__ import annotations

import subprocess
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
    # and extended attributes (its opaque directories), so the layer stacks as it did on the node.
    lab_rootfs.copy_root(source, target)
    for pattern in NODE_OWN:
        for path in target.glob(pattern):
            if path.is_dir() and not path.is_symlink():
                subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], check=False, capture_output=True)
            else:
                path.unlink(missing_ok=True)
    return state.layout, str(target)


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


def check_usable(record: ImageRecord, layout: str, where: str) -> None:
    """Refuse an image this lab cannot start nodes from, saying why and what to do."""
    if record.provider != "local":
        raise ProviderError(f"{where}: image {record.name} was baked on {record.provider}, not in the local lab")
    if record.layout != layout:
        raise ProviderError(f"{where}: image {record.name} holds a {record.layout} root; this lab's nodes use "
                            f"{layout} roots", hint=f"bake it again: `{store.delete_command(record.name)}`, then "
                            f"`{store.build_command()}`")
    if record.layout == "overlay" and record.base_key != lab_rootfs.base_key():
        raise ProviderError(f"{where}: image {record.name} is a layer on base root {record.base_key}; the lab's "
                            f"base is now {lab_rootfs.base_key()}",
                            hint=f"bake it again: `{store.delete_command(record.name)}`, then "
                            f"`{store.build_command()}`")
    if not Path(record.location).is_dir():
        raise ProviderError(f"{where}: image {record.name}'s files are gone ({record.location})",
                            hint=f"`{store.delete_command(record.name)}`, then bake it again")
