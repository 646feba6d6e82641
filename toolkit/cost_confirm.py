"""What a cluster costs for its TTL, said up front, and the confirmation `up` asks for above a threshold.

The TTL total (`plan`'s cost.for_ttl: every pool's price per hour for the whole TTL, plus what monthly
pools pay up front) is what a cluster costs when nobody runs `gpuctl down`: the clouds' own timed
release ends it then. `plan` and `up` state it on the line after the cluster's name, and `up` asks
before it creates anything when it is above the threshold:

- the threshold is `GPUCTL_CONFIRM_ABOVE_CNY` (a number of CNY, e.g. `5000`; `0` asks for every
  cluster that costs anything), else DEFAULT_THRESHOLD_CNY. One setting for the person or CI job that
  runs gpuctl, like GPUCTL_CNY_PER_USD: not a spec field, since a spec is untrusted data and must not
  be able to lift its own limit;
- a cost gpuctl cannot compute (a pool without a price) counts as above it: gpuctl cannot show that
  the cluster is cheap, so it asks;
- `up --yes` confirms in advance (scripts, CI); without it and without a terminal to ask at, `up`
  refuses (exit 2) and nothing is created;
- a provider that bills nothing (the local lab) never asks.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from toolkit.errors import UsageError
from toolkit.plan import Plan

ENV = "GPUCTL_CONFIRM_ABOVE_CNY"
# CNY 1,000 (about USD 137 at the default rate) for the TTL: a single A10 for a working day stays below,
# two 8-GPU nodes for a day go above. Chosen by gpuctl, not by a cloud; set your own with ENV.
DEFAULT_THRESHOLD_CNY = 1000.0


@dataclass(frozen=True)
class Threshold:
    cny: float
    source: str  # where it comes from, said after the amount

    def describe(self, plan: Plan) -> str:
        usd = plan.cost.exchange_rate.usd(self.cny) if plan.cost.exchange_rate is not None else None
        return f"the threshold of {_money(self.cny, 'CNY', usd)} {self.source}"


def threshold() -> Threshold:
    """The user's threshold (ENV), else the default; a value that is not a number >= 0 is a UsageError."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return Threshold(DEFAULT_THRESHOLD_CNY, f"(gpuctl's default; {ENV} sets your own)")
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{ENV}={text!r} is not an amount of CNY (a number, 0 or more)",
                         hint=f"e.g. {ENV}=5000 to be asked above 5,000 CNY for the TTL; `up --yes` skips the question")
    return Threshold(value, f"set by {ENV}")


def _money(value: float, currency: str, usd: float | None, unit: str = "") -> str:
    return f"{value:,.2f} {currency}{unit}" + (f" (${usd:,.2f}{unit})" if usd is not None and currency != "USD" else "")


def ttl_line(plan: Plan) -> str:
    """The cluster's cost for its TTL, and per hour, on one line (or why it is unknown)."""
    cost = plan.cost
    if cost.currency is None:  # a provider that bills nothing
        basis = cost.pools[0].basis if cost.pools else f"{plan.provider} bills nothing"
        return f"Cost for the TTL of {cost.ttl}: nothing ({basis})"
    if cost.for_ttl is None:
        pools = ", ".join(cost.unknown_prices) or "some pools"
        return (f"Cost for the TTL of {cost.ttl}: UNKNOWN: no price for pool(s) {pools}, so gpuctl cannot say "
                "what this cluster bills")
    per_hour = "" if cost.per_hour is None else f", {_money(cost.per_hour, cost.currency, cost.per_hour_usd, '/h')}"
    upfront = f", {_money(cost.upfront, cost.currency, cost.upfront_usd)} of it up front" if cost.upfront else ""
    return (f"Cost for the TTL of {cost.ttl}: {_money(cost.for_ttl, cost.currency, cost.for_ttl_usd)}"
            f"{per_hour}{upfront}; billed until `down` or the TTL")


def confirmation_reason(plan: Plan, limit: Threshold) -> str | None:
    """Why `up` must ask before creating this cluster, or None."""
    cost = plan.cost
    if cost.currency is None:
        return None
    if cost.for_ttl is None:
        return (f"the cost of {plan.cluster} for its TTL is unknown, so gpuctl cannot show it is under "
                f"{limit.describe(plan)}")
    if cost.currency == "CNY":
        above = cost.for_ttl > limit.cny
    elif cost.currency == "USD" and cost.exchange_rate is not None:
        above = cost.for_ttl > (cost.exchange_rate.usd(limit.cny) or 0.0)
    else:
        return (f"the cost of {plan.cluster} is in {cost.currency}, which gpuctl cannot compare with "
                f"{limit.describe(plan)}")
    if not above:
        return None
    return (f"{plan.cluster} costs {_money(cost.for_ttl, cost.currency, cost.for_ttl_usd)} for its TTL of "
            f"{cost.ttl}, above {limit.describe(plan)}")
