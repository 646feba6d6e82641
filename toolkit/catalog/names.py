"""The real names nearest to one a spec gives: what validate offers instead of a name that cannot exist.

One helper for every kind of name the clouds take from a list (instance types, disk categories, zones):
a name that differs only in case is the one meant; a name that is the family part of `FAMILY.SIZE`
(Tencent's `GT4` for `GT4.41XLARGE948`, Alibaba's `ecs.gn7e` for `ecs.gn7e-c16g1.4xlarge`) means one of
that family's sizes; a name that is a real one without its leading part (Alibaba's `ebmgn7ex.32xlarge`
for `ecs.ebmgn7ex.32xlarge`) means that one; anything else gets the names closest in spelling
(toolkit.hints.close_names, difflib's ratio), and only the best of them when it is clearly the best.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from toolkit.hints import close_names

SPELLING_CUTOFF = 0.6  # difflib's default: below it a suggestion is more noise than help
CLEAR_LEAD = 0.03  # a name this much closer than the next is the one meant (one letter in ~30)


def nearest(name: str, names: Iterable[str], *, limit: int = 3) -> list[str]:
    """Up to `limit` of `names` a user who wrote `name` most likely meant, best first; [] when none is close."""
    known = list(dict.fromkeys(names))
    same_case = [n for n in known if n.lower() == name.lower()]
    if same_case:
        return same_case[:limit]
    stem = name.lower().rstrip(".")
    family = [n for n in known if n.lower().startswith(stem + ".") or n.lower().startswith(stem + "-")]
    if stem and family:
        return family[:limit]
    completed = [n for n in known if stem and n.lower().endswith("." + stem)]
    if completed:
        return completed[:limit]
    close = close_names(name, known, cutoff=SPELLING_CUTOFF, n=limit)
    ratios = [difflib.SequenceMatcher(None, name, n).ratio() for n in close]
    return [n for n, r in zip(close, ratios, strict=True) if r >= ratios[0] - CLEAR_LEAD]
