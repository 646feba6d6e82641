"""Files in the gpuctl home as hostile input: a link, a FIFO, a directory or a file planted where
gpuctl keeps one of its own files, before a command that reads or writes it.

gpuctl often runs as root. A link at the lock's path once had it truncate the file the link named;
a FIFO as the price cache hung `plan` forever. Every case here plants one thing, runs one command,
and checks that the victim outside the home is untouched (content, and no new entry in a victim
directory), besides the harness' checks (no internal error, no hang, no leak).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile.harness import run_case, tally
from tests.hostile.lab_fake import FakeHost
from tests.hostile.test_environment import CLUSTER, TAG, lab_spec
from toolkit.errors import EXIT_USAGE
from toolkit.files import FileError, append_private, open_private, write_atomic
from toolkit.lock import cluster_lock

VICTIM_TEXT = "root:x:0:0:the victim's own line\n"

# Where gpuctl keeps a file (or a directory) of its own, relative to the home, and who uses it.
PLACES = {
    "locks/{c}.lock": ["down"],
    "locks": ["down"],
    "prices.json": ["plan", "choose"],
    "exchange_rate.json": ["plan"],
    "clusters": ["down", "status"],
    "clusters/{c}": ["down", "status"],
    "clusters/{c}/lab-state.json": ["down", "status"],
    "clusters/{c}/ssh": ["down"],
    "damaged": ["down"],
}
KINDS = ("link to a file", "link to a directory", "dangling link", "fifo", "directory", "file")


def plant(home: Path, place: str, kind: str, victims: Path) -> Path:
    target = home / place.format(c=CLUSTER)
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if kind == "link to a file":
        target.symlink_to(victims / "victim-file")
    elif kind == "link to a directory":
        target.symlink_to(victims / "victim-dir")
    elif kind == "dangling link":
        target.symlink_to(victims / "victim-dir" / "not-there")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    else:
        target.write_text("{ not what gpuctl wrote\n")
    return target


def argv_of(command: str, spec: Path) -> list[str]:
    if command == "choose":
        return ["choose", "--gpu-memory", "80", "--gpus", "16", "--hours", "10"]
    return [command, str(spec)]


def test_planted_files_never_redirect_gpuctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = lab_spec(tmp_path)
    victims = tmp_path / "victims"
    surface = tally("home files")
    number = 0
    for place, users in PLACES.items():
        for kind in KINDS:
            for command in users:
                number += 1
                home = tmp_path / "homes" / str(number)
                (victims / "victim-dir").mkdir(parents=True, exist_ok=True)
                (victims / "victim-file").write_text(VICTIM_TEXT)
                plant(home, place, kind, victims)
                if place == "clusters" and kind == "link to a directory":
                    # What a lab's down would remove, had it followed the link.
                    (victims / "victim-dir" / CLUSTER / "nodes" / "n0").mkdir(parents=True)
                    (victims / "victim-dir" / CLUSTER / "nodes" / "n0" / "data").write_text(VICTIM_TEXT)
                host = FakeHost(CLUSTER, TAG, home)  # the lab's host, fake: the unit tier never touches this one
                with host.installed(monkeypatch):
                    outcome = run_case(f"{kind} at {place}: gpuctl {command}", argv_of(command, spec), home=home,
                                       timeout=30)
                acted = host.foreign()
                if (victims / "victim-file").read_text() != VICTIM_TEXT:
                    acted.append("the victim file outside the home was changed")
                planted = victims / "victim-dir" / CLUSTER / "nodes" / "n0" / "data"
                if place == "clusters" and kind == "link to a directory":
                    if not planted.is_file() or planted.read_text() != VICTIM_TEXT:
                        acted.append("removed a directory outside the home, reached through a link")
                    shutil.rmtree(victims / "victim-dir" / CLUSTER, ignore_errors=True)
                if any((victims / "victim-dir").iterdir()):
                    acted.append(f"wrote into the victim directory: {sorted(os.listdir(victims / 'victim-dir'))}")
                surface.record(outcome, actions=acted)
                shutil.rmtree(victims / "victim-dir")
    surface.assert_clean(minimum=sum(len(users) for users in PLACES.values()) * len(KINDS))


def test_the_lock_never_truncates_what_a_link_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    victim = tmp_path / "passwd"
    victim.write_text(VICTIM_TEXT)
    (tmp_path / "home" / "locks").mkdir(parents=True)
    (tmp_path / "home" / "locks" / "lab.lock").symlink_to(victim)
    with pytest.raises(FileError) as refused, cluster_lock("lab", "down"):
        pass
    assert victim.read_text() == VICTIM_TEXT
    assert refused.value.exit_code == EXIT_USAGE
    assert str(refused.value) == (f"{tmp_path}/home/locks/lab.lock: is a symbolic link, where gpuctl keeps a "
                                  "regular file of its own")


def test_a_directory_of_gpuctl_that_is_a_link_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "locks").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileError) as refused, cluster_lock("lab", "down"):
        pass
    assert str(refused.value).startswith(f"{tmp_path}/home/locks: is a symbolic link, where gpuctl keeps a "
                                         "directory of its own")
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_atomic_writes_replace_a_link_and_never_follow_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text(VICTIM_TEXT)
    (tmp_path / "state.json").symlink_to(victim)
    write_atomic(tmp_path / "state.json", "{}\n")
    assert victim.read_text() == VICTIM_TEXT
    assert not (tmp_path / "state.json").is_symlink()
    assert (tmp_path / "state.json").read_text() == "{}\n"
    assert (tmp_path / "state.json").stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json", "victim"]  # no temporary file left


def test_appends_and_opens_refuse_what_is_not_a_regular_file_of_ours(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(FileError, match="is a named pipe"):
        append_private(tmp_path / "fifo", "line\n")
    (tmp_path / "dir").mkdir()
    with pytest.raises(FileError, match="is a directory, where gpuctl keeps a regular file of its own"):
        open_private(tmp_path / "dir", os.O_RDWR)
    if os.geteuid() == 0:  # a file of another user's: only root can make one here
        other = tmp_path / "other"
        other.write_text("x\n")
        os.chown(other, 65534, 65534)
        with pytest.raises(FileError, match="belongs to uid 65534"):
            append_private(other, "line\n")
        assert other.read_text() == "x\n"


def fill(path: Path) -> None:
    """Write to `path` until the file system says it is full."""
    with path.open("wb", buffering=0) as handle, contextlib.suppress(OSError):
        while True:
            handle.write(b"x" * 4096)


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs (root only: it is a mount); the test fills it."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "full"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], check=False).returncode:
        pytest.skip("this machine does not let tests mount a tmpfs")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_a_clean_refusal(full_disk: Path) -> None:
    (full_disk / "clusters").mkdir()  # a directory entry fits; a file's data no longer does
    fill(full_disk / "filler")
    with pytest.raises(FileError) as refused:
        write_atomic(full_disk / "clusters" / "state.json", "{}\n" * 10_000)
    assert str(refused.value) == f"{full_disk}/clusters/state.json: cannot be written (No space left on device)"
    assert sorted(p.name for p in (full_disk / "clusters").iterdir()) == []  # the temporary file is gone


def test_a_command_on_a_full_home_exits_cleanly(full_disk: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`down` of a lab whose state is recorded must write the state (phase removing) first: the disk
    refuses it, and down says so, before it touches anything."""
    from toolkit.providers.lab import state as lab_state
    from toolkit.spec.loader import load_spec

    spec = lab_spec(tmp_path)
    monkeypatch.setenv("GPUCTL_HOME", str(full_disk))
    lab_state.save(lab_state.plan(load_spec(spec)))
    fill(full_disk / "filler")
    host = FakeHost(CLUSTER, TAG, full_disk)
    with host.installed(monkeypatch):
        outcome = run_case("full home: gpuctl down", ["down", str(spec)], home=full_disk)
    # Refused before it touched anything: the only removal is of its own half-written temporary file.
    assert [kind for kind, target in host.actions if not target.endswith(".tmp")] == []
    assert not outcome.problems(), outcome.problems()
    assert outcome.code == EXIT_USAGE, outcome.err
    assert "No space left on device" in outcome.err
