"""How long-running library code reports progress: one line at a time, flushed at once."""

from __future__ import annotations

from toolkit.secrets import redact


def progress(line: str) -> None:
    """Print one progress line (credential values redacted: lines can carry tool output)."""
    print(redact(line), flush=True)
