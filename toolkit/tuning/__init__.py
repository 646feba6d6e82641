"""NCCL tuning: tables with sources, topology rules, and `tune()` that layers them.

The names below load on first use (PEP 562): the spec's checks import `toolkit.tuning.variables`
alone, and importing this package must not pull in the engine (and the topology readers) with it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolkit.tuning.config import NcclConfig, NcclSetting
    from toolkit.tuning.engine import infer_fabric, tune

__all__ = ["NcclConfig", "NcclSetting", "infer_fabric", "tune"]
_HOMES = {"NcclConfig": "config", "NcclSetting": "config", "infer_fabric": "engine", "tune": "engine"}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(f"toolkit.tuning.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'toolkit.tuning' has no attribute {name!r}")
