"""Hostile logs and captures through `check-log`, `detect` and `tune` (surface "logs and captures").

Two kinds of case, each through the real CLI (`run_case`) and counted: 0 internal errors, 0 hangs,
0 leaks, 0 actions, where an action is gpuctl reading through a link out of a bundle (a marker
only the outside file holds shows up in what it printed) or changing any file of the case (these
commands write nothing).

- Mutations of the real captures (tests/captures, tests/topology/captures, examples/captures and
  ../shared/fixtures when present): cut at a random byte, a line of NULs, ANSI colour on every
  line, a number of 5,000 digits, lines doubled, shuffled or dropped, random bytes overwritten, a
  100 KB line of one repeated piece (a pattern that starts over at every character is quadratic),
  XML and JSON nested 5,000 deep;
  a third of them per file, each through one of the three commands. Seeded: the same on every run.
- Files no real capture is: binary junk, one 50 MB line, 1 MB lines, NULs, terminal escapes,
  credentials, a 5 GiB sparse file, a FIFO, /dev/zero, a directory of 3,000 files, a gather bundle
  whose members are links out of it (to a file, a FIFO, /dev/zero, a directory), FIFOs inside it.
"""

from __future__ import annotations

import gzip
import os
import random
import re
from collections.abc import Callable
from pathlib import Path

from tests.conftest import REPO, SHARED_FIXTURES
from tests.hostile.harness import CANARIES, Outcome, run_case, tally

SURFACE = "logs and captures"
SEED = 20
COMMANDS = ("check-log", "detect", "tune")
# Only the file outside the bundle holds this: printed, it was read through a link.
OUTSIDE_MARKER = "outside-the-bundle-7f3a"
PLAIN_SECRET = "plainLogSecret99"
TOPO = REPO / "tests" / "captures" / "topo" / "h20-8gpu-8nic-pix-nic-legend-starts-mlx5_1-sglang-env.txt"
IBSTAT = REPO / "tests" / "captures" / "rdma" / "ibstat-cx4lx-25g-eth-plus-cx6-200g-ib-2-ports-down.txt"
IP_ADDR = REPO / "tests" / "topology" / "captures" / "host-ip-j-addr.json.txt"
MIXED = REPO / "tests" / "captures" / "mixed" / "h20-vm-2node-2gpu-alltoall-tencent-plugin-roce-bond-nccl2.26.5.txt"


def _real_captures() -> list[Path]:
    roots = [REPO / "tests" / "captures", REPO / "tests" / "topology" / "captures", REPO / "examples" / "captures"]
    if SHARED_FIXTURES.is_dir():
        roots.append(SHARED_FIXTURES)
    return sorted(p for root in roots for p in root.rglob("*.txt") if p.is_file() and p.name != "README.md")


# What a 100 KB line is made of: each is a way a pattern that repeats could start over at every character.
FILLS = ("x", "a:1:", "1 ", " ", "[a", "# ", "-", "\tx", "1.", "u@h ", "<a ", "k=v,", "nccl", "$ ",
         # blank lines (a pattern whose \s also matches newlines), a sysfs path, GID and rank prefixes
         " \n", "/sys/class/infiniband/x/ports/1/gids/", "GID[ 1]: ", "[0]")


def _mutations(text: str, rng: random.Random) -> list[tuple[str, bytes]]:
    lines = text.splitlines(keepends=True) or [text]
    at = rng.randrange(len(lines))
    fill = rng.choice(FILLS)
    raw = bytearray(text.encode())
    for _ in range(20):
        raw[rng.randrange(len(raw))] = rng.randrange(256)
    return [
        ("cut", text.encode()[: rng.randrange(1, max(2, len(text)))]),
        ("NUL line", "".join([*lines[:at], "\x00" * 64 + "\n", *lines[at:]]).encode()),
        ("ANSI", "".join(f"\x1b[1;31m{line.rstrip()}\x1b[0m\n" for line in lines).encode()),
        ("5000 digits", re.sub(r"\d+", lambda m: "9" * 5000 if rng.random() < 0.05 else m.group(), text).encode()),
        ("doubled", "".join(line * 2 for line in lines).encode()),
        ("shuffled", "".join(rng.sample(lines, len(lines))).encode()),
        ("dropped", "".join(line for line in lines if rng.random() < 0.7).encode()),
        ("bytes", bytes(raw)),
        # Balanced, so a parser that closes what it reads still builds the whole depth (a recursive walk of it).
        ("XML nested 5000 deep", "".join([*lines[:at], "<pci>" * 5000 + "</pci>" * 5000 + "\n", *lines[at:]]).encode()),
        ("JSON nested 5000 deep", "".join([*lines[:at], "[" * 5000 + "]" * 5000 + "\n", *lines[at:]]).encode()),
        (f"a 100 KB line of {fill!r}",
         "".join([*lines[:at], fill * (100_000 // len(fill)) + "\n", *lines[at:]]).encode()),
    ]


class Corpus:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.count = 0  # cases run
        self.dirs = 0
        self.failures: list[str] = []

    def case(self) -> Path:
        self.dirs += 1
        case = self.root / f"case{self.dirs}"
        (case / "outside").mkdir(parents=True)
        (case / "outside" / "secret.txt").write_text(f"{OUTSIDE_MARKER}\n")
        return case

    def run(self, label: str, argv: list[str], case: Path, *, timeout: float = 10.0) -> Outcome:
        self.count += 1
        before = _snapshot(case)
        outcome = run_case(label, argv, home=case / "home", timeout=timeout)
        actions = [f"{name} changed" for name in _changed(before, _snapshot(case))]
        if OUTSIDE_MARKER in outcome.out + outcome.err:
            actions.append("read a file outside the bundle through a link")
        tally(SURFACE).record(outcome, actions=actions)
        problems = outcome.problems() + [f"acted: {a}" for a in actions]
        if PLAIN_SECRET in outcome.out + outcome.err:
            problems.append("printed a credential")
        if problems:
            self.failures.append(f"{label}: " + "; ".join(problems))
        return outcome

    def each_command(self, label: str, path: Path, case: Path, *, timeout: float = 10.0) -> list[int | None]:
        codes = []
        for command in COMMANDS:
            argv = [command, str(path)] if command != "check-log" else [command, "--json", str(path)]
            codes.append(self.run(f"{command} {label}", argv, case, timeout=timeout).code)
        return codes


def _snapshot(case: Path) -> dict[str, tuple[int, int, float]]:
    found = {}
    for root, dirs, files in os.walk(case, followlinks=False):
        if Path(root) == case / "home":
            dirs[:] = []
            continue
        for name in dirs + files:
            info = os.lstat(Path(root) / name)
            found[str(Path(root, name).relative_to(case))] = (info.st_mode, info.st_size, info.st_mtime)
    return found


def _changed(before: dict[str, tuple[int, int, float]], after: dict[str, tuple[int, int, float]]) -> list[str]:
    return [name for name in sorted(set(before) | set(after))
            if before.get(name) != after.get(name) and not name.startswith("home")]


def _sparse(path: Path, size: int) -> None:
    path.write_bytes(b"G")
    os.truncate(path, size)


def _bundle(case: Path) -> Path:
    """A gather bundle from real captures: MANIFEST, topo matrix, ibstat, ip -j addr, a GID table copy."""
    bundle = case / "bundle"
    bundle.mkdir()
    (bundle / "MANIFEST").write_text(
        "# gpuctl gather manifest\nformat: 1\nnvidia-smi-topo-m.txt\t0\tnvidia-smi topo -m\n"
        "ibstat.txt\t0\tibstat\nip-addr.json\t0\tip -j addr\n"
        "sys-class-infiniband\t0\tcopy non-zero /sys/class/infiniband/*/ports/*/gids (1)\n")
    (bundle / "nvidia-smi-topo-m.txt").write_text(TOPO.read_text())
    (bundle / "ibstat.txt").write_text(IBSTAT.read_text())
    (bundle / "ip-addr.json").write_text(IP_ADDR.read_text().split("\n", 1)[1])
    (bundle / "hostname.txt").write_text("node-a\n")
    port = bundle / "sys-class-infiniband" / "mlx5_0" / "ports" / "1"
    for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
        (port / sub).mkdir(parents=True)
    (port / "link_layer").write_text("Ethernet\n")
    (port / "gids" / "3").write_text("0000:0000:0000:0000:0000:ffff:0a63:5b27\n")
    (port / "gid_attrs" / "types" / "3").write_text("RoCE v2\n")
    (port / "gid_attrs" / "ndevs" / "3").write_text("ens108np0\n")
    return bundle


# ------------------------------------------------------------------------------------------ cases


def test_mutated_real_captures(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path)
    rng = random.Random(SEED)
    captures = _real_captures()
    assert len(captures) >= 40
    for number, capture in enumerate(captures):
        text = capture.read_text(encoding="utf-8", errors="replace")
        for which, (name, data) in enumerate(_mutations(text, rng)):
            if (number + which) % 3:  # a third of the mutations of each file, each through one command
                continue
            case = corpus.case()
            path = case / capture.name
            path.write_bytes(data)
            command = COMMANDS[(number + which) % len(COMMANDS)]
            argv = [command, str(path)] + (["--json"] if command == "check-log" and which % 2 else [])
            corpus.run(f"{command} {name} {capture.name}", argv, case)
    assert corpus.count >= 100
    assert not corpus.failures, "\n".join(corpus.failures[:20])


def test_files_no_capture_is(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path)
    rng = random.Random(SEED)
    real_log = MIXED.read_text()

    def file_case(label: str, make: Callable[[Path], object], *, expect: int | None = None) -> None:
        case = corpus.case()
        path = case / "input.txt"
        make(path)
        codes = corpus.each_command(label, path, case)
        if expect is not None:
            assert codes == [expect] * 3, f"{label}: exits {codes}, expected {expect} from each command"

    file_case("binary junk", lambda p: p.write_bytes(rng.randbytes(65536)), expect=5)
    file_case("a gzip bomb (read as bytes)", lambda p: p.write_bytes(gzip.compress(b"\0" * (64 << 20))), expect=5)
    file_case("1 MB of NUL", lambda p: p.write_bytes(b"\0" * (1 << 20)), expect=5)
    file_case("empty", lambda p: p.write_bytes(b""))
    file_case("five 1 MB lines in a real log",
              lambda p: p.write_text(real_log.replace("\n", "\n" + "x" * (1 << 20) + "\n", 5)))
    file_case("terminal escapes on every line",
              lambda p: p.write_text("".join(f"\x1b]0;retitled\x07\x1b[2J\x1b[31m{line}\u202e\n"
                                             for line in real_log.splitlines())))
    file_case("credentials in a real log", lambda p: p.write_text(
        real_log + "".join(f"node-a:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to {value}\n"
                           for value in CANARIES.values())
        + f"node-a:1:1 [0] NCCL WARN TENCENTCLOUD_SECRET_KEY={PLAIN_SECRET} LTAI5tAbCdEfGhIjKlMnOp\n"))
    file_case("UTF-16", lambda p: p.write_bytes(real_log.encode("utf-16")))
    file_case("a 5 GiB sparse file", lambda p: _sparse(p, 5 << 30), expect=2)
    file_case("a FIFO", lambda p: os.mkfifo(p), expect=2)
    file_case("a link to /dev/zero", lambda p: p.symlink_to("/dev/zero"), expect=2)
    file_case("a link to /dev/null", lambda p: p.symlink_to("/dev/null"), expect=2)
    file_case("a link loop", lambda p: p.symlink_to(p), expect=2)
    file_case("a directory", lambda p: p.mkdir(), expect=None)
    # One 50 MB line: a log (check-log reads up to 256 MiB), and far past a capture's 32 MiB.
    case = corpus.case()
    line = case / "line.txt"
    line.write_bytes(b"a" * 50_000_000 + b"\n")
    assert corpus.run("check-log one 50 MB line", ["check-log", str(line)], case, timeout=20).code == 5
    assert corpus.run("detect one 50 MB line", ["detect", str(line)], case).code == 2
    # A directory of 3,000 files.
    case = corpus.case()
    many = case / "many"
    many.mkdir()
    for n in range(3000):
        (many / f"capture-{n}.txt").write_text("x\n")
    assert corpus.run("detect 3000 files", ["detect", str(many)], case).code == 2
    assert corpus.run("tune 3000 files", ["tune", str(many)], case).code == 2
    assert corpus.run("check-log --topology 3000 files", ["check-log", "--topology", str(many), str(MIXED)],
                      case).code == 2
    assert corpus.count >= 40
    assert not corpus.failures, "\n".join(corpus.failures[:20])


def test_bundles_with_links_and_fifos(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path)

    def swap(member: str, make: Callable[[Path, Path], object]) -> Callable[[Path, Path], None]:
        def prepare(bundle: Path, case: Path) -> None:
            path = bundle / member
            if path.is_dir() and not path.is_symlink():
                import shutil

                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
            make(path, case)
        return prepare

    def outside_topo(path: Path, case: Path) -> None:
        (case / "outside" / "topo.txt").write_text(TOPO.read_text() + OUTSIDE_MARKER)
        path.symlink_to(case / "outside" / "topo.txt")

    gid = "sys-class-infiniband/mlx5_0/ports/1/gids/3"
    cases: dict[str, Callable[[Path, Path], None]] = {
        "hostname.txt links out": swap("hostname.txt", lambda p, c: p.symlink_to(c / "outside" / "secret.txt")),
        "the topo matrix links out": swap("nvidia-smi-topo-m.txt", outside_topo),
        "MANIFEST links out": swap("MANIFEST", lambda p, c: p.symlink_to(c / "outside" / "secret.txt")),
        "ibstat.txt links to /dev/zero": swap("ibstat.txt", lambda p, c: p.symlink_to("/dev/zero")),
        "ibstat.txt is a FIFO": swap("ibstat.txt", lambda p, c: os.mkfifo(p)),
        "MANIFEST is a FIFO": swap("MANIFEST", lambda p, c: os.mkfifo(p)),
        "hostname.txt is a FIFO": swap("hostname.txt", lambda p, c: os.mkfifo(p)),
        "ibstat.txt.stderr is a FIFO": swap("ibstat.txt.stderr", lambda p, c: os.mkfifo(p)),
        "a GID file is a FIFO": swap(gid, lambda p, c: os.mkfifo(p)),
        "a GID file links out": swap(gid, lambda p, c: p.symlink_to(c / "outside" / "secret.txt")),
        "a GID file is 1 MB": swap(gid, lambda p, c: p.write_text("0" * (1 << 20))),
        "the GID copy links out": swap("sys-class-infiniband", lambda p, c: p.symlink_to(c / "outside")),
        "gid_attrs links out": swap("sys-class-infiniband/mlx5_0/ports/1/gid_attrs",
                                    lambda p, c: p.symlink_to(c / "outside")),
        "a device links out": swap("sys-class-infiniband/mlx5_0", lambda p, c: p.symlink_to(c / "outside")),
        "the topo matrix is 40 MiB sparse": swap("nvidia-smi-topo-m.txt", lambda p, c: _sparse(p, 40 << 20)),
    }
    for name, prepare in cases.items():
        case = corpus.case()
        bundle = _bundle(case)
        prepare(bundle, case)
        codes = [corpus.run(f"{command} {name}", [command, str(bundle)], case).code for command in ("detect", "tune")]
        codes.append(corpus.run(f"check-log --topology {name}", ["check-log", "--topology", str(bundle), str(MIXED)],
                                case).code)
        assert codes == [2, 2, 2], f"{name}: exits {codes}, expected a refusal (2) from each command"
    # The bundle as built reads (the cases above differ from it in one member each); a GID that is
    # not UTF-8 is not a GID (exit 5).
    case = corpus.case()
    assert corpus.run("detect the bundle", ["detect", str(_bundle(case))], case).code == 0
    case = corpus.case()
    bundle = _bundle(case)
    (bundle / gid).write_bytes(b"\xff\xfe\x00")
    assert corpus.run("detect a GID not UTF-8", ["detect", str(bundle)], case).code == 5
    # A folder of pasted captures with a link among them.
    case = corpus.case()
    folder = case / "pasted"
    folder.mkdir()
    (folder / "topo.txt").write_text(TOPO.read_text())
    (folder / "ibstat.txt").symlink_to(case / "outside" / "secret.txt")
    assert corpus.run("detect a pasted folder with a link", ["detect", str(folder)], case).code == 2
    assert corpus.count >= 45
    assert not corpus.failures, "\n".join(corpus.failures[:20])


def test_the_surface_is_clean() -> None:
    counts = tally(SURFACE)
    assert counts.internal == counts.hangs == counts.leaks == counts.actions == 0, counts.line()
