"""Provider name -> driver, imported lazily so a cloud SDK loads only when its cloud is used."""

from __future__ import annotations

import importlib

from toolkit.errors import UsageError
from toolkit.providers.base import ProviderDriver

# provider -> "module:class". Adding a cloud: its module in toolkit/providers and one line here.
DRIVERS: dict[str, str] = {
    "local": "toolkit.providers.local:LocalLabDriver",
    "alicloud": "toolkit.providers.alicloud_driver:AlicloudDriver",
}


def get_driver(provider: str) -> ProviderDriver:
    target = DRIVERS.get(provider)
    if target is None:
        known = ", ".join(sorted(DRIVERS))
        raise UsageError(f"provider '{provider}' cannot be driven by gpuctl yet (drivers: {known})")
    module_name, class_name = target.split(":")
    driver_class = getattr(importlib.import_module(module_name), class_name)
    driver: ProviderDriver = driver_class()
    return driver
