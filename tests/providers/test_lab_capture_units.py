"""A capture bundle is read only from inside the directory the spec names.

A capture path that is a system tree, a home, a folder of keys or a link is refused by `validate`;
the copy into a node reads only regular files inside the named directory (no link, FIFO or device),
copies only what the replay answers with, never widens a file's mode, and never writes through a
link the node made.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.hostile.harness import run_case
from tests.lab_specs import write_lab_spec
from toolkit.errors import ProviderError
from toolkit.files import FileError
from toolkit.providers.lab import replay as lab_replay

TOPO = REPO / "examples/captures/h100-roce-node/nvidia-smi-topo-m.txt"


def write_spec(directory: Path, capture: str | None = None) -> Path:
    return write_lab_spec(directory, capture=capture)


# ------------------------------------------------------------------------------ captures


@pytest.mark.parametrize(("capture", "named"), [
    ("/", "'/' is the root, whose files would be copied into every lab node"),
    ("/etc", "'/etc' lies in /etc, a tree of the system"),
    ("/etc/ssh", "'/etc/ssh' lies in /etc, a tree of the system"),
    ("/proc/self/root", "'/proc/self/root' lies in /proc, a tree of the system"),
    ("/sys", "'/sys' lies in /sys"),
    ("/dev", "'/dev' lies in /dev"),
    ("/root", "'/root' is a home, a shared or a system folder"),
    ("/home/someone", "'/home/someone' is a home, a shared or a system folder"),
    ("/tmp/../etc", "'/tmp/../etc' lies in /etc"),
    ('"~"', "'~' is a home"),  # quoted: a bare ~ is YAML's null
    ("/srv/backup/.ssh", "lies in a folder of credentials"),
])
def test_validate_refuses_a_capture_that_names_a_system_tree_or_a_home(
    home: Path, tmp_path: Path, capture: str, named: str,
) -> None:
    outcome = run_case("validate", ["validate", str(write_spec(tmp_path, capture))], home=home)
    assert outcome.code == 3, outcome.out + outcome.err
    assert named in outcome.err
    assert "node_pools.0.capture" in outcome.err or "node_pools[0].capture" in outcome.err


def test_validate_refuses_a_relative_capture_that_resolves_into_etc(home: Path, tmp_path: Path) -> None:
    depth = len(tmp_path.parts)
    outcome = run_case("validate", ["validate", str(write_spec(tmp_path, "../" * depth + "etc"))], home=home)
    assert outcome.code == 4, outcome.out + outcome.err
    assert "node_pools[0] (n).capture:" in outcome.err
    assert "lies in /etc, a tree of the system" in outcome.err


def bundle_with(tmp_path: Path, **extra: str) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "topo.txt").write_bytes(TOPO.read_bytes())
    for name, target in extra.items():
        (bundle / name).symlink_to(target)
    return bundle


def test_validate_and_the_copy_refuse_a_link_in_the_bundle_to_a_file_outside(home: Path, tmp_path: Path) -> None:
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$canary-hash:19000:0:99999:7:::\n")
    bundle = bundle_with(tmp_path, **{"shadow.txt": str(secret)})
    outcome = run_case("validate", ["validate", str(write_spec(tmp_path, str(bundle)))], home=home)
    assert outcome.code == 4
    assert f"{bundle}/shadow.txt: is a symbolic link; a capture bundle holds regular files only" in outcome.err
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(FileError, match="is a symbolic link; a capture bundle holds regular files only"):
        lab_replay.install(bundle, root)
    assert [p for p in root.rglob("*") if p.is_file() and "canary-hash" in p.read_text()] == []


def test_the_copy_refuses_a_bundle_that_is_a_link(tmp_path: Path, home: Path) -> None:
    real = bundle_with(tmp_path)
    link = tmp_path / "link-to-bundle"
    link.symlink_to(real)
    with pytest.raises(FileError, match="is a symbolic link, not a directory of capture files"):
        lab_replay.install(link, tmp_path / "root")


def test_the_copy_refuses_a_fifo_without_blocking(tmp_path: Path, home: Path) -> None:
    bundle = bundle_with(tmp_path)
    os.mkfifo(bundle / "pipe.txt")
    with pytest.raises(FileError, match=r"pipe.txt: is a named pipe \(FIFO\); a capture bundle holds regular files"):
        lab_replay.install(bundle, tmp_path / "root")


def test_the_copy_takes_only_answering_files_and_never_widens_their_mode(tmp_path: Path, home: Path) -> None:
    bundle = bundle_with(tmp_path)
    (bundle / "topo.txt").chmod(0o600)
    (bundle / "notes.txt").write_text("who ran it, and when\n")
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    assert lab_replay.install(bundle, root) == ["nvidia-smi"]
    replay = root / lab_replay.REPLAY_DIR
    assert sorted(p.name for p in replay.iterdir()) == ["manifest.json", "topo.txt"]
    assert stat.S_IMODE((replay / "topo.txt").stat().st_mode) == 0o600
    assert (replay / "topo.txt").read_bytes() == TOPO.read_bytes()


def test_the_copy_never_writes_through_a_link_the_node_made(tmp_path: Path, home: Path) -> None:
    bundle = bundle_with(tmp_path)
    outside = tmp_path / "host-dir"
    outside.mkdir()
    root = tmp_path / "root"
    (root / "usr/local").mkdir(parents=True)
    (root / "usr/local/share").symlink_to(outside)  # absolute: from the host it leads out of the node
    with pytest.raises(ProviderError, match=r"is not a directory .* gpuctl does not write into a lab node through it"):
        lab_replay.install(bundle, root)
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("capture", [
    "/usr/local/src/gpuctl/examples/captures/h100-roce-node",  # a checkout under /usr/local
    "/var/lib/jenkins/workspace/gpuctl/examples/captures/h100-roce-node",  # a CI workspace
    "/opt/gpuctl/examples/captures/h100-roce-node",
    "/home/someone/captures/h100",
    "/root/work/captures/h100",
    "captures/h100-roce-node",
    "../captures/h100-roce-node",  # resolved against the spec's folder, then checked on disk
])
def test_capture_paths_where_bundles_live_are_accepted_as_written(capture: str) -> None:
    from toolkit.spec.models import capture_path_problem

    assert capture_path_problem(capture) is None
