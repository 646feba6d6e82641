"""Durations written as people write them in a spec: `45m`, `8h`, `2d`, `1h30m`."""

from __future__ import annotations

import re
from datetime import timedelta

_PART = re.compile(r"([0-9]+)([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
# Far beyond any TTL a spec may set (the spec allows 90 days), far inside what timedelta holds
# (999,999,999 days): a larger number is refused here with a message, never an OverflowError.
MAX_DURATION = timedelta(days=100 * 365)
_MAX_DIGITS = 12


def parse_duration(text: str) -> timedelta:
    """Parse `8h`, `90m`, `1h30m`, `2d`; raise ValueError with the accepted forms otherwise."""
    compact = text.strip().lower().replace(" ", "")
    shown = repr(text) if len(text) <= 40 else repr(text[:37]) + "..."
    if not compact or len(compact) > 64 or _PART.sub("", compact):
        raise ValueError(f"{shown} is not a duration; write a number and a unit such as 45m, 8h, 2d or 1h30m")
    parts = _PART.findall(compact)
    if any(len(number.lstrip("0")) > _MAX_DIGITS for number, _ in parts):
        raise ValueError(f"{shown} is far too long a duration; write something like 8h or 2d")
    seconds = sum(int(n) * _UNIT_SECONDS[unit] for n, unit in parts)
    if seconds > MAX_DURATION.total_seconds():
        raise ValueError(f"{shown} is far too long a duration; write something like 8h or 2d")
    return timedelta(seconds=seconds)


def format_duration(delta: timedelta) -> str:
    """The shortest form parse_duration reads back: 8h, 1h30m, 2d."""
    seconds = int(delta.total_seconds())
    parts = []
    for unit in ("d", "h", "m", "s"):
        size = _UNIT_SECONDS[unit]
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(parts) or "0s"
