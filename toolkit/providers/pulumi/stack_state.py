"""What a stack's state holds besides the cloud's resources, and what of the cloud's is still in it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolkit.providers.tags import TAG_CLUSTER

STACK_TYPE = "pulumi:pulumi:Stack"
PROVIDER_TYPE_PREFIX = "pulumi:providers:"


def leftover_resources(deployment: Mapping[str, Any] | None, cluster: str) -> list[str]:
    """Cloud resources still in a stack's state after destroy: `type name`, tagged ones marked."""
    left = []
    resources = (deployment or {}).get("resources", []) or []
    for resource in resources if isinstance(resources, list) else []:
        if not isinstance(resource, Mapping):  # a damaged state's item: no resource of Pulumi's
            continue
        type_ = str(resource.get("type", ""))
        if type_ == STACK_TYPE or type_.startswith(PROVIDER_TYPE_PREFIX) or not resource.get("custom", True):
            continue
        name = str(resource.get("urn", "")).rsplit("::", 1)[-1]
        outputs, inputs = resource.get("outputs"), resource.get("inputs")
        tags = (outputs.get("tags") if isinstance(outputs, Mapping) else None) or \
            (inputs.get("tags") if isinstance(inputs, Mapping) else None) or {}
        mark = " (tagged gpuctl:cluster)" if isinstance(tags, Mapping) and tags.get(TAG_CLUSTER) == cluster else ""
        left.append(f"{type_} {name}{mark}")
    return left

