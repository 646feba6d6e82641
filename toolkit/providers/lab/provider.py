"""Provider `local`: the lab, a GPU-cluster stand-in of network namespaces on this machine."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolkit.providers.base import PlannedResource, Provider, ProviderDriver
from toolkit.spec.models import ClusterSpec

if TYPE_CHECKING:
    from toolkit.catalog.result import CheckResult


class LabProvider(Provider):
    name = "local"
    drivable = True
    pulumi_backed = False  # its state is a file in the gpuctl directory
    paid = False
    free_basis = "local lab: runs on this machine"
    python_interpreter = "/usr/bin/python3"  # the lab's Debian 12 roots

    def driver(self, backend_url: str | None = None) -> ProviderDriver:
        from toolkit.providers.lab.driver import LocalLabDriver

        return LocalLabDriver()

    def planned_resources(self, spec: ClusterSpec, check: CheckResult) -> list[PlannedResource]:
        from toolkit.providers.lab.plan import planned_resources

        return planned_resources(spec)

    def check_catalog(self, spec: ClusterSpec, result: CheckResult) -> None:
        from toolkit.providers.lab.checks import check_catalog

        check_catalog(spec, result)
