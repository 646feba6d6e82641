"""The storage role's decisions (filter_plugins/storage_mounts.py): exact mount units, unit names,
NFS options per version and kernel, the FUSE clients' role options; the inventory variable and the
site roles gpuctl renders for a cluster with volumes; the outputs' checks."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import ValidationError

from toolkit.configure.render import inventory_data, render_playbook, site_roles, storage_volumes
from toolkit.paths import ROLES_PATH, Paths
from toolkit.providers.base import ClusterOutputs, NodeOutput, VolumeOutput
from toolkit.spec.loader import load_spec_text

pytestmark = pytest.mark.unit


def _filters() -> ModuleType:
    path = ROLES_PATH / "storage" / "filter_plugins" / "storage_mounts.py"
    spec = importlib.util.spec_from_file_location("storage_mounts", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["storage_mounts"] = module
    spec.loader.exec_module(module)
    return module


F = _filters()
SETTINGS: dict[str, Any] = {
    "nfs_options": {
        "3": ["vers=3", "nolock", "proto=tcp", "rsize=1048576", "wsize=1048576", "hard", "timeo=600", "retrans=2",
              "noresvport"],
        "4.0": ["vers=4.0", "rsize=1048576", "wsize=1048576", "hard", "timeo=600", "retrans=2", "noresvport"],
    },
    "nconnect": "4", "nconnect_min_kernel": "5.3", "kernel": "5.15.0-91-generic",
    "passwd_dir": "/etc/gpuctl/storage", "timeout_sec": "120",
    "cam_role_endpoint": "http://metadata.tencentyun.com/latest/meta-data/cam/security-credentials",
}
NAS = {"name": "data", "kind": "nas", "client": "nfs", "mount_path": "/mnt/data",
       "source": "31a8e48b9c-abc12.cn-beijing.nas.aliyuncs.com:/", "nfs_version": "3"}
OSS = {"name": "ckpt", "kind": "object", "client": "ossfs", "mount_path": "/mnt/ckpt", "bucket": "llm-ckpt-2026",
       "endpoint": "oss-cn-beijing-internal.aliyuncs.com", "instance_role": "gpuctl-node"}


def test_nas_unit_on_a_current_kernel_is_exactly_this() -> None:
    assert F.storage_mount_unit(NAS, SETTINGS) == """\
# Written by gpuctl's storage role: volume data (nas, nfs).
# gpuctl configure rewrites it; change the spec, not this file.
[Unit]
Description=gpuctl volume data at /mnt/data
Wants=network-online.target
After=network-online.target

[Mount]
What=31a8e48b9c-abc12.cn-beijing.nas.aliyuncs.com:/
Where=/mnt/data
Type=nfs
Options=vers=3,nolock,proto=tcp,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport,nconnect=4,_netdev
TimeoutSec=120

[Install]
WantedBy=remote-fs.target
"""


def test_cfs_v4_on_an_old_kernel_has_no_nconnect() -> None:
    cfs = {**NAS, "source": "10.0.1.24:/", "nfs_version": "4.0", "mount_path": "/data/shared-set"}
    mount = F.storage_mount(cfs, {**SETTINGS, "kernel": "4.18.0-513.el8.x86_64"})
    assert mount == {"what": "10.0.1.24:/", "where": "/data/shared-set", "type": "nfs",
                     "options": ["vers=4.0", "rsize=1048576", "wsize=1048576", "hard", "timeo=600", "retrans=2",
                                 "noresvport", "_netdev"]}
    assert F.storage_mount(cfs, {**SETTINGS, "nconnect": "0"})["options"][-1] == "_netdev"


def test_ossfs_unit_uses_the_instance_ram_role_and_no_key() -> None:
    unit = F.storage_mount_unit(OSS, SETTINGS)
    assert "What=llm-ckpt-2026\nWhere=/mnt/ckpt\nType=fuse.ossfs\n" in unit
    assert "Options=allow_other,url=https://oss-cn-beijing-internal.aliyuncs.com,ram_role=gpuctl-node,_netdev\n" in unit
    no_role = {k: v for k, v in OSS.items() if k != "instance_role"}
    assert F.storage_mount(no_role, SETTINGS)["options"][2] == "ram_role=auto"


def test_cosfs_needs_the_cam_role_by_name() -> None:
    cos = {**OSS, "client": "cosfs", "bucket": "ckpt-1250000000", "endpoint": "cos.ap-shanghai.myqcloud.com"}
    assert F.storage_mount(cos, SETTINGS)["options"] == [
        "allow_other", "url=https://cos.ap-shanghai.myqcloud.com", "cam_role=gpuctl-node",
        "cam_role_endpoint=http://metadata.tencentyun.com/latest/meta-data/cam/security-credentials", "_netdev"]
    with pytest.raises(ValueError, match="CAM role"):
        F.storage_mount({k: v for k, v in cos.items() if k != "instance_role"}, SETTINGS)


def test_lab_s3fs_command_has_path_style_and_its_key_file_without_netdev() -> None:
    lab = {"name": "ckpt", "kind": "object", "client": "s3fs", "mount_path": "/mnt/ckpt", "bucket": "storeci-ckpt",
           "endpoint": "http://10.213.9.1:9000", "lab_key_pair": "gpuctl-lab:not-a-credential"}
    assert F.storage_mount_argv(lab, SETTINGS) == [
        "s3fs", "storeci-ckpt", "/mnt/ckpt", "-o",
        "allow_other,url=http://10.213.9.1:9000,use_path_request_style,passwd_file=/etc/gpuctl/storage/ckpt.passwd-s3fs"]
    assert F.storage_mount_argv(NAS, {**SETTINGS, "kernel": ""}) == [
        "mount", "-t", "nfs", "-o",
        "vers=3,nolock,proto=tcp,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport,_netdev", "--",
        "31a8e48b9c-abc12.cn-beijing.nas.aliyuncs.com:/", "/mnt/data"]


@pytest.mark.parametrize(("path", "unit"), [
    ("/mnt/data", "mnt-data.mount"),
    ("/mnt/my-data", "mnt-my\\x2ddata.mount"),  # systemd-escape --path: '-' is \x2d
    ("/data/.cache", "data-.cache.mount"),
    ("/.hidden/x", "\\x2ehidden-x.mount"),      # a leading '.' is escaped
    ("/home/ubuntu/data_1", "home-ubuntu-data_1.mount"),
])
def test_unit_names_are_systemd_escaped(path: str, unit: str) -> None:
    assert F.storage_unit_name(path) == unit


@pytest.mark.parametrize(("kernel", "at_least"), [("5.3.0", True), ("5.15.0-91-generic", True), ("6.1.0", True),
                                                  ("5.2.21", False), ("4.18.0-513.el8", False), ("", False)])
def test_kernel_gate(kernel: str, at_least: bool) -> None:
    assert F.kernel_at_least(kernel, "5.3") is at_least


def _outputs(provider: str = "local", **volume: Any) -> ClusterOutputs:
    node = NodeOutput(name="lab-n-0", pool="n", instance_id="x", instance_type="lab", private_ip="10.213.7.11",
                      ssh_host="10.213.7.11")
    volumes = [VolumeOutput(**volume)] if volume else []
    return ClusterOutputs(cluster="lab", provider=provider, fabric="tcp", mtu=8500, nodes=[node], volumes=volumes)


LAB_VOLUME = {"name": "ckpt", "kind": "object", "mount_path": "/mnt/ckpt", "bucket": "lab-ckpt",
              "endpoint": "http://10.213.7.1:9000", "lab_key_pair": "gpuctl-lab:not-a-credential"}


def test_inventory_carries_the_volumes_with_their_client() -> None:
    assert storage_volumes(_outputs(**LAB_VOLUME)) == [{
        "client": "s3fs", "name": "ckpt", "kind": "object", "mount_path": "/mnt/ckpt", "bucket": "lab-ckpt",
        "endpoint": "http://10.213.7.1:9000", "lab_key_pair": "gpuctl-lab:not-a-credential"}]
    spec = load_spec_text("""\
name: lab
provider: local
node_pools: [{name: n, instance_type: lab, count: 1}]
network: {fabric: tcp, mtu: 8500, admin_cidr: 127.0.0.0/8}
lifecycle: {ttl: 2h}
""")
    paths = Paths(Path("/gpuctl-home/clusters/lab"))
    assert "gpuctl_storage_volumes" in inventory_data(spec, _outputs(**LAB_VOLUME), paths, "g").group
    assert "gpuctl_storage_volumes" not in inventory_data(spec, _outputs(), paths, "g").group


def test_storage_role_only_for_a_cluster_with_volumes_after_mtu() -> None:
    assert "storage" not in site_roles("tcp")
    assert site_roles("erdma", storage=True) == (
        "nvidia_driver", "cuda", "nccl", "rdma_userspace", "erdma", "mtu", "storage", "topology_facts", "lifecycle",
        "install_record")
    paths = Paths(Path("/gpuctl-home/clusters/lab"))
    assert "    - role: storage\n" in render_playbook(_outputs(**LAB_VOLUME), paths)
    assert "role: storage" not in render_playbook(_outputs(), paths)


def test_a_cloud_never_hands_nodes_a_key_pair() -> None:
    cloud = {**LAB_VOLUME, "endpoint": "oss-cn-beijing-internal.aliyuncs.com"}
    with pytest.raises(ValidationError, match="instance role"):
        _outputs("alicloud", **cloud)
    _outputs("alicloud", **{k: v for k, v in cloud.items() if k != "lab_key_pair"})


@pytest.mark.parametrize("bad", [
    {"mount_path": "/etc/x"}, {"mount_path": "/mnt/a b"}, {"endpoint": "http://x:9000 -o evil"},
    {"bucket": "-o"}, {"lab_key_pair": "$(id):x"}, {"bucket": None},
])
def test_outputs_refuse_values_that_could_reach_a_command(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        VolumeOutput(**{**LAB_VOLUME, **bad})


def test_nas_output_needs_source_and_version() -> None:
    with pytest.raises(ValidationError, match="mount source"):
        VolumeOutput(name="data", kind="nas", mount_path="/mnt/data", source="x.nas.aliyuncs.com:/")
    with pytest.raises(ValidationError):
        VolumeOutput(name="data", kind="nas", mount_path="/mnt/data", source="-oevil:/", nfs_version="3")
