"""Running gpuctl against hostile input, and counting what happened.

Each case runs the real CLI entry (`toolkit.cli.main`) in this process under a wall-clock bound (a
SIGALRM that raises `Hang`, a BaseException no handler of gpuctl's can swallow), with the cloud
credential variables set to canary values, its own GPUCTL_HOME and its own stdout/stderr. Afterwards:

- `internal`: exit 1 ("internal error", a bug) or an exception that escaped main;
- `hang`: the bound ran out;
- `leak`: a canary value in stdout, stderr (as the case's streams got them, and as the descriptors
  1 and 2 got them: a child process, or a write that bypasses gpuctl's cleaning stream), or any file
  under the case's GPUCTL_HOME;
- `actions`: what the surface's own probe recorded gpuctl doing to something it did not create
  (a lab link, a path, a process, a cloud instance), counted by the test that records them.

A `Tally` per surface keeps the counts; `tests/conftest.py` prints every tally at the end of the run,
and each corpus test asserts its own tally clean: 0 internal errors, 0 hangs, 0 actions, 0 leaks.
"""

from __future__ import annotations

import io
import os
import signal
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Values no real key has, so finding one anywhere is a leak and nothing else.
CANARIES: dict[str, str] = {
    "ALICLOUD_ACCESS_KEY": "LTAIcanaryAccessKey0001",
    "ALICLOUD_SECRET_KEY": "canary-alibaba-secret-6d1f0c",
    "TENCENTCLOUD_SECRET_ID": "AKIDcanarySecretId000000000000000001",
    "TENCENTCLOUD_SECRET_KEY": "canary-tencent-secret-93be27",
    "PULUMI_CONFIG_PASSPHRASE": "canary-passphrase-51aa90",
}
DEFAULT_TIMEOUT_S = 10.0
# Files larger than this under a case's home are read only this far for canaries (a 1 GB fixture
# is not the point; a canary is written near the start of whatever leaks it).
SCAN_BYTES = 4 * 1024 * 1024


class Hang(BaseException):
    """The case ran past its bound."""


@dataclass
class Outcome:
    label: str
    code: int | None  # None: an exception escaped main, or the case hung
    out: str
    err: str
    seconds: float
    hang: bool = False
    escaped: str | None = None  # the escaped exception's type and message
    leaks: list[str] = field(default_factory=list)
    raw: str = ""  # what reached the descriptors 1 and 2 directly (children, writes past sys.stdout)

    @property
    def internal(self) -> bool:
        return self.escaped is not None or self.code == 1 or "internal error" in self.err

    def problems(self) -> list[str]:
        found = []
        if self.internal:
            found.append(f"internal error (exit {self.code}; {self.escaped or self.err.strip()[-300:]})")
        if self.hang:
            found.append(f"hang (past {self.seconds:.1f} s)")
        found += [f"leak: {where}" for where in self.leaks]
        return found


@dataclass
class Tally:
    """The counts of one surface's corpus."""

    surface: str
    cases: int = 0
    codes: Counter[int | None] = field(default_factory=Counter)
    internal: int = 0
    hangs: int = 0
    leaks: int = 0
    actions: int = 0
    probed: bool = False  # whether any case of this surface looked for actions (`actions` given)
    failures: list[str] = field(default_factory=list)

    def record(self, outcome: Outcome, *, actions: Sequence[str] | None = None) -> Outcome:
        """Count one case; `actions`: what the surface's probe saw gpuctl do, None where it has no probe."""
        self.probed = self.probed or actions is not None
        actions = actions or ()
        self.cases += 1
        self.codes[outcome.code] += 1
        self.internal += outcome.internal
        self.hangs += outcome.hang
        self.leaks += bool(outcome.leaks)
        self.actions += len(actions)
        problems = outcome.problems() + [f"acted on {what}" for what in actions]
        if problems:
            self.failures.append(f"{outcome.label}: " + "; ".join(problems))
        return outcome

    def line(self) -> str:
        codes = ", ".join(f"exit {code}: {n}" for code, n in sorted(self.codes.items(), key=lambda kv: str(kv[0])))
        acted = self.actions if self.probed else "n/a (no probe for actions on this surface)"
        return (f"{self.surface}: {self.cases} cases ({codes}); internal errors {self.internal}, hangs {self.hangs}, "
                f"actions on what gpuctl did not create {acted}, leaks {self.leaks}")

    def assert_clean(self, *, minimum: int = 1) -> None:
        assert self.cases >= minimum, f"{self.surface}: only {self.cases} cases ran (at least {minimum} expected)"
        assert not self.failures, f"{self.line()}\n" + "\n".join(self.failures[:20])


# Every tally made in this run, printed by tests/conftest.py's terminal summary.
TALLIES: dict[str, Tally] = {}


def tally(surface: str) -> Tally:
    """The run's tally for `surface` (one per surface, shared by the tests that feed it)."""
    return TALLIES.setdefault(surface, Tally(surface))


@contextmanager
def environment(values: Mapping[str, str], drop: Sequence[str] = ()) -> Iterator[None]:
    saved = dict(os.environ)
    try:
        for name in drop:
            os.environ.pop(name, None)
        os.environ.update(values)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextmanager
def bounded(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise Hang()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_case(label: str, argv: Sequence[str], *, home: Path, env: Mapping[str, str] | None = None,
             drop: Sequence[str] = (), timeout: float = DEFAULT_TIMEOUT_S, stdin: str = "",
             scan: Sequence[Path] = ()) -> Outcome:
    """`gpuctl ARGV` with the canaries set, GPUCTL_HOME=`home` (unless `env` sets it), bounded.

    `scan`: more directories (besides the home) whose files must not carry a canary afterwards.
    """
    import sys
    import time

    from toolkit.cli import main

    out, err = io.StringIO(), io.StringIO()
    values = {name: value for name, value in {**CANARIES, "GPUCTL_HOME": str(home), **(env or {})}.items()
              if name not in drop}
    code: int | None = None
    escaped: str | None = None
    hang = False
    started = time.monotonic()
    saved_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    # Besides sys.stdout/sys.stderr (which gpuctl wraps in its own cleaning stream), the descriptors
    # 1 and 2 themselves: what a child process or a write that bypasses the stream prints lands there.
    with tempfile.TemporaryFile() as raw:
        saved_fds = (os.dup(1), os.dup(2))
        try:
            for stream in (sys.__stdout__, sys.__stderr__):
                if stream is not None:
                    stream.flush()
            os.dup2(raw.fileno(), 1)
            os.dup2(raw.fileno(), 2)
            with environment(values, drop), redirect_stdout(out), redirect_stderr(err), bounded(timeout):
                try:
                    code = main(list(argv))
                except SystemExit as exit_:
                    code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
        except Hang:
            hang = True
        except Exception as exc:  # what escaped main: a bug by definition
            escaped = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            sys.stdin = saved_stdin
            for fd, saved in zip((1, 2), saved_fds, strict=True):
                os.dup2(saved, fd)
                os.close(saved)
        raw.seek(0)
        direct = raw.read(SCAN_BYTES).decode(errors="replace")
    outcome = Outcome(label, code, out.getvalue(), err.getvalue(), time.monotonic() - started, hang, escaped,
                      raw=direct)
    outcome.leaks = find_leaks(outcome, [home, *scan])
    return outcome


def find_leaks(outcome: Outcome, directories: Sequence[Path]) -> list[str]:
    """Where a canary value turned up: stdout, stderr, or a file (by path)."""
    found: list[str] = []
    values = list(CANARIES.values())
    for name, text in (("stdout", outcome.out), ("stderr", outcome.err), ("descriptors 1/2", outcome.raw)):
        if any(value in text for value in values):
            found.append(name)
    needles = [value.encode() for value in values]
    for directory in directories:
        if not directory.is_dir():
            continue
        for root, _dirs, files in os.walk(directory, followlinks=False):
            for name in files:
                path = Path(root) / name
                if path.is_symlink() or not path.is_file():
                    continue
                try:
                    with path.open("rb") as handle:
                        data = handle.read(SCAN_BYTES)
                except OSError:
                    continue
                if any(needle in data for needle in needles):
                    found.append(str(path))
    return found
