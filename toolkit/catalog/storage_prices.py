"""Public list prices of shared storage (`data/storage_prices.yaml`): what a NAS / CFS file system or
an OSS / COS bucket costs per GiB stored for a month, with the page and date each figure came from.

Neither a file system nor a bucket has a size here: both bill what is stored. So gpuctl states a
price per GiB-month and, as a labelled example, one month of 1 TiB stored; never a total. A class no
public page priced stays unknown (`per_month: null`) and names the page to look at.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import Field, ValidationError

from toolkit.catalog.models import Source, _Row
from toolkit.errors import GpuctlError
from toolkit.spec.models import DEFAULT_STORAGE_TYPE, StorageKind, StorageVolume

# A page's "GB" is taken as 10^9 bytes: one GiB is 1.0737 of them. If a cloud means 2^30 bytes, the
# per-GiB figure is 7% high, the safe side of a bill.
GB_PER_GIB = 2**30 / 10**9
GIB_PER_TIB = 1024
# What gpuctl creates for an object volume: OSS `storage_class="Standard"`; COS objects are STANDARD
# unless an upload says otherwise (providers/*/storage.py).
OBJECT_CLASS = "Standard"


class StoragePrice(_Row):
    provider: Literal["alicloud", "tencentcloud"]
    kind: StorageKind
    storage_class: str  # NAS Performance|Capacity, CFS SD|HP, object Standard
    per_month: float | None = Field(default=None, gt=0)  # one `unit` stored for a month; None: unknown
    unit: Literal["GiB", "GB"]  # as the page prices it
    currency: Literal["CNY", "USD"]
    region: str  # the region or area the price was read for
    billing: str
    internal_traffic_free: bool | None = None  # reads and writes from the region's VPCs; None: not found
    source: Source

    def per_gib_month(self) -> float | None:
        if self.per_month is None:
            return None
        return self.per_month * GB_PER_GIB if self.unit == "GB" else self.per_month

    def per_tib_month(self) -> float | None:
        """One month of 1 TiB stored: the example figure (unrounded; callers round for display)."""
        per_gib = self.per_gib_month()
        return None if per_gib is None else per_gib * GIB_PER_TIB

    def list_price(self) -> str:
        """The price as the page states it: "0.12 CNY/GB-month", or "unknown"."""
        return "unknown" if self.per_month is None else f"{self.per_month:g} {self.currency}/{self.unit}-month"


class StoragePrices(_Row):
    prices: list[StoragePrice]

    def find(self, provider: str, kind: str, storage_class: str) -> StoragePrice | None:
        for row in self.prices:
            if (row.provider, row.kind, row.storage_class) == (provider, kind, storage_class):
                return row
        return None


@cache
def load_storage_prices() -> StoragePrices:
    text = resources.files("toolkit.catalog").joinpath("data", "storage_prices.yaml").read_text("utf-8")
    try:
        return StoragePrices.model_validate(yaml.safe_load(text))
    except ValidationError as exc:  # a broken shipped file is a bug in gpuctl, say where
        raise GpuctlError(f"storage price data is invalid (a gpuctl bug): {exc}") from None


def created_class(provider: str, volume: StorageVolume) -> str | None:
    """The storage class gpuctl creates for `volume`; None for an existing one (it keeps its own)."""
    if volume.existing is not None:
        return None
    if volume.kind == "object":
        return OBJECT_CLASS
    return volume.storage_type or DEFAULT_STORAGE_TYPE.get(provider)


def volume_price(provider: str, volume: StorageVolume) -> StoragePrice | None:
    """The price row of a volume gpuctl creates on a cloud; None for an existing volume or the lab."""
    storage_class = created_class(provider, volume)
    if storage_class is None:
        return None
    return load_storage_prices().find(provider, volume.kind, storage_class)


def kept_price_note(provider: str, volume: StorageVolume) -> str:
    """The end of `down`'s kept line: the monthly price of 1 TiB kept, when a public price is known."""
    row = volume_price(provider, volume)
    per_tib = row.per_tib_month() if row is not None else None
    if row is None or per_tib is None:
        return ""
    return (f" (about {per_tib:,.2f} {row.currency} per TiB stored per month: {row.storage_class} list price "
            f"for {row.region}, read {row.source.read})")
