"""NCCL tuning: tables with sources, topology rules, and `tune()` that layers them."""

from toolkit.tuning.config import NcclConfig, NcclSetting
from toolkit.tuning.engine import infer_fabric, tune

__all__ = ["NcclConfig", "NcclSetting", "infer_fabric", "tune"]
