"""The lab's own spec checks, run by `toolkit.catalog.checks.check_spec` through the provider: the
lab has no catalog, one instance type, Debian 12 roots, fabric tcp and at most 16 nodes."""

from __future__ import annotations

from pathlib import Path

from toolkit.catalog.result import CheckResult
from toolkit.providers.lab import capture as lab_capture
from toolkit.spec.models import ClusterSpec

LAB_INSTANCE_TYPE = "lab"  # the one instance type of provider local: a namespace on this machine
LAB_IMAGES = ("debian_12",)  # the local lab debootstraps Debian 12 roots, nothing else
MAX_NODES = 16


def check_catalog(spec: ClusterSpec, result: CheckResult) -> None:
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
        # Set explicitly only: the lab ignores the cloud default (ubuntu_22_04) it never builds.
        if "image" in pool.model_fields_set and pool.image not in LAB_IMAGES:
            result.problems.append(
                f"{where}.image: '{pool.image}': the local lab builds {', '.join(LAB_IMAGES)} roots only; "
                f"set image: {LAB_IMAGES[0]} or remove it"
            )
        if pool.billing.mode != "pay_as_you_go":
            result.problems.append(f"{where}.billing: the local lab costs nothing; remove billing")
        if pool.capture is not None:
            # What `up` will copy into every node, refused here by the same reader before anything is made.
            result.problems += [f"{where}.capture: {problem}" for problem in lab_capture.problems(Path(pool.capture))]
    if spec.node_count > MAX_NODES:
        result.problems.append(
            f"node_pools: {spec.node_count} lab nodes; the local lab runs at most {MAX_NODES} on one machine"
        )
