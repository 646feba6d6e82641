"""RCCL topology dumps and generic GPU names (issue class 7), on real captures in tests/captures/topo_xml.

RCCL writes NCCL's XML format with its own `sm` (sm="94" on an MI300X): never an NVIDIA compute
capability, and its xGMI links are not NVLink.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.topology.detect import detect_paths

XML = Path(__file__).resolve().parents[1] / "captures" / "topo_xml"


@pytest.mark.parametrize(("name", "model", "gpus", "xgmi"), [
    ("mi300x-8gpu-baremetal-spr-8-cx7-ib-gfx942-sm94-xgmi-rccl-topo-expl-model.xml.txt", "AMD GPU (gfx942)", 8, 7),
    ("mi300x-8gpu-vm-pci-domains-0011-0081-cx7-vf-101e-gfx942-sm94-rccl-topo-expl-model.xml.txt", "AMD GPU (gfx942)",
     8, 7),
    ("gfx90a-8gpu-gcn910-class-038000-xgmi-3-links-eth0-1g-only-rccl-topo-expl-model.xml.txt", "AMD GPU (gcn 910)",
     8, 3),
    ("mi300a-4apu-4-numa-slingshot-cxi-speed-200000000-gcn940-rccl-topo-expl-model.xml.txt", "AMD GPU (gcn 940)", 4,
     3),
])
def test_an_rccl_dump_is_never_read_as_nvidia_gpus(name: str, model: str, gpus: int, xgmi: int) -> None:
    topology = detect_paths([XML / name])
    assert len(topology.gpus) == gpus
    assert {(g.model, g.compute_capability) for g in topology.gpus} == {(model, None)}
    assert topology.gpu_links == []  # xGMI is not NVLink, and not PCIe either: unknown
    assert any(f"their xGMI links ({xgmi} per GPU) are not NVLink" in n for n in topology.notes)


def test_a_hygon_dump_cut_mid_attribute_keeps_its_first_gpu_as_not_nvidia() -> None:
    name = "rccl-dump-vendor-1d94-gpu-gcn-21943-self-closing-no-xgmi-plx-c010-cut-mid-attr-rccl-issue1185.xml.txt"
    topology = detect_paths([XML / name])
    assert [(g.index, g.model, g.compute_capability) for g in topology.gpus] == [(0, "Hygon GPU (gcn 21943)", None)]
    assert any("the XML stops inside <pci>" in n for n in topology.notes)


def test_a_speed_no_port_has_is_unknown_and_a_netdev_is_never_a_rail() -> None:
    name = "mi300a-4apu-4-numa-slingshot-cxi-speed-200000000-gcn940-rccl-topo-expl-model.xml.txt"
    topology = detect_paths([XML / name])
    assert [(n.name, n.rate_gbps) for n in topology.nics] == [("cxi0", None), ("cxi1", None), ("cxi2", None),
                                                               ("cxi3", None)]
    assert any("speed=200000000 is not a port speed in Mb/s (200,000 Gb/s): its rate is unknown" in n
               for n in topology.notes)
    eth = detect_paths([XML / "gfx90a-8gpu-gcn910-class-038000-xgmi-3-links-eth0-1g-only-rccl-topo-expl-model.xml.txt"])
    assert ("eth0: a network interface NCCL lists for its socket transport, not an RDMA device: never a rail"
            in eth.notes)
