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


# Providers whose state lives in a Pulumi backend, so that `--backend URL` means something.
PULUMI_PROVIDERS = frozenset({"alicloud"})


def get_driver(provider: str, *, backend_url: str | None = None) -> ProviderDriver:
    """The driver for `provider`; `backend_url` (from `--backend`) only for Pulumi-driven providers."""
    target = DRIVERS.get(provider)
    if target is None:
        known = ", ".join(sorted(DRIVERS))
        raise UsageError(f"provider '{provider}' cannot be driven by gpuctl yet (drivers: {known})")
    if backend_url is not None and provider not in PULUMI_PROVIDERS:
        raise UsageError(
            f"--backend is for clusters kept in a Pulumi backend ({', '.join(sorted(PULUMI_PROVIDERS))}); "
            f"provider '{provider}' keeps its state in the gpuctl directory",
            hint="drop --backend",
        )
    module_name, class_name = target.split(":")
    driver_class = getattr(importlib.import_module(module_name), class_name)
    driver: ProviderDriver = driver_class() if backend_url is None else driver_class(backend_url=backend_url)
    return driver
