"""What `gpuctl plan` lists for the local lab: what `up` builds on this machine (lab/driver.py)."""

from __future__ import annotations

from toolkit.providers.base import PlannedResource
from toolkit.spec.models import ClusterSpec


def planned_resources(spec: ClusterSpec) -> list[PlannedResource]:
    return [
        PlannedResource(
            type="lab:rootfs", name="debian-12-base", detail="debootstrap'd once, cached, shared read-only"
        ),
        PlannedResource(type="lab:bridge", name=f"{spec.name} management", detail="node SSH and Ansible"),
        PlannedResource(
            type="lab:bridge",
            name=f"{spec.name} fabric",
            detail=f"starts at MTU 1500; configure raises it to {spec.network.mtu}",
        ),
        PlannedResource(
            type="lab:node",
            name=f"{spec.name}-*",
            count=spec.node_count,
            detail="network namespace + own root + sshd; replays a real GPU host capture",
        ),
        # The lab's S3-compatible store (moto, lab/object_store.py), one per cluster, a bucket per object volume.
        *[
            PlannedResource(
                type="lab:bucket", name=volume.bucket_name(spec.name),
                detail=f"mounted at {volume.mount_path}; "
                + ("kept by down (the lab's store outlives it)" if volume.keep_on_down else "deleted by down"),
            )
            for volume in spec.storage if volume.kind == "object"
        ],
    ]
