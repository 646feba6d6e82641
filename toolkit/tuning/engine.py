"""`tune()`: NCCL defaults < vendor profile < topology rules < user overrides -> `NcclConfig`."""

from __future__ import annotations

from collections.abc import Mapping

from toolkit.topology.model import Topology
from toolkit.tuning.config import NcclConfig, NcclSetting
from toolkit.tuning.rules import RULES, Context
from toolkit.tuning.tables import (
    VendorProfile,
    Version,
    nccl_defaults,
    parse_version,
    vendor_profile_by_id,
    vendor_profile_for,
)

FABRICS = ("erdma", "rdma", "tcp")


def infer_fabric(topology: Topology) -> str:
    """erdma_* devices -> erdma; any other RDMA device (mlx5 RoCE / IB) -> rdma; none -> tcp."""
    names = [nic.name for nic in topology.nics]
    names += [nic for row in topology.gpu_nic_distance.values() for nic in row]
    names += [rail.nic for rail in topology.rails]
    if any(name.startswith("erdma") for name in names) or any(
        nic.transport == "eRDMA" or nic.vendor_id == "0x1ded" for nic in topology.nics
    ):
        return "erdma"
    return "rdma" if names else "tcp"


def tune(
    topology: Topology,
    *,
    fabric: str | None,
    mtu: int | None,
    nccl_version: str | None,
    overrides: Mapping[str, str],
    provider: str | None = None,
    vendor_profile: str | None = None,
    fabric_interface: str | None = None,
) -> NcclConfig:
    """Compute the NCCL settings for one node.

    `fabric` None is inferred from the topology; `provider` (alicloud / tencentcloud) picks the
    vendor profile for RoCE, which both clouds sell; `vendor_profile` names one explicitly.
    `fabric_interface` is the interface the provider built the cluster network on; on a TCP
    fabric NCCL's sockets use it.
    `nccl_version` None means the NCCL-default layer is left out (its values depend on it), and
    falls back to the version the capture's NCCL log reported, if any.
    """
    chosen_fabric = fabric or infer_fabric(topology)
    if chosen_fabric not in FABRICS:
        raise ValueError(f"fabric {chosen_fabric!r}: expected one of {', '.join(FABRICS)}")
    version_text = nccl_version or topology.nccl_version
    version = parse_version(version_text) if version_text else None
    profile = (
        vendor_profile_by_id(vendor_profile) if vendor_profile
        else vendor_profile_for(chosen_fabric, provider) if chosen_fabric != "tcp" else None
    )
    config = NcclConfig(
        hostname=topology.hostname,
        nccl_version=version_text,
        fabric=chosen_fabric,
        vendor_profile=profile.id if profile else None,
    )
    _check_fabric(config, topology, fabric)
    _apply_defaults(config, version, ib=chosen_fabric != "tcp")
    if profile is not None:
        _apply_profile(config, profile, version)
    ctx = Context(topology=topology, fabric=chosen_fabric, mtu=mtu, nccl_version=version, profile=profile,
                  fabric_interface=fabric_interface)
    for rule in RULES:
        outcome = rule(ctx)
        config.notes.extend(outcome.notes)
        for setting in outcome.settings:
            config.set(setting)
    _apply_overrides(config, overrides)
    if profile is not None:
        _record_vendor_differences(config, profile)
    return config


def _check_fabric(config: NcclConfig, topology: Topology, asked: str | None) -> None:
    if asked is None or not (topology.nics or topology.gpu_nic_distance):
        return
    seen = infer_fabric(topology)
    if seen != asked:
        config.notes.append(f"fabric {asked} was asked for, but the capture's RDMA devices look like {seen}")


def _apply_defaults(config: NcclConfig, version: Version | None, *, ib: bool) -> None:
    if version is None:
        config.notes.append("NCCL version unknown: NCCL's defaults are not shown (they differ by version)")
        return
    for row in nccl_defaults(version):
        if not ib and row.name.startswith("NCCL_IB_"):
            continue  # IB verbs knobs mean nothing to a sockets-only node
        config.set(NcclSetting(
            name=row.name, value=row.value, layer="nccl-default",
            reason=f"NCCL {'.'.join(map(str, version))} default. {row.note}".strip(),
            source=row.source,
        ))


def _apply_profile(config: NcclConfig, profile: VendorProfile, version: Version | None) -> None:
    if profile.note:
        config.notes.append(f"{profile.id}: {profile.note}")
    if profile.min_nccl and version is not None and version < profile.min_nccl:
        need = ".".join(map(str, profile.min_nccl))
        config.notes.append(f"{profile.title} requires NCCL {need} or later; tuning for {config.nccl_version}")
    for item in profile.published:
        if item.take == "skip":
            continue
        config.set(NcclSetting(
            name=item.name, value=item.value, layer="vendor-profile",
            reason=f"{profile.title}: {item.why}", source=profile.source,
        ))


def _apply_overrides(config: NcclConfig, overrides: Mapping[str, str]) -> None:
    for name, value in overrides.items():
        old = config.get(name)
        was = f" (replaces {old.layer} value {old.value})" if old is not None else ""
        config.set(NcclSetting(
            name=name, value=str(value), layer="user-override",
            reason=f"set by the user; the operator's value always wins{was}",
            source="user: --set / spec nccl_overrides",
        ))


def _record_vendor_differences(config: NcclConfig, profile: VendorProfile) -> None:
    """For each variable the vendor publishes: the same value, or the reason ours differs."""
    for item in profile.published:
        final = config.get(item.name)
        if item.take == "skip":
            if final is not None and final.layer != "nccl-default":
                continue  # someone set it after all (override / rule); its reason says why
            config.vendor_differences[item.name] = f"not set: {item.why}"
        elif final is None or final.value != item.value:
            got = "unset" if final is None else f"{final.value} ({final.layer})"
            reason = final.reason if final is not None else item.why
            config.vendor_differences[item.name] = f"vendor {item.value}, gpuctl {got}: {reason}"
