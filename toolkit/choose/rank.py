"""The order of the offers, and the one line that says why each is where it is.

Three tiers, each explained in the rows it holds:
0. priced, with the figure the need ranks by: with `--fabric required` the cost of one GB/s of
   all-reduce busbw per hour (a multi-node job buys bandwidth), else the cluster's price per hour;
1. priced but without a busbw figure when the fabric is required (it cannot be compared on it);
2. no price: after every priced offer (an unknown price is never taken as cheap); among them the
   fewest GPUs rented first (every rented GPU is paid for), then the higher busbw.
Ties fall to the higher busbw, then provider, type and region, so the order is stable.
"""

from __future__ import annotations

from toolkit.choose.needs import Needs
from toolkit.choose.report import Offer

Key = tuple[float, float, float, str, str, str]


def _tier(offer: Offer, by_busbw: bool) -> int:
    if offer.per_hour is None:
        return 2
    return 1 if by_busbw and offer.per_busbw is None else 0


def _key(offer: Offer, by_busbw: bool) -> tuple[int, Key]:
    tier = _tier(offer, by_busbw)
    busbw = -(offer.busbw_gbps or 0.0)
    names = (offer.provider, offer.instance_type, offer.region or "")
    if tier == 0:
        first = offer.per_busbw if by_busbw else offer.per_hour
        return tier, (first or 0.0, offer.per_hour or 0.0, busbw, *names)
    if tier == 1:
        return tier, (offer.per_hour or 0.0, 0.0, busbw, *names)
    return tier, (float(offer.gpus), 0.0 if offer.busbw_gbps is not None else 1.0, busbw, *names)


def rank(offers: list[Offer], needs: Needs) -> list[Offer]:
    by_busbw = needs.fabric == "required"
    ordered = sorted(offers, key=lambda o: _key(o, by_busbw))
    ranked: list[Offer] = []
    best: Offer | None = None
    for index, offer in enumerate(ordered, start=1):
        tier = _tier(offer, by_busbw)
        if tier == 0 and best is None:
            best = offer
            why = _first(offer, by_busbw)
        elif tier == 0 and best is not None:
            why = _after(offer, best, by_busbw)
        elif tier == 1:
            why = (f"priced ({offer.per_hour:,.2f} {offer.currency}/h) but no busbw figure ({offer.busbw_basis}): "
                   "after every offer with both")
        else:
            figure = (f"{offer.busbw_gbps:g} GB/s {offer.busbw_from}" if offer.busbw_gbps is not None
                      else "busbw unknown")
            why = (f"no price: after every priced offer; among those by GPUs rented ({offer.gpus}), "
                   f"then busbw ({figure})")
        if offer.compare_only:
            why = f"compare only: gpuctl cannot create these yet; {why}"
        ranked.append(offer.model_copy(update={"rank": index, "why": why}))
    return ranked


def _first(offer: Offer, by_busbw: bool) -> str:
    if by_busbw:
        return (f"best: lowest cost per GB/s of all-reduce busbw, {offer.per_busbw:,.2f} {offer.currency}/h "
                f"per GB/s ({offer.busbw_gbps:g} GB/s {offer.busbw_from})")
    return f"best: lowest price for the cluster, {offer.per_hour:,.2f} {offer.currency}/h"


def _after(offer: Offer, best: Offer, by_busbw: bool) -> str:
    name = f"{best.provider} {best.instance_type}"
    if by_busbw:
        assert offer.per_busbw is not None
        assert best.per_busbw is not None
        more = offer.per_busbw / best.per_busbw - 1 if best.per_busbw else 0.0
        return (f"{offer.per_busbw:,.2f} {offer.currency}/h per GB/s of busbw, {more:.0%} more than {name}"
                if more > 0 else f"same cost per GB/s as {name}; after it by price, busbw, then name")
    assert offer.per_hour is not None
    assert best.per_hour is not None
    more = offer.per_hour - best.per_hour
    return (f"{offer.per_hour:,.2f} {offer.currency}/h, {more:,.2f} more than {name}"
            if more > 0 else f"same price as {name}; after it by busbw, then name")


def winner(offers: list[Offer]) -> Offer | None:
    """The best offer gpuctl can create (compare-only rows never win)."""
    return next((o for o in offers if not o.compare_only), None)
