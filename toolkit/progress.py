"""How long-running library code reports progress: one step per line, flushed at once.

Library code calls `progress(line)` (it is the ProgressCallback handed to providers and configure).
Where and how the line appears is decided once per command by `setup()`, which the CLI calls:

* stdout (stderr under --json) is a terminal: each step is printed with the time since the command started, and a
  spinner under the last one shows how long the current step has run so far (rich, imported only
  then, so `gpuctl --help` and plain runs never load it);
* stdout is not a terminal (CI logs, pipes, files): plain lines, each prefixed `HH:MM:SS`;
* `--quiet`: no progress at all (commands still print errors and their final summary);
* `--json`: progress goes to stderr, so stdout carries the JSON document and nothing else.

`NO_COLOR` (https://no-color.org) set to anything non-empty turns colour off. Every line is
cleaned first (`toolkit.output.clean`: credentials redacted, terminal escapes neutralised): progress
lines carry tool output, node names and cloud answers.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import IO, Any

from toolkit import output


class _Reporter:
    def __init__(self) -> None:
        self.quiet = False
        self.stream: IO[str] | None = None  # None: whatever sys.stdout is at the time of the call
        self.interactive = False
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.live: _LiveSteps | None = None

    def out(self) -> IO[str]:
        return self.stream if self.stream is not None else sys.stdout


_reporter = _Reporter()


def no_color() -> bool:
    return bool(os.environ.get("NO_COLOR"))


def setup(*, quiet: bool = False, to_stderr: bool = False, interactive: bool | None = None) -> None:
    """Decide how this command's progress is shown (see the module docstring).

    `interactive` forces the terminal form on or off; by default it is on when the stream the
    lines go to (stdout, or stderr with `to_stderr`) is a terminal and TERM is not "dumb". With
    `to_stderr` (--json) the spinner is never used: stdout must stay free for the document, and a
    live display on the same terminal would garble it.
    """
    finish()
    _reporter.quiet = quiet
    _reporter.stream = sys.stderr if to_stderr else None
    if interactive is None:
        interactive = _isatty(sys.stderr if to_stderr else sys.stdout) and os.environ.get("TERM") != "dumb"
    _reporter.interactive = interactive
    _reporter.started = time.monotonic()


def progress(line: str) -> None:
    """Report one step (cleaned: lines can carry tool output)."""
    if _reporter.quiet:
        return
    text = output.clean(line)
    with _reporter.lock:
        if not _reporter.interactive:
            stamp = time.strftime("%H:%M:%S")
            out = _reporter.out()
            out.write("".join(f"{stamp} {part}\n" for part in text.split("\n")))
            out.flush()
            return
        elapsed = time.monotonic() - _reporter.started
        if _reporter.stream is not None:  # --json on a terminal: stepped lines on stderr, no spinner
            _reporter.stream.write(f"{format_elapsed(elapsed):>7} {text}\n")
            _reporter.stream.flush()
            return
        if _reporter.live is None:
            _reporter.live = _LiveSteps(_reporter.out(), _reporter.started)
        _reporter.live.step(text, elapsed)


def finish() -> None:
    """Stop the spinner (if any) and go back to the defaults; the CLI calls it when a command ends."""
    with _reporter.lock:
        live, _reporter.live = _reporter.live, None
    if live is not None:
        live.stop()
    _reporter.quiet = False
    _reporter.stream = None
    _reporter.interactive = False


def format_elapsed(seconds: float) -> str:
    """`4.2s` under a minute, `1m05s` under an hour, `2h03m` beyond."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class _LiveSteps:
    """The terminal form: each step as a line with the time since the start, and under the last
    one a spinner with that step's own running time. rich is imported here, on first use only."""

    def __init__(self, stream: IO[str], started: float) -> None:
        from rich.console import Console
        from rich.live import Live
        from rich.spinner import Spinner

        # rich writes its own escapes (spinner, colours): it gets the stream under the cleaning one, and
        # only text that progress() already cleaned.
        self.console = Console(file=output.underlying(stream), no_color=no_color(), highlight=False, markup=False,
                               emoji=False)
        self.started = started
        self.current = ""
        self.current_since = time.monotonic()
        self.spinner = Spinner("dots", style="cyan")
        # Live redraws by calling __rich__ below, so the running time counts up on its own. Plain
        # print() calls of the command while it runs are shown above the spinner: the cleaning streams
        # hand their (cleaned) lines to `above` instead of rich's own redirection, which would bypass them.
        self.live = Live(self, console=self.console, refresh_per_second=8, transient=True,
                         redirect_stdout=False, redirect_stderr=False)

    def step(self, text: str, elapsed: float) -> None:
        from rich.text import Text

        self.current = text.split("\n")[-1]
        self.current_since = time.monotonic()
        line = Text()
        line.append(f"{format_elapsed(elapsed):>7} ", style="dim")
        line.append(text)
        self.console.print(line, soft_wrap=True)
        if not self.live.is_started:
            self.live.start()
            for stream in output.streams():
                stream.sink = self.above

    def above(self, text: str) -> None:
        """A line printed while the spinner runs: shown above it."""
        from rich.text import Text

        self.console.print(Text(text), soft_wrap=True)

    def __rich__(self) -> Any:
        from rich.text import Text

        running = format_elapsed(time.monotonic() - self.current_since)
        label = Text(f"{self.current} ", no_wrap=True, overflow="ellipsis")
        label.append(f"({running})", style="dim")
        self.spinner.update(text=label)
        return self.spinner

    def stop(self) -> None:
        for stream in output.streams():
            if stream.sink == self.above:
                stream.flush()  # a last line without its newline, still above the spinner
                stream.sink = None
        self.live.stop()
