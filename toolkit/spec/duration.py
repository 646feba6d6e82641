"""Durations written as people write them in a spec: `45m`, `8h`, `2d`, `1h30m`."""

from __future__ import annotations

import re
from datetime import timedelta

_PART = re.compile(r"(\d+)([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> timedelta:
    """Parse `8h`, `90m`, `1h30m`, `2d`; raise ValueError with the accepted forms otherwise."""
    compact = text.strip().lower().replace(" ", "")
    if not compact or _PART.sub("", compact):
        raise ValueError(f"'{text}' is not a duration; write a number and a unit such as 45m, 8h, 2d or 1h30m")
    seconds = sum(int(n) * _UNIT_SECONDS[unit] for n, unit in _PART.findall(compact))
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
