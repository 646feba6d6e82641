"""How many RDMA devices each node must show before the fabric role passes it.

The erdma and rdma roles fail a node whose `ibv_devinfo` lists fewer devices than this, naming the
rails it lacks. The count comes from the catalog row of the node's instance type, so a node that
booted with one of its two ERIs missing fails the check instead of running NCCL on half its rails:

- erdma: the ERIs gpuctl attaches, one per physical network card (`InstanceType.eris_per_node`,
  the count `plan` shows), and never fewer than the fabric interfaces the provider reported (each
  ERI is one fabric interface and brings one erdma device);
- rdma (Tencent HCC, RoCE): the type's RDMA NIC count (`rdma.nics`, HCC's bonds).

A count the catalog does not know is 1 (the fabric must at least exist), and the reason says so.
"""

from __future__ import annotations

from toolkit.catalog.models import InstanceType

__all__ = ["min_rdma_devices"]


def min_rdma_devices(fabric: str, instance_type: str, row: InstanceType | None,
                     interfaces: int) -> tuple[int, str]:
    """(minimum devices, why) for one node of `instance_type` whose provider reported `interfaces`
    fabric interfaces; `row` is the type's catalog row, None when the catalog lacks it."""
    if row is None:
        return 1, f"{instance_type} is not in the catalog: at least one device, its count unknown"
    if fabric == "erdma":
        eris, basis = row.eris_per_node()
        if interfaces > eris:
            return interfaces, f"one erdma device per ERI: {interfaces} fabric interfaces attached"
        if eris == 0:
            return 1, f"the catalog lists no eRDMA for {instance_type}: at least one device"
        return eris, f"one erdma device per ERI: {eris} ERI(s) per {instance_type} node, {basis}"
    nics = row.rdma.nics if row.rdma is not None else None
    if nics:
        return nics, f"{instance_type} has {nics} RDMA NIC(s) according to the catalog"
    return 1, f"the catalog states no RDMA NIC count for {instance_type}: at least one device"
