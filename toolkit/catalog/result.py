"""What checking a spec against the catalog found: refusals, warnings, and the catalog row of each pool.

Its own module because both sides of the check use it: `toolkit.catalog.checks` makes one and runs
the provider's checks on it, and each provider (`toolkit.providers.base.Provider.check_catalog`,
`planned_resources`) fills it in or reads its rows. Kept here, the provider interface needs nothing
from the checks module, which needs the provider registry: no import cycle between them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from toolkit.catalog.models import InstanceType


@dataclass
class CheckResult:
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # pool name -> catalog row (absent for the local lab and for unknown types)
    rows: dict[str, InstanceType] = field(default_factory=dict)
