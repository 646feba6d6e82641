"""The words every command shares, importable without pydantic (so `gpuctl --help` stays fast).

The provider and fabric words are defined here once, as Literal types; `toolkit.spec.models`
validates specs with these very types (`Provider`, `Fabric`), and the tuples below are their values.
"""

from __future__ import annotations

from typing import Literal, get_args

FabricName = Literal["erdma", "rdma", "tcp"]
ProviderName = Literal["alicloud", "tencentcloud", "local"]

FABRICS: tuple[str, ...] = get_args(FabricName)
PROVIDERS: tuple[str, ...] = get_args(ProviderName)
