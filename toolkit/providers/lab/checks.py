"""The lab's own spec checks, run by `toolkit.catalog.checks.check_spec` through the provider: the
lab has no catalog, one instance type, Debian 12 roots, fabric tcp and at most 16 nodes."""

from __future__ import annotations

from pathlib import Path

from toolkit.catalog.result import CheckResult
from toolkit.images.store import baked_name
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
        baked = baked_name(pool.image)
        if baked is not None:
            problems, warnings = baked_checks(baked, spec)
            result.problems += [f"{where}.image: {problem}" for problem in problems]
            result.warnings += [f"{where}.image: {warning}" for warning in warnings]
        elif "image" in pool.model_fields_set and pool.image not in LAB_IMAGES:
            result.problems.append(
                f"{where}.image: '{pool.image}': the local lab builds {', '.join(LAB_IMAGES)} roots only; "
                f"set image: {LAB_IMAGES[0]}, baked:<name> (gpuctl image build) or remove it"
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


def baked_checks(name: str, spec: ClusterSpec) -> tuple[list[str], list[str]]:
    """For `image: baked:<name>`, its record read once: why it cannot start lab nodes here (a bad
    name, no record, another cloud's), and what keeps its install record from holding on them
    (other pins: not an error, those nodes run the install roles, as without the image)."""
    from toolkit.errors import GpuctlError
    from toolkit.images import store

    if not store.IMAGE_NAME.fullmatch(name):
        return [f"'baked:{name[:40]}': not an image name (1 to 27 lower-case letters, digits and dashes)"], []
    try:
        record = store.load(name)
    except GpuctlError as exc:
        return [exc.message], []
    if record is None:
        return [f"no baked image named {name} here (make it with `{store.build_command(name)}`)"], []
    if record.provider != "local":
        return [f"image {name} was baked on {record.provider}, not in the local lab"], []
    software = spec.software.model_dump(mode="json")
    differ = [f"{key} {record.software.get(key)} (this spec: {software.get(key)})"
              for key in sorted(set(record.software) | set(software)) if record.software.get(key) != software.get(key)]
    if differ:
        return [], [f"image {name} was baked with {', '.join(differ)}: its nodes run the install roles again"]
    return [], []
