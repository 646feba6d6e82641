"""`tune()`: NCCL defaults < vendor profile < topology rules < user overrides -> `NcclConfig`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import get_args

from toolkit.spec.models import Fabric
from toolkit.topology.model import Topology
from toolkit.tuning.config import NcclConfig, NcclSetting
from toolkit.tuning.rules import RULES, Context
from toolkit.tuning.tables import (
    VendorProfile,
    Version,
    dated,
    nccl_defaults,
    parse_version,
    vendor_profile_by_id,
    vendor_profile_for,
)

FABRICS: tuple[str, ...] = get_args(Fabric)
# An NCCL net plugin library: libnccl-net.so, libnccl-net-<name>.so[.N] (NCCL_NET_PLUGIN=<name>).
_PLUGIN_FILE = re.compile(r"^libnccl-net(?:[-_.][\w.+-]*)?\.so(?:\.[\d.]+)?$")
# A note that asks the user to set a variable ("... --set NCCL_X=<value>").
_ASKS_TO_SET = re.compile(r"--set (NCCL_[A-Z0-9_]+)=")


@dataclass(frozen=True)
class NetPlugin:
    """The NCCL net plugin a node shows: its name, where it was seen, and whether it is TCCL."""

    name: str
    evidence: str
    tccl: bool


def find_net_plugin(topology: Topology, *, nccl_log: object | None = None,
                    files: Iterable[str] = ()) -> NetPlugin | None:
    """The net plugin the node's evidence shows, or None.

    Evidence, strongest first: an NCCL log summary's `net_plugin` (from "NET/Plugin: Loaded net
    plugin <name>", "Plugin version : 1.2@Tencent Cloud" ...; read with getattr, as a string or an
    object with name/path/version/vendor, the summary given directly or as the topology's
    `nccl_log`), then a plugin library among `files` (paths found in the node's bundle) or among
    the files the topology was built from. TCCL is named only when "TCCL" or "Tencent" appears in
    what the log says or in the file's path (Tencent installs TCCL under /opt/tencent/tccl).
    Tencent packages its NCCL plugin as nccl-rdma-sharp-plugins, the name NVIDIA's HPC-X plugin
    also uses, so a bare "NCCL RDMA Plugin" is not called TCCL.
    """
    for summary in (nccl_log, getattr(topology, "nccl_log", None)):
        found = getattr(summary, "net_plugin", None)
        said = [found] if isinstance(found, str) else [
            getattr(found, attr, None) for attr in ("name", "version", "path")
        ]
        words = [w.strip() for w in said if isinstance(w, str) and w.strip()]
        vendor = getattr(found, "vendor", None)  # the log parser's reading of who ships it
        if words:
            where = getattr(summary, "source", None)
            evidence = f"NCCL log{f' {where}' if isinstance(where, str) else ''}: net plugin {', '.join(words)}"
            named = " ".join([*words, vendor if isinstance(vendor, str) else ""])
            return NetPlugin(name=words[0], evidence=evidence, tccl=_names_tccl(named))
    for path in (*files, *topology.sources):
        base = path.replace("\\", "/").rsplit("/", 1)[-1]
        if _PLUGIN_FILE.match(base):
            return NetPlugin(name=base, evidence=f"plugin library {path} in the bundle", tccl=_names_tccl(path))
    return None


def _names_tccl(text: str) -> bool:
    return "tccl" in text.lower() or "tencent" in text.lower()


def infer_fabric(topology: Topology) -> str:
    """erdma_* devices -> erdma; any other RDMA device (mlx5 RoCE / IB) -> rdma; RDMA shown in use
    without a device name (an NCCL log's NET/IB lines) -> rdma; nothing at all -> tcp."""
    names = [nic.name for nic in topology.nics]
    names += [nic for row in topology.gpu_nic_distance.values() for nic in row]
    names += [rail.nic for rail in topology.rails]
    if any(name.startswith("erdma") for name in names) or any(
        nic.transport == "eRDMA" or nic.vendor_id == "0x1ded" for nic in topology.nics
    ):
        return "erdma"
    return "rdma" if names or topology.rdma_devices_listed else "tcp"


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
    nccl_log: object | None = None,
    bundle_files: Iterable[str] = (),
) -> NcclConfig:
    """Compute the NCCL settings for one node.

    `fabric` None is inferred from the topology; `provider` (alicloud / tencentcloud) picks the
    vendor profile for RoCE, which both clouds sell; `vendor_profile` names one explicitly.
    `fabric_interface` is the interface the provider built the cluster network on; on a TCP
    fabric NCCL's sockets use it, and on RDMA fabrics it names the bootstrap interface when the
    capture has no interface list.
    `nccl_version` None means the NCCL-default layer is left out (its values depend on it), and
    falls back to the version the capture's NCCL log reported, if any.
    `mtu` is the fabric MTU the spec asks for (configure passes it); the MTU the capture shows wins.
    `nccl_log` (an NCCL log summary) and `bundle_files` (paths in the node's bundle) are evidence
    of an NCCL net plugin such as Tencent's TCCL; see `find_net_plugin`.
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
                  fabric_interface=fabric_interface, fabric_asked=fabric is not None)
    for rule in RULES:
        outcome = rule(ctx)
        config.notes.extend(outcome.notes)
        for setting in outcome.settings:
            _put(config, setting)
    _apply_overrides(config, overrides)
    _note_net_plugin(config, find_net_plugin(topology, nccl_log=nccl_log, files=bundle_files), profile)
    _drop_requests_already_met(config)
    if profile is not None:
        _record_vendor_differences(config, profile)
    return config


def _put(config: NcclConfig, setting: NcclSetting) -> None:
    """Set a value with the date its source page was read (where the tables record one)."""
    config.set(replace(setting, source=dated(setting.source)))


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
        _put(config, NcclSetting(
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
        _put(config, NcclSetting(
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


def _note_net_plugin(config: NcclConfig, plugin: NetPlugin | None, profile: VendorProfile | None) -> None:
    """Say which NCCL net plugin the node shows (TCCL on Tencent HCC) and what that means here."""
    tencent = profile is not None and profile.library.get("name") == "TCCL"
    if plugin is not None:
        config.net_plugin = plugin.name
        if plugin.tccl:
            config.notes.append(
                f"TCCL found ({plugin.evidence}): NCCL's network transport is Tencent's TCCL plugin; Tencent's "
                "plugin method also needs the hosts launched in its sorted IP order (update the list when the "
                "cluster grows). gpuctl's values stay as they are."
            )
        elif tencent:
            config.notes.append(
                f"an NCCL net plugin is loaded ({plugin.evidence}); it may be Tencent's TCCL plugin, which Tencent "
                "packages as nccl-rdma-sharp-plugins, the name NVIDIA's HPC-X plugin also uses: the capture "
                "cannot tell which"
            )
        else:
            config.notes.append(
                f"an NCCL net plugin is loaded ({plugin.evidence}): it replaces NCCL's built-in transport"
            )
        forced = config.get("NCCL_NET_PLUGIN")
        if forced is not None and forced.value == "none":
            config.notes.append(
                f"NCCL_NET_PLUGIN none ({forced.layer}) keeps NCCL from loading the plugin found ({plugin.name})"
            )
    elif tencent:
        checksum = "" if profile is not None and profile.library.get("checksum") else (
            ", off by default: Tencent publishes no checksum for the package")
        config.notes.append(
            "no TCCL seen in the capture (no NCCL log line loading a net plugin, no libnccl-net*.so in the bundle): "
            "without it NCCL uses its built-in IB transport; the spec's software.tccl (HCCPNV4sne/HCCPNV4sn only) "
            f"has the nccl role install TCCL{checksum}"
        )


def _drop_requests_already_met(config: NcclConfig) -> None:
    """A note must not ask for a variable a layer already set: say where the value comes from instead."""
    by_layer = {
        "vendor-profile": f"the vendor profile {config.vendor_profile}",
        "topology-rule": "a topology rule",
        "user-override": "your override",
    }
    notes: list[str] = []
    for note in config.notes:
        asked = _ASKS_TO_SET.search(note)
        setting = config.get(asked.group(1)) if asked else None
        if setting is None or not setting.pinned:
            notes.append(note)
            continue
        replacement = (f"{setting.name} {setting.value} comes from {by_layer[setting.layer]}, not from this "
                       "node's capture, which shows no value to check it against")
        if replacement not in notes:
            notes.append(replacement)
    config.notes = notes
