"""One output path: everything gpuctl prints passes through `clean` on its way out.

`install()` (the CLI calls it around every command) puts a `CleanStream` in front of sys.stdout and
sys.stderr, so a print anywhere -- a command's table, a JSON document, a library's warning, an error,
a progress line -- is cleaned the same way, and no command can forget:

- credentials are redacted (`toolkit.secrets.redact`: the environment's values and well-known forms);
- characters that steer a terminal or hide text are neutralised: C0 controls but tab and newline, DEL,
  C1 controls, bidirectional overrides and isolates, and the Unicode line and paragraph separators are
  written as `\\uXXXX`, so a tag, a cached price source, a state file or a log line can never move the
  cursor, retitle the window, recolour the screen or reorder what the user reads. The same six
  characters are a valid escape inside a JSON string, so a document stays valid JSON.

The terminal's own escapes (rich's spinner and colours) are written to the stream underneath
(`CleanStream.target`), after their text was cleaned by `clean`.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import IO, TextIO

from toolkit.characters import escape_controls
from toolkit.secrets import redact


def neutralise(text: str) -> str:
    """`text` with every steering character written as `\\uXXXX` (a CR LF pair becomes a newline)."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return escape_controls(text, keep="\t\n")  # the one rule: toolkit/characters.py


def clean(text: str) -> str:
    """What may be printed of `text`: redacted, then neutralised."""
    return neutralise(redact(text))


class CleanStream(io.TextIOBase):
    """A text stream that cleans every write before it reaches `target`."""

    def __init__(self, target: TextIO) -> None:
        super().__init__()
        self.target = target
        # While a live display owns the terminal (toolkit.progress), whole lines go to it instead.
        self.sink: Callable[[str], None] | None = None
        self._pending = ""

    def write(self, text: str) -> int:
        cleaned = clean(text)
        if self.sink is not None:
            self._pending += cleaned
            *lines, self._pending = self._pending.split("\n")
            for line in lines:
                self.sink(line)
            return len(text)
        encoding = getattr(self.target, "encoding", None) or "utf-8"
        if encoding.lower().replace("-", "") != "utf8":
            # A terminal that cannot show a character gets its escape, never an exception.
            cleaned = cleaned.encode(encoding, "backslashreplace").decode(encoding)
        self.target.write(cleaned)
        return len(text)

    def flush(self) -> None:
        if self.sink is not None and self._pending:
            self.sink(self._pending)
            self._pending = ""
        self.target.flush()

    def isatty(self) -> bool:
        try:
            return bool(self.target.isatty())
        except (AttributeError, ValueError):
            return False

    def fileno(self) -> int:
        return self.target.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.target, "encoding", None) or "utf-8"


def underlying(stream: IO[str]) -> IO[str]:
    """The stream under a CleanStream (for writers that send their own escapes), else `stream`."""
    return stream.target if isinstance(stream, CleanStream) else stream


def streams() -> tuple[CleanStream, ...]:
    return tuple(s for s in (sys.stdout, sys.stderr) if isinstance(s, CleanStream))


@contextmanager
def installed() -> Iterator[None]:
    """sys.stdout and sys.stderr cleaned for the duration (nested calls keep the outer cleaning)."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, CleanStream):
        sys.stdout = CleanStream(sys.stdout)
    if not isinstance(sys.stderr, CleanStream):
        sys.stderr = CleanStream(sys.stderr)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError):
                stream.flush()
        sys.stdout, sys.stderr = saved
