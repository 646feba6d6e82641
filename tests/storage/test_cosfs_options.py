"""cosfs's CAM-role options, read the way cosfs v1.0.25 reads them (tencentyun/cosfs@v1.0.25).

cosfs takes `-o` options as one comma-separated list (FUSE) and matches each with STR2NCMP, a prefix
compare: `cam_role=` sets S3fsCurl::CAM_role, `cam_role_endpoint=` sets S3fsCurl::CAM_role_url
(src/s3fs.cpp:4902-4911); `cosfs --help` documents both with default "" (src/s3fs_util.cpp:948-952).
With CAM_role set, cosfs fetches the role's keys from CAM_role_url + "/" + CAM_role
(GetRAMCredentials, src/curl.cpp:2294) only when CAM_role_url is not empty; otherwise it expects
them in a passwd_file (CalcSignature, src/curl.cpp:2115-2127), which a gpuctl node never has.
The metadata path of a CVM role's keys: http://metadata.tencentyun.com/latest/meta-data/
cam/security-credentials/<role> (https://www.tencentcloud.com/document/product/213/4934, read 2026-12-01).
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest
import yaml

from toolkit.paths import ROLES_PATH

pytestmark = pytest.mark.unit

ROLE = "gpuctl-ckpt-abc123-node"
METADATA_KEYS = f"http://metadata.tencentyun.com/latest/meta-data/cam/security-credentials/{ROLE}"


def _filters() -> ModuleType:
    path = ROLES_PATH / "storage" / "filter_plugins" / "storage_mounts.py"
    spec = importlib.util.spec_from_file_location("storage_mounts_cosfs", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["storage_mounts_cosfs"] = module
    spec.loader.exec_module(module)
    return module


def cosfs_credentials_url(option_string: str) -> str | None:
    """Where cosfs v1.0.25 would read the role's keys given this `-o` string; None: from no URL at all."""
    cam_role, cam_role_url = "", ""  # both default to "" (RAM_CRED_URL "", src/curl.cpp:292, 331)
    for arg in option_string.split(","):
        if arg.startswith("cam_role="):
            cam_role = arg.split("=", 1)[1]
        if arg.startswith("cam_role_endpoint="):
            cam_role_url = arg.split("=", 1)[1]
    if not cam_role or not cam_role_url:
        return None
    return cam_role_url + "/" + cam_role


def role_defaults() -> dict[str, object]:
    data = yaml.safe_load((ROLES_PATH / "storage" / "defaults" / "main.yml").read_text())
    assert isinstance(data, dict)
    return data


def test_the_role_points_cosfs_at_the_cvm_metadata_path_of_the_role() -> None:
    defaults = role_defaults()
    assert defaults["storage_cosfs_cam_role_endpoint"] == (
        "http://metadata.tencentyun.com/latest/meta-data/cam/security-credentials")
    settings = {"cam_role_endpoint": defaults["storage_cosfs_cam_role_endpoint"]}
    volume = {"name": "ckpt", "kind": "object", "client": "cosfs", "mount_path": "/mnt/ckpt",
              "bucket": "ckpt-1250000000", "endpoint": "cos.ap-shanghai.myqcloud.com", "instance_role": ROLE}
    argv = _filters().storage_mount_argv(volume, settings)
    assert argv[:3] == ["cosfs", "ckpt-1250000000", "/mnt/ckpt"]
    assert argv[3] == "-o"
    assert cosfs_credentials_url(argv[4]) == METADATA_KEYS


def test_cam_role_alone_would_read_the_keys_from_nowhere() -> None:
    """The option string gpuctl wrote before: the role's name only, so cosfs never asked the metadata."""
    assert cosfs_credentials_url(f"allow_other,url=https://cos.ap-shanghai.myqcloud.com,cam_role={ROLE}") is None


def test_the_mount_unit_carries_both_options() -> None:
    settings = {"cam_role_endpoint": role_defaults()["storage_cosfs_cam_role_endpoint"], "timeout_sec": 120}
    volume = {"name": "ckpt", "kind": "object", "client": "cosfs", "mount_path": "/mnt/ckpt",
              "bucket": "ckpt-1250000000", "endpoint": "cos.ap-shanghai.myqcloud.com", "instance_role": ROLE}
    unit = _filters().storage_mount_unit(volume, settings)
    [options] = [line for line in unit.splitlines() if line.startswith("Options=")]
    assert cosfs_credentials_url(options.removeprefix("Options=")) == METADATA_KEYS
