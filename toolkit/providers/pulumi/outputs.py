"""A stack's outputs (plain values) -> the ClusterOutputs every cloud produces."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolkit import hints
from toolkit.errors import ProviderError
from toolkit.providers.base import ClusterOutputs, FabricInterface, NodeOutput, VolumeOutput
from toolkit.spec.models import ClusterSpec

OUT_VOLUMES = "volumes"  # the storage stack's volumes, and the cluster stack's with their mount sources
OUT_INSTANCE_ROLE = "instanceRole"  # the RAM/CAM role the nodes carry, where the cluster stack made one


def outputs_from_stack(spec: ClusterSpec, values: Mapping[str, Any]) -> ClusterOutputs:
    """Stack outputs (plain values, as `stack.outputs()` holds them) -> ClusterOutputs. Every cloud's
    program exports the same keys: cluster, fabric, mtu and nodes (name, pool, instance_id,
    instance_type, private_ip, public_ip, fabric_interfaces)."""
    nodes = values.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise ProviderError(
            f"stack {spec.name} has no node outputs",
            hint=f"`{hints.spec_command(spec.name, 'up')}` did not finish; run it again (it picks up where it stopped)",
        )
    if values.get("cluster") not in (None, spec.name):
        raise ProviderError(f"stack {spec.name} holds cluster {values.get('cluster')}, not {spec.name}")
    user = spec.ssh.user or "root"
    parsed: list[NodeOutput] = []
    for node in nodes:
        if not isinstance(node, Mapping):
            raise ProviderError(f"stack {spec.name}: a node output is not a mapping: {node!r}")
        public_ip = node.get("public_ip") or None
        private_ip = str(node["private_ip"])
        parsed.append(
            NodeOutput(
                name=str(node["name"]),
                pool=str(node["pool"]),
                instance_id=str(node["instance_id"]),
                instance_type=str(node["instance_type"]),
                private_ip=private_ip,
                public_ip=public_ip,
                ssh_host=public_ip or private_ip,
                # A cloud whose images log in as another user (Tencent's Ubuntu: ubuntu) says so per node.
                ssh_user=str(node.get("ssh_user") or user),
                fabric_interfaces=[FabricInterface.model_validate(i) for i in node.get("fabric_interfaces", [])],
            )
        )
    volumes = values.get(OUT_VOLUMES)
    # The cluster's instance role (RAM/CAM, the providers' roles.py), where the stack made one: the
    # object volumes are mounted with it (ossfs ram_role=, cosfs cam_role=).
    role = values.get(OUT_INSTANCE_ROLE)
    instance_role = str(role) if role else None
    return ClusterOutputs(
        cluster=spec.name,
        provider=spec.provider,
        fabric=values.get("fabric", spec.network.fabric),
        mtu=int(values.get("mtu", spec.network.mtu)),
        nodes=parsed,
        volumes=[volume_output(v, instance_role=instance_role) for v in volumes if isinstance(v, Mapping)]
        if isinstance(volumes, list) else [],
    )


def volume_output(value: Mapping[str, Any], *, instance_role: str | None = None) -> VolumeOutput:
    """A volume of the cluster stack's `volumes` output as the storage role mounts it; an object volume
    carries the cluster's `instance_role` (the stack's `instanceRole` output), its credentials. NFS v3 on
    both clouds: Tencent's CFS mount guide recommends vers=3 for metadata performance (its path is
    `/<fsid>`, https://www.tencentcloud.com/document/product/582/78755, updated 2026-04-08), and
    Alibaba's NAS mounts are `<mount target domain>:/` with vers=3 (docs/storage.md)."""
    kind = value.get("kind")
    fields: dict[str, Any] = {"name": value.get("name"), "kind": kind, "mount_path": value.get("mountPath")}
    if kind == "nas":
        source = str(value.get("mountSource") or "")
        nfs3_path = value.get("nfs3Path")
        if source and nfs3_path:
            source = f"{source.split(':', 1)[0]}:{nfs3_path}"
        fields.update(source=source or None, nfs_version="3")
    else:
        fields.update(bucket=value.get("bucket"), endpoint=value.get("endpoint"), instance_role=instance_role)
    try:
        return VolumeOutput.model_validate(fields)
    except ValueError as error:
        raise ProviderError(f"the stack's volume output {value.get('name')!r} is not usable: {error}") from None


def stack_volumes(outputs: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """The storage stack's `volumes` output out of all its outputs (none where it exports none)."""
    values = outputs.get(OUT_VOLUMES)
    return tuple(v for v in values if isinstance(v, Mapping)) if isinstance(values, list) else ()

