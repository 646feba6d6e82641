"""CNY and USD side by side: the exchange rate gpuctl converts with, its date and where it came from.

The clouds' China sites price in CNY; people compare in both. A converted figure is only as good as
its rate, so the rate always travels with its date and source, and the user can set their own:

1. `GPUCTL_CNY_PER_USD` (e.g. `7.12`, or `7.12@2026-12-01` to give the rate's date), else
2. `$GPUCTL_HOME/exchange_rate.json`: `{"cny_per_usd": 7.12, "as_of": "2026-12-01", "source": "my bank"}`, else
3. DEFAULT_RATE below: a published, dated reference rate, shown with its (old) date.

A bad value is a UsageError naming the variable or file; it is never silently replaced by the default.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolkit.errors import UsageError
from toolkit.files import FileError, read_text_bounded
from toolkit.state import gpuctl_home

ENV = "GPUCTL_CNY_PER_USD"
FILE_NAME = "exchange_rate.json"
# The yuan has traded between 1.5 and 9 to the dollar since 1980; a rate past this is a mistake.
MAX_CNY_PER_USD = 1000.0


class ExchangeRate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # Bounded above too: 1e308 is no rate, and a price divided by it shows as 0 USD.
    cny_per_usd: float = Field(gt=0, lt=MAX_CNY_PER_USD, allow_inf_nan=False, strict=True,  # a number, not text
                               description="CNY for one USD")
    as_of: str = Field(description="the date (or month) the rate is for, as its source gives it")
    source: str = Field(description="where the rate comes from: a URL, the environment variable or the file")

    def usd(self, cny: float | None) -> float | None:
        return None if cny is None else round(cny / self.cny_per_usd, 2)

    def describe(self) -> str:
        return f"1 USD = {self.cny_per_usd:g} CNY (rate of {self.as_of}; {self.source})"


# The Federal Reserve's H.10 noon buying rate in New York, China yuan per US dollar, monthly average
# of February 2025: 7.2734 (FRED/ALFRED series EXCHUS, "Updated: Mar 3, 2025"; read 2026-12-01). The
# newest official dated figure found in the stored pages; old, and shown as such with its month.
DEFAULT_RATE = ExchangeRate(
    cny_per_usd=7.2734,
    as_of="2025-02 (monthly average)",
    source="Federal Reserve H.10 via FRED series EXCHUS, https://alfred.stlouisfed.org/series?seid=EXCHUS",
)


def rate_path() -> Path:
    return gpuctl_home() / FILE_NAME


def _positive(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0 < value < MAX_CNY_PER_USD:
        raise UsageError(f"{where}: {text!r} is not a positive number of CNY per USD under {MAX_CNY_PER_USD:g}",
                         hint=f"e.g. {ENV}=7.12 or {ENV}=7.12@2026-12-01")
    return value


def from_env(text: str) -> ExchangeRate:
    value, _, day = text.strip().partition("@")
    return ExchangeRate(cny_per_usd=_positive(value, ENV), as_of=day.strip() or "date not given",
                        source=f"set by {ENV}")


def from_file(path: Path) -> ExchangeRate | None:
    if not os.path.lexists(path):
        return None
    try:
        text = read_text_bounded(path, limit=64 * 1024, what="exchange rate file", follow=False)
    except FileError as problem:
        raise UsageError(f"the exchange rate file {problem}") from None
    try:
        rate = ExchangeRate.model_validate_json(text)
    except ValidationError as exc:
        fields = ", ".join(sorted({str(e["loc"][0]) for e in exc.errors() if e["loc"]})) or "its JSON"
        raise UsageError(f"the exchange rate file {path} is not valid ({fields})",
                         hint='write {"cny_per_usd": 7.12, "as_of": "2026-12-01", "source": "..."} or remove it') \
            from None
    return rate.model_copy(update={"source": f"{rate.source} (from {path})"})


def current_rate() -> ExchangeRate:
    """The user's rate (environment, then the gpuctl home file), else the dated default."""
    text = os.environ.get(ENV)
    if text is not None and text.strip():
        return from_env(text)
    return from_file(rate_path()) or DEFAULT_RATE
