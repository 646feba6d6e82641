"""The words every command shares, importable without pydantic (so `gpuctl --help` stays fast).

`toolkit.spec.models` defines the same words as the `Fabric` and `Provider` Literal types the
spec validates with; tests/cli/test_vocabulary.py checks that the two never drift apart.
"""

from __future__ import annotations

FABRICS: tuple[str, ...] = ("erdma", "rdma", "tcp")
PROVIDERS: tuple[str, ...] = ("alicloud", "tencentcloud", "local")
