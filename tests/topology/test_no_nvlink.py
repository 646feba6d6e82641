"""Plain `topo -m` of GPUs without NVLink is never called a PCIe-only view (issue class 6).

Real third-party matrices in tests/captures/topo; each keeps the `NV#` legend line and has no NV# cell.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.topology.detect import detect_paths
from toolkit.topology.nvsmi_topo import parse_topo_matrix

TOPO = Path(__file__).resolve().parents[1] / "captures" / "topo"


@pytest.mark.parametrize(("name", "links"), [
    ("2x-rtx5090-tabs-phb-then-p2p-rw-matrix-gns-club-3090-issue1229.txt", [["X", "PHB"], ["PHB", "X"]]),
    ("4gpu-rtx4090-a6000-all-phb-single-numa-legend-then-shell-prompt-aikitoria-issue1.txt",
     [["X", "PHB", "PHB", "PHB"], ["PHB", "X", "PHB", "PHB"], ["PHB", "PHB", "X", "PHB"], ["PHB", "PHB", "PHB", "X"]]),
    ("5gpu-consumer-pcie-sys-phb-node-2-numa-no-nics-club-3090-issue46.txt",
     [["X", "SYS", "SYS", "SYS", "SYS"], ["SYS", "X", "PHB", "NODE", "NODE"], ["SYS", "PHB", "X", "NODE", "NODE"],
      ["SYS", "NODE", "NODE", "X", "PHB"], ["SYS", "NODE", "NODE", "PHB", "X"]]),
    ("l40s-4gpu-no-nvlink-only-mlx5-dual-port-card-node-to-gpu2-3-sys-to-gpu0-1-warpem-issue106.txt",
     [["X", "NODE", "SYS", "SYS"], ["NODE", "X", "SYS", "SYS"], ["SYS", "SYS", "X", "NODE"],
      ["SYS", "SYS", "NODE", "X"]]),
])
def test_a_plain_matrix_without_nvlink_is_no_pcie_only_view(name: str, links: list[list[str]]) -> None:
    topology = detect_paths([TOPO / name])
    assert [[cell.kind for cell in row] for row in topology.gpu_links] == links
    assert topology.pcie_only_view is False
    assert not any("PCIe-only" in n or "legend ends" in n for n in topology.notes)


def test_a_legend_cut_before_its_nv_line_says_nvlink_is_unknown() -> None:
    # The L40S capture cut (as a paste cuts it) just before its last legend line, `NV# = ...`.
    name = "l40s-4gpu-no-nvlink-only-mlx5-dual-port-card-node-to-gpu2-3-sys-to-gpu0-1-warpem-issue106.txt"
    text = (TOPO / name).read_text()
    cut = text[: text.index("  NV#")]
    topology = parse_topo_matrix(cut, name)
    assert topology.pcie_only_view is False
    assert (f"{name}: the legend ends before its `NV#` line (cut?): whether this is a PCIe-only view (topo -mp) is not "
            "known, so neither is NVLink") in topology.notes


def test_a_whole_topo_mp_legend_is_still_a_pcie_only_view() -> None:
    topology = detect_paths([TOPO / "h100-ib-8gpu-12nic-topo-mp-tabs-3nic-per-switch.txt"])
    assert topology.pcie_only_view is True
