"""Models of the catalog data files (`toolkit/catalog/data/<provider>.yaml`).

Every value the clouds publish is optional: unknown stays `None` and is shown as unknown, never
invented. Every row names the public page it came from and the date it was read.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, model_validator

from toolkit.spec.models import Provider


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(_Row):
    url: HttpUrl
    read: date  # the day the page was read
    note: str | None = None


class GpuInfo(_Row):
    model: str  # "NVIDIA A100 80GB SXM4"
    count: int = Field(ge=1)
    memory_gib: int | None = None  # per GPU
    nvlink: bool | None = None
    nvswitch: bool | None = None
    architecture: str | None = None  # Turing, Ampere, Hopper, Ada ...


class RdmaInfo(_Row):
    # erdma: Alibaba elastic RDMA through an ERI; roce: RoCE v2 (Tencent HCC, Lingjun); ib: InfiniBand
    kind: Literal["erdma", "roce", "ib"]
    nics: int | None = None  # RDMA NICs / ports the instance sees
    gbps: float | None = None  # total RDMA bandwidth of the instance
    eri_quantity: int | None = None  # Alibaba: ENIs that can be ERIs on this type


# Where a catalog price comes from, said beside every figure (plan, choose) and never mixed silently:
# the cloud's own published list price, or a dataset someone else pulled from the cloud's price API
# (its account's price at its date; discounts of that account may be in it). A live price (gpuctl's
# own price cache, toolkit/prices) is a third kind and always wins.
PriceKind = Literal["official list", "third-party API pull"]


class Price(_Row):
    kind: PriceKind
    pay_as_you_go_per_hour: float | None = None  # one instance
    monthly: float | None = None
    currency: Literal["CNY", "USD"]
    region: str  # the region (and zone) the price was read for
    source: Source
    # What the figure covers beyond the instance, as the source made it (e.g. a system disk).
    includes: str | None = None
    # The figure as the source states it, where gpuctl undid a conversion the source made.
    as_stated: str | None = None
    # The regions an official list price stands for, where its page names a market rather than one
    # region (Tencent's "中国大陆地区" reference price: its mainland regions); None: `region` alone.
    regions: list[str] | None = None

    def applies_to(self, region: str | None) -> bool:
        """Whether the figure may stand for `region` (None: no region asked): an official list price for
        the regions of its market, a pulled one (one zone's price) for its own region only."""
        if region is None:
            return True
        if self.regions is not None:
            return region in self.regions
        return self.region.split(" ")[0] == region


class InstanceType(_Row):
    name: str  # ecs.ebmgn7ex.32xlarge, HCCPNV4h.32XLARGE...
    family: str
    gpu: GpuInfo | None = None
    vcpu: int | None = None
    memory_gib: float | None = None
    network_gbps: float | None = None  # VPC bandwidth
    max_mtu: int | None = None  # largest MTU the VPC network carries for this type
    # Where the cloud says so, when it is not the row's own source (e.g. an API reference's rule).
    max_mtu_source: Source | None = None
    # The system disk categories the family takes, as the cloud's API spells them; None: not stated
    # (the cloud's whole list applies). The row's source states them.
    system_disk_categories: list[str] | None = None
    bare_metal: bool = False
    hcc: bool = False  # Tencent High-Performance Computing Cluster type (needs an HCC cluster)
    rdma: RdmaInfo | None = None
    price: Price | None = None
    # Why there is no price, where a search for one found none: where was looked and what was found
    # (e.g. a page that states only a ratio). Shown beside the plan's unknown cost; only on an unpriced row.
    no_price: str | None = None
    # The type comes with local (instance-store) disks. Tencent does not stop charging a stopped
    # instance that has them, nor Alibaba (their no-charge stop pages); None: not stated.
    local_disks: bool | None = None
    # The system disk types the row's source allows for the type, spelled as the API spells them;
    # None: the source states none, and only the cloud's own list (CloudRules.disk_categories) applies.
    system_disks: list[str] | None = None
    zones: list[str] | None = None  # the zones the row's source lists for the type (a dated list)
    source: Source
    notes: str | None = None


    @model_validator(mode="after")
    def _no_price_only_without_one(self) -> InstanceType:
        if self.no_price is not None and self.price is not None:
            raise ValueError("no_price says why a row has no price: a priced row cannot have one")
        return self

    def price_in(self, region: str | None) -> Price | None:
        """The row's price where it stands for `region` (Price.applies_to), else None: the one rule plan,
        choose, validate, reap and the Tencent spot bid read a catalog price by."""
        return self.price if self.price is not None and self.price.applies_to(region) else None

    def eris_per_node(self) -> tuple[int, str]:
        """How many ERIs gpuctl gives each node of this eRDMA type, and why (plan, stack and the node
        checks all read this one answer).

        One ERI per physical network card: Alibaba's family page says an ebmgn7ex reaches its full
        eRDMA bandwidth only with ERIs bound to different network card indexes. Where the card
        count is unknown, the primary ERI alone, which every eRDMA type has. The ERI quota
        (`EriQuantity`) is the type's maximum, not how many to attach: it only caps the count.
        """
        rdma = self.rdma
        if rdma is None or rdma.kind != "erdma" or rdma.eri_quantity == 0:
            return 0, "the type has no eRDMA"
        if rdma.nics:
            wanted, why = rdma.nics, "one per physical network card"
        else:
            wanted, why = 1, "the primary ERI only (ERI quota and network cards unknown)"
        if rdma.eri_quantity is None and rdma.nics:
            why += " (ERI quota unknown)"
        if rdma.eri_quantity is not None and rdma.eri_quantity < wanted:
            return rdma.eri_quantity, f"capped by the type's ERI quota (one per network card would be {wanted})"
        return wanted, why


class Family(_Row):
    """An instance family a vendor page names with what it states of the family as a whole (its RDMA
    bandwidth), but no size of it: a name that cannot go in a spec (the API takes FAMILY.SIZE), kept so
    that validate can say what the family is and how to find its sizes."""

    name: str  # HCCPNV4sn
    gpu_model: str | None = None  # None: the pages read do not name it
    rdma: RdmaInfo | None = None
    hcc: bool = False
    source: Source
    notes: str | None = None


class Zones(_Row):
    """The zones of each region as a vendor page lists them (a dated list: a zone opened since is not on it)."""

    regions: dict[str, list[str]]
    source: Source


class Catalog(_Row):
    provider: Provider
    currency: Literal["CNY", "USD"]
    instance_types: list[InstanceType]
    families: list[Family] = Field(default_factory=list)
    zones: Zones | None = None

    def find(self, name: str) -> InstanceType | None:
        for row in self.instance_types:
            if row.name == name:
                return row
        return None

    def find_family(self, name: str) -> Family | None:
        for family in self.families:
            if family.name == name:
                return family
        return None
