"""Checks that need the catalog: does the cloud sell what the spec asks for, and is it wise.

`check_spec` returns refusals (problems) and warnings separately: a problem stops `validate`,
`plan` and `up`; a warning is printed and the user decides. Checks are pure: they read the spec and
the catalog, and the spec's key file, nothing else.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from toolkit.catalog.models import Catalog, InstanceType
from toolkit.catalog.store import load_catalog
from toolkit.spec.models import ClusterSpec, NodePool

LAB_INSTANCE_TYPE = "lab"  # the one instance type of provider local: a namespace on this machine
LONG_TTL = timedelta(hours=24)
STANDARD_MTU = 1500


@dataclass
class CheckResult:
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # pool name -> catalog row (absent for the local lab and for unknown types)
    rows: dict[str, InstanceType] = field(default_factory=dict)


def check_spec(spec: ClusterSpec, *, source: str = "<spec>") -> CheckResult:
    result = CheckResult()
    if spec.provider == "local":
        _check_local(spec, result)
    else:
        catalog = load_catalog(spec.provider)
        for index, pool in enumerate(spec.node_pools):
            where = f"node_pools[{index}] ({pool.name})"
            row = catalog.find(pool.instance_type)
            if row is None:
                result.problems.append(_unknown_type(spec, catalog, pool, where))
                continue
            result.rows[pool.name] = row
            _check_fabric(spec, row, where, result)
            _check_mtu(spec, row, where, result)
            _check_billing(spec, pool, row, where, result)
        _check_key(spec, result)
    _check_lifecycle_and_access(spec, result)
    # Each message names the spec so a user running validate on several files knows which one.
    result.problems = [f"{source}: {p}" for p in result.problems]
    result.warnings = [f"{source}: {w}" for w in result.warnings]
    return result


def _unknown_type(spec: ClusterSpec, catalog: Catalog, pool: NodePool, where: str) -> str:
    names = [row.name for row in catalog.instance_types]
    close = difflib.get_close_matches(pool.instance_type, names, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `gpuctl catalog " + spec.provider + "` lists them"
    return (
        f"{where}.instance_type: '{pool.instance_type}' is not a GPU instance type gpuctl knows "
        f"for {spec.provider}{hint}"
    )


def _check_fabric(spec: ClusterSpec, row: InstanceType, where: str, result: CheckResult) -> None:
    fabric = spec.network.fabric
    if fabric == "tcp":
        if spec.node_count > 1 and row.rdma is not None:
            result.warnings.append(
                f"{where}: {row.name} has an RDMA fabric ({row.rdma.kind}) but network.fabric is tcp; "
                "multi-node NCCL will run over TCP sockets, several times slower"
            )
        return
    if row.gpu is None:
        result.problems.append(
            f"{where}.instance_type: {row.name} has no GPU; network.fabric {fabric} is for GPU nodes"
        )
        return
    if fabric == "erdma":
        if spec.provider != "alicloud":
            result.problems.append(
                f"network.fabric: erdma is Alibaba Cloud's elastic RDMA; provider {spec.provider} cannot provide it "
                "(use rdma on tencentcloud)"
            )
        elif row.rdma is None or row.rdma.kind != "erdma" or row.rdma.eri_quantity == 0:
            result.problems.append(
                f"{where}.instance_type: {row.name} has no eRDMA interface (ERI) support; "
                f"pick a type with eRDMA (`gpuctl catalog alicloud --fabric erdma`) or set network.fabric: tcp"
            )
    elif fabric == "rdma":
        if row.rdma is None or row.rdma.kind not in ("roce", "ib"):
            kind = f" (it has {row.rdma.kind})" if row.rdma else ""
            result.problems.append(
                f"{where}.instance_type: {row.name} has no RoCE/InfiniBand RDMA NICs{kind}; "
                + (
                    "use an HCC type (HCCPNV4h, HCCPNV5 ...)"
                    if spec.provider == "tencentcloud"
                    else "use fabric erdma with an eRDMA type"
                )
            )
        elif spec.provider == "tencentcloud" and not row.hcc:
            result.problems.append(
                f"{where}.instance_type: {row.name} is not an HCC type; "
                "Tencent RDMA needs an HCC instance in an HCC cluster"
            )


# Alibaba, "Configure eRDMA on GPU instances": with jumbo frames NCCL's LL128 needs MTU 8500;
# without them the MTU must be 1400, and any other MTU risks data consistency problems.
ERDMA_MTU_SOURCE = "https://www.alibabacloud.com/help/id/ecs/user-guide/on-the-gpu-instance-configuration-erdma"
ERDMA_MTUS = (1400, 8500)
ALIBABA_MAX_MTU = 8500  # Alibaba's jumbo frames are 8,500 bytes


def _check_mtu(spec: ClusterSpec, row: InstanceType, where: str, result: CheckResult) -> None:
    mtu = spec.network.mtu
    if spec.network.fabric == "erdma" and mtu not in ERDMA_MTUS:
        result.problems.append(
            f"network.mtu: {mtu} with eRDMA: Alibaba requires 8500 (jumbo frames) or 1400 without them; "
            f"other MTUs risk data consistency problems ({ERDMA_MTU_SOURCE})"
        )
        return
    if spec.provider == "alicloud" and mtu > ALIBABA_MAX_MTU:
        result.problems.append(f"network.mtu: {mtu} is above Alibaba Cloud's jumbo frame size {ALIBABA_MAX_MTU}")
        return
    if mtu <= STANDARD_MTU:
        if spec.network.fabric == "erdma":
            result.warnings.append(
                f"network.mtu: {mtu} with eRDMA: Alibaba's eRDMA guidance pairs LL128 with jumbo frames (8500); "
                "gpuctl turns LL128 off at this MTU"
            )
        return
    if row.max_mtu is None:
        result.warnings.append(
            f"network.mtu: {mtu}: the catalog does not know whether {row.name} carries jumbo frames; "
            "configure verifies it with a do-not-fragment ping"
        )
    elif row.max_mtu < mtu:
        result.problems.append(
            f"network.mtu: {mtu} is larger than {row.name} carries ({row.max_mtu}); set network.mtu: {row.max_mtu}"
        )


def _check_billing(spec: ClusterSpec, pool: NodePool, row: InstanceType, where: str, result: CheckResult) -> None:
    billing = pool.billing
    payg = row.price.pay_as_you_go_per_hour if row.price else None
    if billing.mode == "spot":
        if billing.spot_max_price_per_hour is None:
            result.warnings.append(
                f"{where}.billing: spot without spot_max_price_per_hour: you pay the market price, up to the "
                "pay-as-you-go price; set a ceiling"
            )
        elif payg is not None and billing.spot_max_price_per_hour > payg:
            result.warnings.append(
                f"{where}.billing.spot_max_price_per_hour: {billing.spot_max_price_per_hour} is above the "
                f"pay-as-you-go price {payg}; spot will never be cheaper than that ceiling suggests"
            )
        if spec.node_count > 1:
            result.warnings.append(
                f"{where}.billing: spot nodes can be reclaimed at any time; "
                "a multi-node job loses all ranks when one node goes"
            )
    if billing.mode == "monthly":
        result.warnings.append(
            f"{where}.billing: monthly subscriptions are paid up front and are not released by lifecycle.ttl; "
            "the cloud's timed release covers pay-as-you-go and spot only"
        )


def _check_key(spec: ClusterSpec, result: CheckResult) -> None:
    key = spec.ssh.public_key
    if key is None:
        return
    try:
        text = key.read_text("utf-8", errors="replace").strip()
    except OSError as exc:
        result.problems.append(f"ssh.public_key: cannot read {key} ({exc.strerror}); give the path of your .pub file")
        return
    if "PRIVATE KEY" in text:
        result.problems.append(
            f"ssh.public_key: {key} is a PRIVATE key; give the matching .pub file and keep the private key to yourself"
        )
    elif not text.startswith(("ssh-ed25519 ", "ssh-rsa ", "ecdsa-sha2-", "sk-ssh-ed25519@", "sk-ecdsa-sha2-")):
        result.problems.append(f"ssh.public_key: {key} does not look like an OpenSSH public key (ssh-ed25519 AAAA...)")


def _check_local(spec: ClusterSpec, result: CheckResult) -> None:
    if spec.network.fabric != "tcp":
        result.problems.append(
            f"network.fabric: {spec.network.fabric} cannot run in the local lab (no RDMA hardware or Soft-RoCE here); "
            "use fabric: tcp — nodes still replay real RDMA captures for detection and tuning"
        )
    for index, pool in enumerate(spec.node_pools):
        where = f"node_pools[{index}] ({pool.name})"
        if pool.instance_type != LAB_INSTANCE_TYPE:
            result.problems.append(
                f"{where}.instance_type: provider local has one instance type, '{LAB_INSTANCE_TYPE}'"
            )
        if pool.billing.mode != "pay_as_you_go":
            result.problems.append(f"{where}.billing: the local lab costs nothing; remove billing")
        if pool.capture is not None and not Path(pool.capture).is_dir():
            result.problems.append(f"{where}.capture: {pool.capture} is not a directory of captures")
    if spec.node_count > 16:
        result.problems.append(f"node_pools: {spec.node_count} lab nodes; the local lab runs at most 16 on one machine")


def _check_lifecycle_and_access(spec: ClusterSpec, result: CheckResult) -> None:
    if spec.lifecycle.ttl_delta > LONG_TTL and spec.provider != "local":
        result.warnings.append(
            f"lifecycle.ttl: {spec.lifecycle.ttl} is longer than a day; a forgotten GPU cluster bills until then"
        )
    if spec.network.allow_world_ssh:
        result.warnings.append(
            f"network.admin_cidr: {spec.network.admin_cidr} with allow_world_ssh: SSH is open to the whole internet"
        )
    if spec.provider != "local" and spec.lifecycle.idle_stop_minutes is None:
        result.warnings.append("lifecycle.idle_stop_minutes is not set: idle GPUs keep billing until the TTL")
