"""Hostile capture directories (`node_pools[].capture`): `gpuctl validate SPEC`, then the copy into a
node root (`lab.replay.install`), counting every file read from outside the named directory.

Each case builds a capture path: system trees and homes, links (the bundle itself, files in it, a
component on the way), hard links, FIFOs, sockets, devices, huge and many files, deep trees, odd
names. A secret file outside every bundle holds a canary value, so a copy of it in a node is also a
leak. While the copy runs, every file opened for reading is recorded by inode (`os.open` and
`io.open` wrapped, fstat of what was opened); an action is a regular file read that is not one of
the named directory's own regular files, and, for a path the lab must refuse outright (a system
tree, a home, a folder of keys), any file read at all.
"""

from __future__ import annotations

import builtins
import io
import os
import shutil
import socket
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.hostile.harness import CANARIES, Outcome, bounded, find_leaks, run_case, tally
from toolkit.errors import GpuctlError
from toolkit.providers.lab import replay as lab_replay

SURFACE = "lab captures"
TOPO = REPO / "examples/captures/h100-roce-node/nvidia-smi-topo-m.txt"
SECRET = f"root:{CANARIES['ALICLOUD_SECRET_KEY']}:19000:0:99999:7:::\n"


def good_bundle(where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(TOPO, where / "nvidia-smi-topo-m.txt")
    return where


def with_entry(make: Callable[[Path, Path], None]) -> Callable[[Path], str]:
    """A good bundle plus one hostile entry made by `make(bundle, tmp)`."""
    def build(tmp: Path) -> str:
        bundle = good_bundle(tmp / "bundle")
        make(bundle, tmp)
        return str(bundle)
    return build


def link(target: str) -> Callable[[Path, Path], None]:
    return lambda bundle, tmp: (bundle / "evil.txt").symlink_to(target.replace("@", str(tmp)))


def fifo(bundle: Path, _tmp: Path) -> None:
    os.mkfifo(bundle / "pipe.txt")


def unix_socket(bundle: Path, _tmp: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(bundle / "sock.txt"))
    server.close()


def char_device(bundle: Path, _tmp: Path) -> None:
    needs_root()
    os.mknod(bundle / "zero.txt", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # what /dev/zero is


def block_device(bundle: Path, _tmp: Path) -> None:
    needs_root()
    os.mknod(bundle / "disk.txt", stat.S_IFBLK | 0o600, os.makedev(7, 0))  # a loop device's numbers


def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")


def hard_link(bundle: Path, tmp: Path) -> None:
    os.link(tmp / "secret", bundle / "shadow.txt")


def huge(bundle: Path, _tmp: Path) -> None:
    with open(bundle / "huge.txt", "wb") as handle:
        handle.truncate(5 * 1024**3)  # sparse: 5 GiB to a reader, nothing on disk


def large_total(bundle: Path, _tmp: Path) -> None:
    for i in range(9):  # 9 x 4 MiB, each within the per-file cap, 36 MiB in all
        with open(bundle / f"part{i}.txt", "wb") as handle:
            handle.truncate(4 * 1024 * 1024)


def many(bundle: Path, _tmp: Path) -> None:
    for i in range(300):
        (bundle / f"f{i:03}.txt").write_text("x\n")


def deep(bundle: Path, _tmp: Path) -> None:
    current = bundle
    for i in range(60):
        current = current / f"d{i}"
    current.mkdir(parents=True)
    (current / "secret.txt").write_text(SECRET)


def named(name: str) -> Callable[[Path, Path], None]:
    def make(bundle: Path, _tmp: Path) -> None:
        (bundle / name).write_text("x\n")
    return make


def dir_link_to(target: str) -> Callable[[Path], str]:
    def build(tmp: Path) -> str:
        (tmp / "bundle-link").symlink_to(target.replace("@", str(tmp)))
        return str(tmp / "bundle-link")
    return build


def link_to_good_bundle(tmp: Path) -> str:
    good_bundle(tmp / "real")
    return dir_link_to("@/real")(tmp)


def through_component(tmp: Path) -> str:
    (tmp / "etc-link").symlink_to("/etc")
    return str(tmp / "etc-link" / "ssh")


def special_bundle(kind: str) -> Callable[[Path], str]:
    def build(tmp: Path) -> str:
        path = tmp / "bundle"
        if kind == "file":
            path.write_text(TOPO.read_text())
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "absent":
            pass
        elif kind == "empty":
            path.mkdir()
        elif kind == "credentials folder":
            path = good_bundle(tmp / ".ssh" / "bundle")
        elif kind == "cluster ssh folder":
            path = good_bundle(tmp / "home" / "clusters" / "lab" / "ssh")
        elif kind == "gpuctl home":
            path = good_bundle(tmp / "home")
        return str(path)
    return build


def fixed(path: str) -> Callable[[Path], str]:
    return lambda _tmp: path


# (label, build -> the capture path, refused place: nothing in it may be read at all)
CASES: list[tuple[str, Callable[[Path], str], bool]] = [
    ("a good bundle", lambda tmp: str(good_bundle(tmp / "bundle")), False),
    ("the shipped example", fixed(str(REPO / "examples/captures/h100-roce-node")), False),
    *[(f"system {path}", fixed(path), True) for path in
      ("/", "/etc", "/etc/ssh", "/proc", "/proc/self/root", "/proc/1/cwd", "/sys/class/net", "/dev", "/boot",
       "/usr/bin", "/var/lib", "/run", "/root", "/home", "/tmp", "/var/tmp", "/root/.ssh")],
    ("home ~", fixed("~"), True),
    ("home ~root", fixed("~root"), True),
    ("the user's home", fixed(os.path.expanduser("~")), True),
    ("relative into /etc", lambda tmp: "../" * len(tmp.parts) + "etc", True),
    ("relative through ..", lambda tmp: str(tmp / "bundle" / ".." / ".." / ".." / ".." / "etc"), True),
    ("bundle is a link to /etc", dir_link_to("/etc"), True),
    ("bundle is a link to a good bundle", link_to_good_bundle, False),
    ("a component links to /etc", through_component, True),
    ("link to /etc/shadow", with_entry(link("/etc/shadow")), False),
    ("link to /etc/passwd", with_entry(link("/etc/passwd")), False),
    ("link to the secret", with_entry(link("@/secret")), False),
    ("relative link out", with_entry(link("../secret")), False),
    ("link to /dev/zero", with_entry(link("/dev/zero")), False),
    ("link to /proc/self/environ", with_entry(link("/proc/self/environ")), False),
    ("dangling link", with_entry(link("@/nothing-here")), False),
    ("link to a directory", with_entry(link("/etc")), False),
    ("hard link to the secret", with_entry(hard_link), False),
    ("fifo", with_entry(fifo), False),
    ("socket", with_entry(unix_socket), False),
    ("character device", with_entry(char_device), False),
    ("block device", with_entry(block_device), False),
    ("huge sparse file", with_entry(huge), False),
    ("36 MiB in all", with_entry(large_total), False),
    ("300 files", with_entry(many), False),
    ("deep tree", with_entry(deep), False),
    ("a sub-directory", with_entry(lambda bundle, _tmp: (bundle / "sub").mkdir()), False),
    ("name with a newline", with_entry(named("a\nb.txt")), False),
    ("name with an escape", with_entry(named("\x1b[31mred.txt")), False),
    ("name manifest.json", with_entry(named("manifest.json")), False),
    ("bundle is a file", special_bundle("file"), False),
    ("bundle is a fifo", special_bundle("fifo"), False),
    ("bundle absent", special_bundle("absent"), False),
    ("bundle empty", special_bundle("empty"), False),
    ("bundle in a .ssh folder", special_bundle("credentials folder"), True),
    ("bundle is a cluster's ssh folder", special_bundle("cluster ssh folder"), True),
    ("bundle is the gpuctl home", special_bundle("gpuctl home"), True),
]


def spec_file(directory: Path, capture: str) -> Path:
    quoted = '"' + capture.replace("\\", "\\\\").replace('"', '\\"') + '"'
    path = directory / "capture.yaml"
    path.write_text(f"""\
name: cap
provider: local
node_pools:
  - name: n
    instance_type: lab
    count: 1
    capture: {quoted}
network: {{fabric: tcp, admin_cidr: 127.0.0.0/8}}
lifecycle: {{ttl: 2h}}
""")
    return path


@contextmanager
def reads_recorded() -> Iterator[list[tuple[int, int, str]]]:
    """Every regular file opened for reading, as (st_dev, st_ino, what was asked for)."""
    seen: list[tuple[int, int, str]] = []
    real_os_open, real_io_open = os.open, io.open

    def note(fd: int, asked: Any, writing: bool) -> None:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and not writing:
            seen.append((info.st_dev, info.st_ino, str(asked)))

    def os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = real_os_open(path, flags, *args, **kwargs)
        note(fd, path, bool(flags & (os.O_WRONLY | os.O_RDWR)))
        return fd

    def io_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_io_open(file, mode, *args, **kwargs)
        if isinstance(file, (str, bytes, os.PathLike)):
            note(handle.fileno(), file, any(c in mode for c in "wax+"))
        return handle

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "open", os_open)
        patch.setattr(io, "open", io_open)
        patch.setattr(builtins, "open", io_open)
        yield seen


def own_files(capture: str, base: Path) -> set[tuple[int, int]]:
    """The inodes of the regular files directly inside the named directory (no link followed)."""
    path = Path(os.path.expanduser(capture))
    path = path if path.is_absolute() else base / path
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return set()
        entries = list(os.scandir(path))
    except OSError:
        return set()
    found = set()
    for entry in entries:
        info = entry.stat(follow_symlinks=False)
        if stat.S_ISREG(info.st_mode):
            found.add((info.st_dev, info.st_ino))
    return found


def copy(label: str, capture: str, base: Path, root: Path) -> tuple[Outcome, list[tuple[int, int, str]]]:
    """`install` as `up` calls it (with the spec's path resolved), bounded like a CLI case."""
    path = Path(os.path.expanduser(capture))
    path = path if path.is_absolute() else base / path
    code: int | None = 0
    escaped = err = None
    hang = False
    started = time.monotonic()
    with reads_recorded() as seen:
        try:
            with bounded(10.0):
                lab_replay.install(path, root)
        except GpuctlError as refused:
            code, err = refused.exit_code, str(refused)
        except Exception as exc:  # a bug by definition
            code, escaped = None, f"{type(exc).__name__}: {exc}"[:300]
        except BaseException:  # the bound ran out
            code, hang = None, True
    outcome = Outcome(f"{label}: copy", code, "", err or "", time.monotonic() - started, hang, escaped)
    outcome.leaks = find_leaks(outcome, [root])
    return outcome, seen


@pytest.mark.parametrize("label", [label for label, _, _ in CASES])
def test_hostile_capture(label: str, tmp_path: Path) -> None:
    build, refused_place = next((b, r) for name, b, r in CASES if name == label)
    (tmp_path / "secret").write_text(SECRET)
    home = tmp_path / "home"
    capture = build(tmp_path)
    validate = run_case(f"{label}: validate", ["validate", str(spec_file(tmp_path, capture))], home=home,
                        env={"GPUCTL_HOME": str(home)})
    root = tmp_path / "node-root"
    (root / "etc").mkdir(parents=True)
    allowed = set() if refused_place else own_files(capture, tmp_path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GPUCTL_HOME", str(home))
        copied, seen = copy(label, capture, tmp_path, root)
    actions = [f"read {asked}" for dev, ino, asked in seen if (dev, ino) not in allowed]
    tally(SURFACE).record(validate)
    tally(SURFACE).record(copied, actions=actions)
    problems = validate.problems() + copied.problems() + actions
    assert problems == [], f"{label}: {problems}\nvalidate: {validate.err[-400:]}\ncopy: {copied.err[-400:]}"
    # A path the lab must refuse outright is refused by both, before anything is read.
    if refused_place:
        assert validate.code in (3, 4), validate.err
        assert copied.code == 2, copied.err


def test_zz_lab_captures_corpus_is_clean() -> None:
    """Last in the module: the counts of every case above (each also asserted on its own) are 0."""
    tally(SURFACE).assert_clean(minimum=1)
