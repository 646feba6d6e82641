"""What a job needs, as `gpuctl choose` takes it on the command line, checked before anything is ranked.

Every value is refused with a UsageError (exit 2) naming its option when it is not a plain, finite,
sensible value: a spec value is data, so a command-line value is held to the same rule
(`toolkit.spec.models.check_text`: no template markers, control characters or option-looking text).
"""

from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolkit.errors import UsageError
from toolkit.spec.models import check_text

FabricNeed = Literal["required", "no"]
# Region ids as the clouds spell them (the spec's own shape check): cn-wulanchabu, ap-shanghai.
REGION = re.compile(r"[a-z]{2}-[a-z0-9-]{1,60}")
MAX_GPUS = 512 * 16  # the spec's limits: 512 nodes a pool, 16 GPUs a node at most in the catalog
MAX_HOURS = 90 * 24  # lifecycle.ttl's upper bound: longer runs are monthly subscriptions
MAX_BUDGET = 1e9


class Needs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu: str | None = Field(description="GPU model asked for (--gpu), matched as a whole word: A10 is not A100")
    gpu_memory_gib: int | None = Field(description="least GPU memory per GPU, GiB (--gpu-memory)")
    gpus_per_node: int = Field(description="least GPUs on one node (--gpus-per-node)")
    gpus: int = Field(description="GPUs in total (--gpus); nodes = ceil(gpus / the type's GPUs per node)")
    fabric: FabricNeed = Field(description="required: only types with RDMA NICs; no: any")
    hours: float | None = Field(description="how long the job runs (--hours); null: no total is computed")
    budget: float | None = Field(description="most the job may cost for --hours, CNY (--budget)")
    spot: bool = Field(description="spot acceptable: a cached spot price is used where one exists")
    regions: list[str] = Field(description="regions to consider (--region); empty: any")
    zones: list[str] = Field(description="zones for --write-spec where the price cache names none (--zone)")


def text_value(option: str, value: str, *, max_length: int = 64) -> str:
    try:
        return check_text(value, max_length=max_length)
    except ValueError as exc:
        raise UsageError(f"{option} {_shown(value)}: {exc}") from None


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _positive_int(option: str, value: int | None, upper: int) -> int | None:
    if value is None:
        return None
    if not 1 <= value <= upper:
        raise UsageError(f"{option} {value}: give a whole number from 1 to {upper}")
    return value


def _positive_float(option: str, value: float | None, upper: float) -> float | None:
    if value is None:
        return None
    if not math.isfinite(value) or not 0 < value <= upper:
        raise UsageError(f"{option} {value}: give a number above 0 and at most {upper:g}")
    return value


def _region(option: str, value: str) -> str:
    text_value(option, value)
    if not REGION.fullmatch(value):
        raise UsageError(f"{option} {_shown(value)}: not a region or zone id such as cn-wulanchabu or ap-shanghai-5")
    return value


def build_needs(*, gpu: str | None, gpu_memory: int | None, gpus_per_node: int | None, gpus: int | None,
                fabric: str, hours: float | None, budget: float | None, spot: bool,
                regions: list[str] | None, zones: list[str] | None) -> Needs:
    """The checked needs; a UsageError naming the option otherwise."""
    if gpu is None and gpu_memory is None:
        raise UsageError("say which GPU: --gpu MODEL (e.g. A10, A100, V100) or --gpu-memory GB (e.g. 80)")
    if gpu is not None:
        text_value("--gpu", gpu, max_length=40)
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9 .+-]{0,39}", gpu):
            raise UsageError(f"--gpu {_shown(gpu)}: a GPU model is letters, digits, spaces, '.', '+' and '-' "
                             "(e.g. A10, A100, L20, V100)")
    per_node = _positive_int("--gpus-per-node", gpus_per_node, 16) or 1
    total = _positive_int("--gpus", gpus, MAX_GPUS) or per_node
    if total < per_node:
        raise UsageError(f"--gpus {total} is fewer than --gpus-per-node {per_node}; give the total over all nodes")
    if fabric not in ("required", "no"):
        raise UsageError(f"--fabric {_shown(fabric)}: give required or no")
    hours = _positive_float("--hours", hours, MAX_HOURS)
    budget = _positive_float("--budget", budget, MAX_BUDGET)
    if budget is not None and hours is None:
        raise UsageError("--budget needs --hours: the budget is for the whole run (hours x price per hour)")
    region_list = [_region("--region", r) for r in regions or []]
    zone_list = [_region("--zone", z) for z in zones or []]
    return Needs(gpu=gpu, gpu_memory_gib=_positive_int("--gpu-memory", gpu_memory, 1024),
                 gpus_per_node=per_node, gpus=total, fabric="required" if fabric == "required" else "no",
                 hours=hours, budget=budget, spot=spot, regions=list(dict.fromkeys(region_list)),
                 zones=list(dict.fromkeys(zone_list)))
