"""The `gpuctl choose --json` document (docs/schemas/choose.json, generated from these models).

A value gpuctl does not know is null, never a made-up number: an offer without a price has
`per_hour: null` and a `price_note` saying how to get one; no total, budget verdict or cost per
busbw is computed for it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.choose.needs import Needs

Billing = Literal["pay_as_you_go", "spot"]


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Offer(_Doc):
    rank: int = Field(description="1 is the best; compare-only offers are ranked among the others")
    provider: str = Field(description="alicloud or tencentcloud (or a compare-only cloud)")
    instance_type: str
    compare_only: bool = Field(description="true: gpuctl cannot create this type yet; shown for comparison only")
    region: str | None = Field(description="the region the price is for; null: no region known (catalog price or none)")
    zone: str | None = Field(description="the zone the price is for, where the price names one")
    billing: Billing
    nodes: int = Field(description="nodes needed: ceil(GPUs needed / the type's GPUs per node)")
    gpus_per_node: int
    gpus: int = Field(description="GPUs rented: nodes x GPUs per node (may be more than needed)")
    gpu_model: str
    gpu_memory_gib: int | None
    rdma_kind: str | None = Field(description="erdma, roce or ib; null: no RDMA NICs")
    rdma_gbps_per_gpu: float | None = Field(description="the node's RDMA Gbit/s divided by its GPUs; null when unknown")
    busbw_gbps: float | None = Field(description="expected large-message all-reduce busbw, GB/s; null when unknown")
    busbw_from: Literal["measured", "model"] | None = Field(description="measured (--bench) wins over the model")
    busbw_basis: str = Field(description="how the busbw figure was reached, or why there is none")
    currency: str | None = Field(description="CNY; null when there is no price")
    node_per_hour: float | None = Field(description="one node per hour; null when no price is known")
    per_hour: float | None = Field(description="the whole cluster per hour")
    per_gpu_hour: float | None = Field(description="per_hour / gpus")
    per_busbw: float | None = Field(description="per_hour / busbw_gbps: what one GB/s of busbw costs per hour")
    hours: float | None = Field(description="--hours")
    total: float | None = Field(description="per_hour x hours; null without a price or --hours")
    within_budget: bool | None = Field(description="total <= --budget; null without a budget or a price")
    price_source: str | None = Field(description="where the price came from: the live cache entry or a public page URL")
    price_read: str | None = Field(description="when that price was read (date, or UTC time for live prices)")
    price_note: str = Field(description="the price's basis, or `no price: run gpuctl prices refresh ...`")
    why: str = Field(description="one line: why this offer is where it is")


class Unmet(_Doc):
    provider: str
    instance_type: str
    compare_only: bool
    region: str | None
    reasons: list[str] = Field(description="each need the offer cannot meet")


class ChooseReport(_Doc):
    needs: Needs
    offers: list[Offer] = Field(description="offers that meet the needs, best first")
    unmet: list[Unmet] = Field(description="catalog types that cannot meet the needs, with the reasons")
    winner: str | None = Field(description="provider/instance_type of the best offer gpuctl can create; null: none")
    spec_written: str | None = Field(description="the file --write-spec wrote; null without --write-spec")
    notes: list[str] = Field(description="what the ranking rests on: price cache, ignored bench runs ...")
