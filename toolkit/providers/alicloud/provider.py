"""Provider `alicloud`: Alibaba Cloud GPU clusters with eRDMA, driven through Pulumi."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit.providers.base import PlannedResource, Provider, ProviderDriver
from toolkit.spec.models import ClusterSpec

if TYPE_CHECKING:
    from toolkit.catalog.checks import CheckResult


class AlicloudProvider(Provider):
    name = "alicloud"
    drivable = True
    pulumi_backed = True

    def driver(self, backend_url: str | None = None) -> ProviderDriver:
        from toolkit.providers.alicloud.driver import AlicloudDriver

        return AlicloudDriver(backend_url=backend_url)

    def planned_resources(self, spec: ClusterSpec, check: CheckResult) -> list[PlannedResource]:
        from toolkit.providers.alicloud.plan import planned_resources

        return planned_resources(spec, check)

    def check_catalog(self, spec: ClusterSpec, result: CheckResult) -> None:
        from toolkit.providers.alicloud.checks import check_catalog

        check_catalog(spec, result)
