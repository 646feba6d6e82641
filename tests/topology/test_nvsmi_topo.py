"""`nvidia-smi topo -m` / `-mp` parser, on every real capture in shared/fixtures/topo (INDEX facts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.errors import ParseError
from toolkit.topology.model import Topology
from toolkit.topology.nvsmi_topo import parse_topo_matrix


def _parse(shared_fixtures: Path, name: str) -> Topology:
    path = shared_fixtures / "topo" / name
    return parse_topo_matrix(path.read_text(), str(path))


def _rails(topo: Topology) -> dict[str, list[int]]:
    return {rail.nic: rail.gpus for rail in topo.rails}


def test_dgx_a100_old_format_nic_columns_named_directly(shared_fixtures: Path) -> None:
    topo = _parse(shared_fixtures, "dgx-a100-8gpu-12mlx5.txt")
    assert [g.numa for g in topo.gpus] == [3, 3, 1, 1, 7, 7, 5, 5]
    assert topo.gpus[0].cpu_affinity == "48-63,176-191"
    assert topo.gpus[4].cpu_affinity == "112-127,240-255"
    assert [n.name for n in topo.nics] == [f"mlx5_{i}" for i in range(12)]
    assert all(link.kind == "NV" and link.nvlinks == 12
               for i, row in enumerate(topo.gpu_links) for j, link in enumerate(row) if i != j)
    assert topo.gpu_links[3][3].kind == "X"
    assert topo.gpu_nic_distance["0"]["mlx5_0"] == "PXB"
    assert topo.gpu_nic_distance["0"]["mlx5_4"] == "SYS"
    # mlx5_4/5 and mlx5_10/11 are PIX pairs with no GPU near: not rails.
    assert _rails(topo) == {
        "mlx5_0": [0, 1], "mlx5_1": [0, 1], "mlx5_2": [2, 3], "mlx5_3": [2, 3],
        "mlx5_6": [4, 5], "mlx5_7": [4, 5], "mlx5_8": [6, 7], "mlx5_9": [6, 7],
    }
    assert {r.distance for r in topo.rails} == {"PXB"}
    assert topo.pcie_only_view is False
    assert topo.nvswitch is True  # 7 peers x NV12 is more links than an A100 has


def test_dgx1_topo_mp_is_a_pcie_only_view(shared_fixtures: Path) -> None:
    topo = _parse(shared_fixtures, "dgx1-v100-topo-mp-pcie-view.txt")
    assert topo.pcie_only_view is True
    assert topo.nvswitch is None  # not "False": -mp hides NVLink
    assert [g.numa for g in topo.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [topo.gpu_links[a][b].kind for a, b in [(0, 1), (2, 3), (4, 5), (6, 7)]] == ["PIX"] * 4
    assert topo.gpu_links[0][2].kind == "PHB"
    assert topo.gpu_links[0][4].kind == "SYS"
    assert _rails(topo) == {"mlx5_0": [0, 1], "mlx5_1": [2, 3], "mlx5_2": [4, 5], "mlx5_3": [6, 7]}
    assert {r.distance for r in topo.rails} == {"PIX"}
    assert any("PCIe-only view" in note for note in topo.notes)


def test_h100_numa_off_with_nic_legend(shared_fixtures: Path) -> None:
    topo = _parse(shared_fixtures, "h100-8gpu-12mlx5-roce-numaoff.txt")
    assert [g.numa for g in topo.gpus] == [0] * 8
    assert {g.cpu_affinity for g in topo.gpus} == {"0-191"}
    assert [n.name for n in topo.nics] == [f"mlx5_{i}" for i in range(12)]
    assert topo.gpu_links[0][1].nvlinks == 18
    assert _rails(topo) == {
        "mlx5_0": [0], "mlx5_1": [1], "mlx5_2": [2], "mlx5_5": [3],
        "mlx5_6": [4], "mlx5_7": [5], "mlx5_8": [6], "mlx5_11": [7],
    }
    assert "mlx5_3" not in _rails(topo)
    assert "mlx5_9" not in _rails(topo)
    assert any(note.startswith("numa=off: every GPU reports NUMA 0") for note in topo.notes)


def test_lingjun_b300_space_aligned_bond_rails(shared_fixtures: Path) -> None:
    topo = _parse(shared_fixtures, "alibaba-lingjun-b300-8gpu-8cx8-bond.txt")
    assert [g.numa for g in topo.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert topo.gpus[0].cpu_affinity == "0-63,128-191"
    assert topo.gpus[7].cpu_affinity == "64-127,192-255"
    assert [n.name for n in topo.nics] == [f"mlx5_bond_{k}" for k in range(8)]
    assert _rails(topo) == {f"mlx5_bond_{k}": [k] for k in range(8)}
    assert {r.distance for r in topo.rails} == {"PXB"}
    assert topo.gpu_nic_distance["0"]["mlx5_bond_1"] == "NODE"
    assert topo.gpu_nic_distance["0"]["mlx5_bond_4"] == "SYS"
    assert topo.gpu_links[7][0].nvlinks == 18
    assert not any(note.startswith("numa=off") for note in topo.notes)


def test_gcp_ansi_header_and_no_nics(shared_fixtures: Path) -> None:
    topo = _parse(shared_fixtures, "gcp-a3high-8xh100-no-nic-columns.txt")
    assert len(topo.gpus) == 8
    assert [g.numa for g in topo.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert topo.gpus[0].cpu_affinity == "0-51,104-155"
    assert topo.gpus[4].cpu_affinity == "52-103,156-207"
    assert topo.nics == []
    assert topo.rails == []
    assert topo.gpu_nic_distance == {"0": {}, "1": {}, "2": {}, "3": {}, "4": {}, "5": {}, "6": {},
                                     "7": {}}
    assert topo.gpu_links[0][7].nvlinks == 18


HEADER = "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"


def test_truncated_row_names_the_line() -> None:
    text = HEADER + "GPU0\t X \tNV4\tPIX\t0-7\t0\t\tN/A\nGPU1\tNV4\n"
    with pytest.raises(ParseError) as error:
        parse_topo_matrix(text, "t.txt")
    assert error.value.line == 3
    assert "t.txt:3" in str(error.value)


def test_missing_rows_are_a_truncated_matrix() -> None:
    text = HEADER + "GPU0\t X \tNV4\tPIX\t0-7\t0\t\tN/A\n\nLegend:\n"
    with pytest.raises(ParseError, match="GPU1, NIC0"):
        parse_topo_matrix(text, "t.txt")


def test_unknown_cell_is_refused() -> None:
    text = HEADER + "GPU0\t X \tNVX\tPIX\t0-7\t0\n"
    with pytest.raises(ParseError, match="NVX") as error:
        parse_topo_matrix(text, "t.txt")
    assert error.value.line == 2


def test_no_header_is_refused() -> None:
    with pytest.raises(ParseError, match="no `nvidia-smi topo -m` header"):
        parse_topo_matrix("hello\nworld\n", "t.txt")


def test_numa_range_and_na_stay_unknown_and_nic_legend_missing_is_noted() -> None:
    text = HEADER + (
        "GPU0\t X \tPHB\tPIX\t0-15\t0-1\t\tN/A\n"
        "GPU1\tPHB\t X \tSYS\t0-15\tN/A\t\tN/A\n"
        "NIC0\tPIX\tSYS\t X \n"
    )
    topo = parse_topo_matrix(text, "t.txt")
    assert [g.numa for g in topo.gpus] == [None, None]
    assert [n.name for n in topo.nics] == ["NIC0"]
    assert any("no NIC Legend for NIC0" in note for note in topo.notes)
