"""Lab tier: a temporary GPUCTL_HOME per session, one shared debootstrap cache, a replay bundle."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO

# One base root for every test and every session: debootstrap runs once per machine.
DEFAULT_CACHE = "/var/tmp/gpuctl-cache"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.geteuid() != 0:
        skip = pytest.mark.skip(reason="the local lab needs root (network namespaces, bridges, mounts)")
        for item in items:
            if "lab" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def lab_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("gpuctl-home")
    saved = {k: os.environ.get(k) for k in ("GPUCTL_HOME", "GPUCTL_CACHE")}
    os.environ["GPUCTL_HOME"] = str(home)
    os.environ["GPUCTL_CACHE"] = saved["GPUCTL_CACHE"] or DEFAULT_CACHE
    yield home
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session", autouse=True)
def aged_base_root(lab_home: Path) -> None:
    """Make the cached base root look as old as it usually is: package lists from hours ago.

    A freshly built root hides roles that ask apt to refresh a stale cache (lab nodes have no
    mirror); the lab once passed in CI and failed an hour after its base root was built.
    """
    if os.geteuid() != 0:
        return
    from toolkit.providers.lab import host as lab_host
    from toolkit.providers.lab import rootfs as lab_rootfs

    lab_host.ensure_tools()
    root = lab_rootfs.ensure_base(lambda _line: None)
    two_hours_ago = time.time() - 2 * 3600
    apt_state = [root / "var/lib/apt/lists", root / "var/lib/apt/periodic/update-success-stamp",
                 root / "var/cache/apt/pkgcache.bin", root / "var/cache/apt/srcpkgcache.bin"]
    for path in apt_state:
        for item in [path, *(path.iterdir() if path.is_dir() else [])]:
            if item.exists() and not item.is_symlink():
                os.utime(item, (two_hours_ago, two_hours_ago))


@pytest.fixture(scope="session")
def replay_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A capture bundle of real outputs the project ships: one 8x H100 RoCE host (examples/captures),
    so the lab tier runs on a plain clone too."""
    bundle = tmp_path_factory.mktemp("bundle")
    for source in sorted((REPO / "examples/captures/h100-roce-node").glob("*.txt")):
        shutil.copyfile(source, bundle / source.name)
    return bundle


def write_spec(directory: Path, name: str, count: int, bundle: Path) -> Path:
    spec = directory / f"{name}.yaml"
    spec.write_text(f"""\
name: {name}
provider: local
node_pools:
  - name: n
    instance_type: lab
    count: {count}
    image: debian_12
    capture: {bundle}
network:
  fabric: tcp
  mtu: 8500
  admin_cidr: 127.0.0.0/8
lifecycle:
  ttl: 2h
""")
    return spec
