"""The storage role's decisions, on the controller: how each shared volume is mounted on a node.

Input: one volume as gpuctl writes it into the inventory (`gpuctl_storage_volumes`, rendered by
toolkit/configure/render.py from the provider's `VolumeOutput`s):

    name, kind (nas | object), mount_path, client (nfs | ossfs | cosfs | s3fs),
    nas: source ("<mount target>:/"), nfs_version ("3" | "4.0");
    object: bucket, endpoint, instance_role (cloud) or lab_key_pair (the lab's store only)

and the role's settings (`storage_settings` in defaults/main.yml): the NFS options per version,
`nconnect`, the node's kernel, where the lab's s3fs key file lives.

Output: one mount, `{what, where, type, options}`, from which come both the systemd mount unit
(clouds: persistent, mounted again at boot) and the direct mount command (the lab: its nodes run no
systemd; `gpuctl configure` mounts again after a restart). Nothing here is evaluated or quoted
through a shell: values were checked by gpuctl (providers/base.VolumeOutput) and the role's assert,
and the unit's fields hold only plain characters.
"""

from __future__ import annotations

import re
from typing import Any

# systemd-escape --path: every byte outside [A-Za-z0-9:_.] becomes \xNN, '/' becomes '-', and a
# leading '.' is escaped too (systemd.unit(5), "String Escaping for Inclusion in Unit Names").
_UNIT_SAFE = re.compile(r"[A-Za-z0-9:_.]")
# The FUSE clients: the file system type mount(8) hands to mount.fuse (`fuse.<client>`).
FUSE_CLIENTS = ("ossfs", "cosfs", "s3fs")


def storage_unit_name(mount_path: str, suffix: str = "mount") -> str:
    """The systemd unit name of a mount point, as `systemd-escape --path --suffix=mount` gives it."""
    trimmed = mount_path.strip("/")
    if not trimmed:
        return f"-.{suffix}"
    escaped = []
    for index, char in enumerate(trimmed):
        if char == "/":
            escaped.append("-")
        elif _UNIT_SAFE.fullmatch(char) and not (index == 0 and char == "."):
            escaped.append(char)
        else:
            escaped.append("".join(f"\\x{byte:02x}" for byte in char.encode()))
    return "".join(escaped) + "." + suffix


def kernel_at_least(kernel: str, minimum: str) -> bool:
    """Whether a kernel release ("5.15.0-91-generic") is at least `minimum` ("5.3"); False when unreadable."""
    found = re.match(r"(\d+)\.(\d+)", kernel or "")
    wanted = re.match(r"(\d+)\.(\d+)", minimum)
    if found is None or wanted is None:
        return False
    return (int(found[1]), int(found[2])) >= (int(wanted[1]), int(wanted[2]))


def _url(endpoint: str) -> str:
    # The clouds give their internal endpoints bare (oss-<region>-internal.aliyuncs.com): HTTPS,
    # which both OSS and COS serve there. The lab's store names its scheme (http, loopback network).
    return endpoint if re.match(r"https?://", endpoint) else f"https://{endpoint}"


def storage_mount(volume: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """What to mount where, with which type and options (a list), for one volume."""
    client = volume["client"]
    where = volume["mount_path"]
    if client == "nfs":
        version = str(volume["nfs_version"])
        options = list(settings["nfs_options"][version])
        nconnect = int(settings.get("nconnect") or 0)
        if nconnect > 0 and kernel_at_least(str(settings.get("kernel", "")), str(settings["nconnect_min_kernel"])):
            options.append(f"nconnect={nconnect}")
        # A network file system: systemd orders it after the network and unmounts it before.
        options.append("_netdev")
        return {"what": volume["source"], "where": where, "type": "nfs", "options": options}
    if client not in FUSE_CLIENTS:
        raise ValueError(f"volume {volume.get('name')}: no mount for client {client!r}")
    # allow_other: the training job's user reads what root mounted.
    options = ["allow_other", f"url={_url(volume['endpoint'])}"]
    if client == "ossfs":
        # ossfs -o ram_role: the RAM role attached to the instance ("auto": the one the instance has);
        # credentials come from the metadata service and are renewed by ossfs, none is on the node.
        options.append(f"ram_role={volume.get('instance_role') or 'auto'}")
    elif client == "cosfs":
        # cosfs -o cam_role=<role> -o cam_role_endpoint=<url>: with the endpoint, cosfs reads the role's
        # temporary keys from <url>/<role> and renews them before they expire; with cam_role alone its
        # endpoint is empty (RAM_CRED_URL "", src/curl.cpp:292, 331) and it expects the keys in a
        # passwd_file instead (CalcSignature, src/curl.cpp:2115-2127). tencentyun/cosfs@v1.0.25, options
        # parsed at src/s3fs.cpp:4902-4911, documented by `cosfs --help` (src/s3fs_util.cpp:948-952).
        # cosfs has no "auto": the role's assert requires instance_role.
        if not volume.get("instance_role"):
            raise ValueError(f"volume {volume.get('name')}: cosfs needs the instance's CAM role (instance_role)")
        options.append(f"cam_role={volume['instance_role']}")
        options.append(f"cam_role_endpoint={settings['cam_role_endpoint']}")
    else:
        # s3fs against the lab's S3-compatible store: path-style requests (its endpoint is an IP
        # address) and the store's fixed key pair, which is not a credential.
        options += ["use_path_request_style", f"passwd_file={settings['passwd_dir']}/{volume['name']}.passwd-s3fs"]
    options.append("_netdev")
    return {"what": volume["bucket"], "where": where, "type": f"fuse.{client}", "options": options}


def storage_mount_unit(volume: dict[str, Any], settings: dict[str, Any]) -> str:
    """The systemd mount unit of one volume (file name: storage_unit_name of its mount path)."""
    mount = storage_mount(volume, settings)
    return "\n".join([
        f"# Written by gpuctl's storage role: volume {volume['name']} ({volume['kind']}, {volume['client']}).",
        "# gpuctl configure rewrites it; change the spec, not this file.",
        "[Unit]",
        f"Description=gpuctl volume {volume['name']} at {mount['where']}",
        "Wants=network-online.target",
        "After=network-online.target",
        "",
        "[Mount]",
        f"What={mount['what']}",
        f"Where={mount['where']}",
        f"Type={mount['type']}",
        f"Options={','.join(mount['options'])}",
        # An unreachable server must not hold the boot: give up on this mount after 2 minutes.
        f"TimeoutSec={int(settings.get('timeout_sec', 120))}",
        "",
        "[Install]",
        "WantedBy=remote-fs.target",
        "",
    ])


def storage_mount_argv(volume: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """The command that mounts one volume now, without systemd (the lab's nodes run none).

    `_netdev` is for systemd and mount(8) only, so it is left out of a FUSE client's own options.
    """
    mount = storage_mount(volume, settings)
    if mount["type"] == "nfs":
        return ["mount", "-t", "nfs", "-o", ",".join(mount["options"]), "--", mount["what"], mount["where"]]
    options = [option for option in mount["options"] if option != "_netdev"]
    return [volume["client"], mount["what"], mount["where"], "-o", ",".join(options)]


class FilterModule:
    """Ansible's entry point for the role's filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "storage_unit_name": storage_unit_name,
            "storage_mount": storage_mount,
            "storage_mount_unit": storage_mount_unit,
            "storage_mount_argv": storage_mount_argv,
        }
