"""NCCL topology XML parser, on the real dumps in shared/fixtures/topo_xml (INDEX facts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.errors import ParseError
from toolkit.topology.model import Topology
from toolkit.topology.nccl_xml import parse_nccl_topo_xml


def _parse(shared_fixtures: Path, name: str) -> Topology:
    path = shared_fixtures / "topo_xml" / name
    return parse_nccl_topo_xml(path.read_text(), str(path))


def test_ibm_gx3d_h100_vm_reversed_nic_order(shared_fixtures: Path) -> None:
    topo = _parse(shared_fixtures, "ibmcloud-gx3d-8xh100-8cx7vf.xml.txt")
    assert [g.compute_capability for g in topo.gpus] == ["9.0"] * 8
    assert [g.numa for g in topo.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert topo.gpus[0].bus_id == "0000:a4:00.0"
    assert topo.gpus[3].bus_id == "0000:c2:00.0"
    assert topo.gpus[4].bus_id == "0000:cc:00.0"
    assert topo.gpus[7].bus_id == "0000:ea:00.0"
    assert topo.gpus[0].model == "NVIDIA H100 80GB HBM3"  # PCI device 0x2330
    assert topo.nvswitch is True
    assert topo.gpu_links[0][1].kind == "NV"
    assert topo.gpu_links[0][1].nvlinks == 18
    assert len(topo.nics) == 8
    assert {n.rate_gbps for n in topo.nics} == {200.0}
    assert {n.gdr_capable for n in topo.nics} == {True}
    # One emulated bridge per GPU/NIC pair, NICs in reversed order.
    assert {r.nic: r.gpus for r in topo.rails} == {
        "mlx5_7": [0], "mlx5_6": [1], "mlx5_5": [2], "mlx5_4": [3],
        "mlx5_3": [4], "mlx5_2": [5], "mlx5_1": [6], "mlx5_0": [7],
    }
    assert {r.distance for r in topo.rails} == {"PIX"}
    assert topo.gpu_nic_distance["0"]["mlx5_6"] == "PHB"  # same CPU, other root port
    assert topo.gpu_nic_distance["0"]["mlx5_0"] == "SYS"  # other CPU


def test_simai_a100_one_nic_per_gpu_pair_and_front_end_bond(shared_fixtures: Path) -> None:
    topo = _parse(shared_fixtures, "alibaba-simai-8xa100-5x-cx6dx-bond.xml.txt")
    assert [g.compute_capability for g in topo.gpus] == ["8.0"] * 8
    assert [g.numa for g in topo.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert topo.gpus[0].model == "NVIDIA A100-SXM4-80GB"  # PCI device 0x20b2
    assert topo.nvswitch is True
    assert topo.gpu_links[0][7].nvlinks == 12  # 6 x count 2
    assert [n.name for n in topo.nics] == [f"mlx5_bond_{i}" for i in range(5)]
    assert {n.rate_gbps for n in topo.nics} == {200.0}
    assert topo.nics[0].bus_id == "0000:06:00.0"
    assert {r.nic: r.gpus for r in topo.rails} == {
        "mlx5_bond_1": [0, 1], "mlx5_bond_2": [2, 3], "mlx5_bond_3": [4, 5], "mlx5_bond_4": [6, 7],
    }
    assert {r.distance for r in topo.rails} == {"PXB"}  # behind shared Broadcom PEX switches
    # mlx5_bond_0 sits under CPU0 with no GPU beside it: front-end, not a rail.
    assert topo.gpu_nic_distance["0"]["mlx5_bond_0"] == "PHB"
    assert topo.gpu_nic_distance["4"]["mlx5_bond_0"] == "SYS"


def test_doctype_and_entities_are_refused() -> None:
    evil = ('# source: a test\n<?xml version="1.0"?>\n<!DOCTYPE system [<!ENTITY x SYSTEM '
            '"file:///etc/passwd">]>\n<system version="1">&x;</system>\n')
    with pytest.raises(ParseError, match="DOCTYPE 'system' refused") as error:
        parse_nccl_topo_xml(evil, "t.xml")
    assert error.value.line == 3


def test_truncated_xml_keeps_the_complete_elements(shared_fixtures: Path) -> None:
    text = (shared_fixtures / "topo_xml" / "alibaba-simai-8xa100-5x-cx6dx-bond.xml.txt").read_text()
    cut = "\n".join(text.splitlines()[:40])
    topo = parse_nccl_topo_xml(cut, "t.xml")
    assert [g.index for g in topo.gpus] == [0, 1]
    assert [n.name for n in topo.nics] == ["mlx5_bond_0", "mlx5_bond_1"]
    assert {n.seen_by[0] for n in topo.nics} == {"nccl-topo-xml (cut)"}  # not the node's whole NIC list
    assert topo.notes == ["t.xml:40: the XML stops inside <pci> (opened on line 37): it was cut; the complete "
                          "elements before that point are read, the rest of the node is unknown"]


def test_xml_broken_in_the_middle_is_refused(shared_fixtures: Path) -> None:
    lines = (shared_fixtures / "topo_xml" / "alibaba-simai-8xa100-5x-cx6dx-bond.xml.txt").read_text().splitlines()
    broken = "\n".join([*lines[:10], "</gpu>", *lines[10:]])
    with pytest.raises(ParseError, match="not well-formed XML: mismatched tag") as error:
        parse_nccl_topo_xml(broken, "t.xml")
    assert error.value.line == 11


def test_gpu_without_dev_names_its_line() -> None:
    text = ('<system version="1">\n  <cpu numaid="0">\n    <pci busid="0000:01:00.0">\n'
            '      <gpu sm="90"/>\n    </pci>\n  </cpu>\n</system>\n')
    with pytest.raises(ParseError, match="no dev attribute") as error:
        parse_nccl_topo_xml(text, "t.xml")
    assert error.value.line == 4


def test_not_an_nccl_topology() -> None:
    with pytest.raises(ParseError, match="not NCCL's <system>"):
        parse_nccl_topo_xml("<nvidia_smi_log/>", "t.xml")


def test_nesting_past_any_capture_is_refused_with_its_line() -> None:
    # A PCI chain 5,000 switches deep, balanced: before the bound, the cut-closing parser built it
    # and the recursive walk died of RecursionError (an internal error, exit 1).
    deep = '<system version="1">\n<cpu numaid="0">\n' + "<pci>" * 5000 + "</pci>" * 5000 + "\n</cpu></system>\n"
    with pytest.raises(ParseError, match="element 'pci' is nested more than 64 elements deep") as error:
        parse_nccl_topo_xml(deep, "t.xml")
    assert error.value.line == 3
    cut = '<system version="1">\n<cpu numaid="0">\n' + "<pci>" * 5000
    with pytest.raises(ParseError, match="nested more than 64"):
        parse_nccl_topo_xml(cut, "t.xml")
