"""A list of names in a message, bounded: the first few and how many more."""

from __future__ import annotations

from collections.abc import Sequence


def first(items: Sequence[str], limit: int, sep: str = ", ") -> str:
    """`a, b, c and 4 more`: the first `limit` items joined by `sep`, then how many were left out."""
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return sep.join(items[:limit]) + more
