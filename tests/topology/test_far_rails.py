"""The only RDMA NIC behind the CPU is still the GPUs' rail (issue class 5), on real captures.

Distance alone does not make a NIC a front-end port when no NIC shares a PCIe switch with any GPU:
then each GPU's nearest NICs carry its traffic.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.topology.detect import detect_paths
from toolkit.topology.rails import select_rails

TOPO = Path(__file__).resolve().parents[1] / "captures" / "topo"


@pytest.mark.parametrize(("name", "rails"), [
    # 4x L40S, one dual-port card (mlx5_0/mlx5_1 PIX to each other): NODE to GPU2/3, SYS to GPU0/1
    ("l40s-4gpu-no-nvlink-only-mlx5-dual-port-card-node-to-gpu2-3-sys-to-gpu0-1-warpem-issue106.txt",
     [("mlx5_0", [2, 3], "NODE"), ("mlx5_1", [2, 3], "NODE")]),
    # 4 GPUs NV4, four mlx5 columns (old format, no NIC Legend), NODE to GPU0/1 and SYS to GPU2/3;
    # the matrix sits in a markdown fence that closes right after it
    ("4gpu-nv4-4-mlx5-all-node-or-sys-old-format-plus-ifconfig-ib0-ib1-nccl-issue634.txt",
     [("mlx5_0", [0, 1], "NODE"), ("mlx5_1", [0, 1], "NODE"), ("mlx5_2", [0, 1], "NODE"),
      ("mlx5_3", [0, 1], "NODE")]),
])
def test_each_gpus_nearest_nics_are_its_rails_when_none_is_on_its_switch(name: str, rails: list[object]) -> None:
    topology = detect_paths([TOPO / name])
    assert [(r.nic, r.gpus, r.distance) for r in topology.rails] == rails
    assert not any(n.startswith("not rails") for n in topology.notes)
    choice = select_rails(topology)
    assert choice.names == []  # no RDMA tool says the ports are up: no device list yet
    assert choice.notes[0].startswith("no RDMA NIC shares a PCIe switch with a GPU: each GPU's nearest NICs are its "
                                      "rails: ")


def test_a_matrix_cut_in_its_gpu_rows_is_still_refused() -> None:
    # 8x H100 with 4 CX-7 RoCE NICs, PHB/NODE/SYS only; the paste stops after GPU6's row.
    from toolkit.errors import ParseError

    with pytest.raises(ParseError, match="the header names GPU7, NIC0, NIC1, NIC2, NIC3 but the matrix has no row"):
        detect_paths([TOPO / "h100-8gpu-4-cx7-roce-nics-phb-node-sys-no-pix-cut-after-gpu6-monarch-issue3759.txt"])
