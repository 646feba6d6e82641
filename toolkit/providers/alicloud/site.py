"""Which Alibaba Cloud site the account is on, and so which currency its prices are in.

Alibaba runs two sites with separate accounts and billing: the China site (aliyun.com) prices in CNY,
the international site (alibabacloud.com) in USD. The ECS API answers prices in the account's
currency ("China site: CNY. International site: USD.", alibabacloud-ecs20140526 7.11.8
models/_describe_spot_price_history_response_body.py:18), and it reads RunInstances' SpotPriceLimit,
"the maximum hourly price of the instance" with up to three decimals (models/_run_instances_request.py:462),
in the same currency. gpuctl's spec gives `billing.spot_max_price_per_hour` in the catalog's currency,
CNY for alicloud (spec/models.py Billing), so on the international site it must be converted.

How gpuctl knows the site: the same setting the Pulumi provider reads. terraform-provider-alicloud's
`account_type` ("Domestic" or "International", case-insensitive) defaults to the environment variable
ALIBABA_CLOUD_ACCOUNT_TYPE (aliyun/terraform-provider-alicloud@v1.289.0:alicloud/provider.go:83-88);
without it the provider guesses at start-up with a BssOpenApi QueryAvailableInstances call and falls
back to "Domestic" (alicloud/connectivity/client.go:1714-1719). gpuctl does not guess: with a spot
ceiling and no ALIBABA_CLOUD_ACCOUNT_TYPE, `up` refuses (exit 7) and plan says why. Setting it also
spares the provider its guess (and the bssapi permission it needs).

Pure apart from reading the environment variable; the exchange rate is toolkit/prices/currency.py's,
dated and sourced, and every converted figure says which rate it used.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from toolkit.errors import MissingToolError, UsageError
from toolkit.prices.currency import ExchangeRate, current_rate

ACCOUNT_TYPE_ENV = "ALIBABA_CLOUD_ACCOUNT_TYPE"
AccountType = Literal["Domestic", "International"]
ACCOUNT_TYPES: tuple[AccountType, ...] = ("Domestic", "International")
SITE_CURRENCY: dict[AccountType, str] = {"Domestic": "CNY", "International": "USD"}
SITE_NAME: dict[AccountType, str] = {"Domestic": "China site", "International": "international site"}
SPEC_CURRENCY = "CNY"  # the catalog's currency for alicloud, the spec's for spot_max_price_per_hour
# SpotPriceLimit: "The value can have up to three decimal places" (models/_run_instances_request.py:462).
PRICE_DECIMALS = 3
SET_IT = f"export {ACCOUNT_TYPE_ENV}=Domestic (China site, CNY) or {ACCOUNT_TYPE_ENV}=International " \
         "(international site, USD): the account's site, as the Alibaba Pulumi provider reads it too"


def account_type(env: Mapping[str, str] | None = None) -> AccountType | None:
    """The site of the account from ALIBABA_CLOUD_ACCOUNT_TYPE; None when unset; a UsageError (exit 2)
    for another value (the provider itself refuses it: StringInSlice, provider.go:86)."""
    env = os.environ if env is None else env
    value = env.get(ACCOUNT_TYPE_ENV, "").strip()
    if not value:
        return None
    for known in ACCOUNT_TYPES:
        if value.lower() == known.lower():
            return known
    raise UsageError(f"{ACCOUNT_TYPE_ENV}={value[:40]!r} is neither Domestic nor International", hint=SET_IT)


@dataclass(frozen=True)
class SpotCeiling:
    """The spec's spot ceiling as the API takes it: `value` in `currency`, and how it was obtained."""

    value: float
    currency: str
    account_type: AccountType
    rate: ExchangeRate | None = None  # set when converted

    def statement(self, spec_value: float) -> str:
        site = f"{ACCOUNT_TYPE_ENV}={self.account_type}: {SITE_NAME[self.account_type]}, prices in {self.currency}"
        if self.rate is None:
            return f"spot ceiling {spec_value:g} {SPEC_CURRENCY}/h sent as {self.value:.3f} {self.currency}/h ({site})"
        return (f"spot ceiling {spec_value:g} {SPEC_CURRENCY}/h sent as {self.value:.3f} {self.currency}/h ({site}; "
                f"converted at {self.rate.describe()}; rounded down to 3 decimals)")


def spot_ceiling(spec_value: float, site: AccountType, rate: ExchangeRate | None = None) -> SpotCeiling:
    """`spec_value` CNY per hour as SpotPriceLimit for an account of `site`: kept on the China site,
    converted to USD at `rate` (the user's, else the dated default) on the international site. Rounded
    down to 3 decimals, so the ceiling sent is never above the one the spec set; a UsageError when nothing
    is left (a ceiling under a tenth of a US cent)."""
    currency = SITE_CURRENCY[site]
    if currency == SPEC_CURRENCY:
        return SpotCeiling(_down(spec_value), currency, site)
    rate = rate or current_rate()
    value = _down(spec_value / rate.cny_per_usd)
    if value <= 0:
        raise UsageError(
            f"billing.spot_max_price_per_hour: {spec_value:g} {SPEC_CURRENCY} is {spec_value / rate.cny_per_usd:.6f} "
            f"USD at {rate.describe()}: under the 0.001 USD SpotPriceLimit can carry",
            hint="raise billing.spot_max_price_per_hour",
        )
    return SpotCeiling(value, currency, site, rate)


def _down(value: float) -> float:
    """Rounded down to PRICE_DECIMALS (a hair of float error is forgiven: 5.0 stays 5.0)."""
    scale = 10.0**PRICE_DECIMALS
    return math.floor(value * scale + 1e-6) / scale


def ceiling_for_spec(spec_value: float, env: Mapping[str, str] | None = None,
                     rate: ExchangeRate | None = None) -> SpotCeiling:
    """The ceiling for the environment's account type; MissingToolError (exit 7) when it is unset."""
    site = account_type(env)
    if site is None:
        raise MissingToolError(unknown_site(spec_value), hint=SET_IT)
    return spot_ceiling(spec_value, site, rate)


def unknown_site(spec_value: float) -> str:
    return (f"billing.spot_max_price_per_hour is {spec_value:g} {SPEC_CURRENCY}, but {ACCOUNT_TYPE_ENV} is not set: "
            "gpuctl cannot tell whether the account prices in CNY (China site) or USD (international site), so it "
            "does not send the ceiling")


def plan_statement(spec_value: float, env: Mapping[str, str] | None = None) -> str:
    """What plan says of a spot ceiling: what will be sent, or why `up` will refuse."""
    try:
        return ceiling_for_spec(spec_value, env).statement(spec_value)
    except (MissingToolError, UsageError) as problem:
        return f"{problem.message}; `up` refuses until it is set"
