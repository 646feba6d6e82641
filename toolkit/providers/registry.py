"""Provider name -> its `Provider` object, imported lazily so a cloud's SDK loads only when used.

Adding a provider: its package in toolkit/providers/<name>/ with a `Provider` subclass, its name
in `toolkit.vocabulary.ProviderName`, and one line here (tests check the two lists agree).
"""

from __future__ import annotations

import importlib
from functools import cache

from toolkit.errors import UsageError
from toolkit.providers.base import Provider, ProviderDriver

# provider -> "module:class" of its Provider.
PROVIDERS: dict[str, str] = {
    "alicloud": "toolkit.providers.alicloud.provider:AlicloudProvider",
    "tencentcloud": "toolkit.providers.tencentcloud.provider:TencentcloudProvider",
    "local": "toolkit.providers.lab.provider:LabProvider",
}


@cache
def get_provider(name: str) -> Provider:
    target = PROVIDERS.get(name)
    if target is None:
        raise UsageError(f"unknown provider '{name}' (known: {', '.join(PROVIDERS)})")
    module_name, class_name = target.split(":")
    provider: Provider = getattr(importlib.import_module(module_name), class_name)()
    return provider


def get_driver(provider: str, *, backend_url: str | None = None) -> ProviderDriver:
    """The driver for `provider`; `backend_url` (from `--backend`) only for Pulumi-driven providers."""
    chosen = get_provider(provider)
    if not chosen.drivable:
        drivable = ", ".join(sorted(name for name in PROVIDERS if get_provider(name).drivable))
        raise UsageError(f"provider '{provider}' cannot be driven by gpuctl yet (drivers: {drivable})")
    if backend_url is not None and not chosen.pulumi_backed:
        backed = ", ".join(sorted(name for name in PROVIDERS if get_provider(name).pulumi_backed))
        raise UsageError(
            f"--backend is for clusters kept in a Pulumi backend ({backed}); "
            f"provider '{provider}' keeps its state in the gpuctl directory",
            hint="drop --backend",
        )
    return chosen.driver(backend_url)
