"""Cut, garbled and oddly encoded captures: keep what is complete, mark the rest unknown, refuse only
when nothing usable is left, never echo a huge line back. Each case is a real capture with one
minimal change (cut at a line, or re-encoded) to show the truncation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolkit.cli import main
from toolkit.errors import EXIT_PARSE, ParseError
from toolkit.topology import rdma
from toolkit.topology.detect import detect_paths
from toolkit.topology.nvsmi_topo import parse_topo_matrix
from toolkit.topology.rails import is_active, select_rails

CAPTURES = Path(__file__).resolve().parents[1] / "captures"
H200 = "rdma/h200-node-10cx7-plus-cx6lx-bond-ibv_devinfo.txt"
H100_TOPO = "topo/h100-8gpu-12mlx5-roce-numaoff.txt"
H100_IBDEV = "rdma/h100-node-ip-br-ibdev2netdev.txt"


def _lines(shared_fixtures: Path, name: str) -> list[str]:
    return (shared_fixtures / name).read_text().splitlines()


def test_ibv_devinfo_cut_in_its_second_device_keeps_the_first(shared_fixtures: Path) -> None:
    # Lines 1-27: the first device (mlx5_0) whole, the second (mlx5_1) up to its board_id.
    cut = "\n".join(_lines(shared_fixtures, H200)[:30])
    notes: list[str] = []
    nics = rdma.parse_ibv_devinfo(cut, "h200.txt", notes)
    assert [(n.name, n.state) for n in nics] == [("mlx5_0", "PORT_ACTIVE"), ("mlx5_1", None)]
    assert nics[1].fw_ver == "28.42.1000"
    assert notes == ["h200.txt:22: device mlx5_1 has no `port:` section: output truncated?; its state is unknown"]


def test_ibv_devinfo_cut_in_a_state_line_is_not_an_active_port(shared_fixtures: Path) -> None:
    lines = _lines(shared_fixtures, H200)
    assert lines[32].endswith("state:                  PORT_ACTIVE (4)")  # line 33: mlx5_1's port 1
    cut = "\n".join([*lines[:32], lines[32].removesuffix("IVE (4)")])  # "... PORT_ACT", nothing after
    notes: list[str] = []
    nics = rdma.parse_ibv_devinfo(cut, "h200.txt", notes)
    assert [(n.name, n.state) for n in nics] == [("mlx5_0", "PORT_ACTIVE"), ("mlx5_1", None)]
    assert not is_active(nics[1])
    assert notes == ["h200.txt:33: port 1 of mlx5_1: state 'PORT_ACT' is cut (expected e.g. `PORT_ACTIVE (4)`); "
                     "its state is unknown"]


def test_ibv_devinfo_with_nothing_usable_left_is_refused(shared_fixtures: Path) -> None:
    lines = _lines(shared_fixtures, "rdma/cx7-roce-show_gids-ibv_devinfo.txt")
    state = next(i for i, line in enumerate(lines) if "state:" in line)
    cut = "\n".join([*lines[:state], lines[state].removesuffix("IVE (4)")])
    with pytest.raises(ParseError, match=r"port 1 of mlx5_0: state 'PORT_ACT' is cut") as caught:
        rdma.parse_ibv_devinfo(cut, "cx7.txt")
    assert caught.value.line == state + 1


def test_cut_ibv_devinfo_through_detect_leaves_the_cut_device_out_of_the_rails(
        shared_fixtures: Path, tmp_path: Path) -> None:
    path = tmp_path / "ibv_devinfo.txt"
    path.write_text("\n".join(_lines(shared_fixtures, H200)[:30]))
    topo = detect_paths([path])
    assert {n.name: n.state for n in topo.nics} == {"mlx5_0": "PORT_ACTIVE", "mlx5_1": None}
    choice = select_rails(topo)
    assert choice.names == []  # a listing the capture stops in is not every device of the node
    assert choice.unknown == ["mlx5_1"]
    assert any(n.startswith(f"{path}:22: device mlx5_1 has no `port:` section") for n in topo.notes)


def test_ibstat_cut_in_a_port_keeps_the_complete_cas() -> None:
    lines = (CAPTURES / "rdma" / "ibstat-cx4lx-25g-eth-plus-cx6-200g-ib-2-ports-down.txt").read_text().splitlines()
    assert lines[43].strip() == "State: Active"  # line 44: mlx5_2's port 1
    cut = "\n".join([*lines[:43], lines[43].removesuffix("ive")])
    notes: list[str] = []
    nics = rdma.parse_ibstat(cut, "ibstat.txt", notes)
    assert [(n.name, n.state) for n in nics] == [("mlx5_0", "Active"), ("mlx5_1", "Down"), ("mlx5_2", None)]
    assert notes == ["ibstat.txt:44: port 1 of mlx5_2: State 'Act' is cut; its state is unknown"]


def test_ibdev2netdev_cut_in_its_last_line(shared_fixtures: Path) -> None:
    lines = _lines(shared_fixtures, H100_IBDEV)
    assert lines[30] == "mlx5_8 port 1 ==> enp187s0np0 (Up)"
    cut = "\n".join([*lines[:30], "mlx5_8 port 1 ==> enp187"])
    notes: list[str] = []
    mapping = rdma.parse_ibdev2netdev(cut, "ib.txt", notes)
    assert len(mapping) == 10
    assert "mlx5_8" not in mapping
    assert notes == ["ib.txt:31: the last ibdev2netdev line is cut ('mlx5_8 port 1 ==> enp187'): left out"]


def test_topo_cut_in_a_nic_row_keeps_the_gpu_rows(shared_fixtures: Path) -> None:
    lines = _lines(shared_fixtures, H100_TOPO)
    assert lines[22].startswith("NIC11\t")
    cut = "\n".join([*lines[:22], lines[22][:30]])
    topo = parse_topo_matrix(cut, "t.txt")
    assert len(topo.gpus) == 8
    assert topo.gpu_nic_distance["7"]["NIC11"] == "PIX"  # no NIC Legend left: names unknown
    assert "t.txt:23: the capture is cut in row NIC11: NIC rows mirror the GPU rows, which are complete" in topo.notes
    assert "t.txt: no NIC Legend for NIC0, NIC1, NIC2, NIC3, NIC4, NIC5, NIC6, NIC7, NIC8, NIC9, NIC10, NIC11: " \
           "device names unknown" in topo.notes


def test_topo_cut_in_the_nic_legend_does_not_use_the_cut_name(shared_fixtures: Path) -> None:
    lines = _lines(shared_fixtures, H100_TOPO)
    assert lines[47] == "  NIC11: mlx5_11"
    cut = "\n".join([*lines[:47], "  NIC11: mlx5_1"])  # stops one character early
    topo = parse_topo_matrix(cut, "t.txt")
    assert topo.gpu_nic_distance["7"]["NIC11"] == "PIX"
    assert topo.gpu_nic_distance["1"]["mlx5_1"] == "PIX"
    assert ("t.txt:48: the capture stops in the NIC Legend line for NIC11 ('mlx5_1'): the name may be cut, "
            "so it is not used") in topo.notes


def test_topo_cut_in_the_legend_with_ibdev2netdev_writes_no_rail_list(shared_fixtures: Path, tmp_path: Path) -> None:
    lines = _lines(shared_fixtures, H100_TOPO)
    topo_path = tmp_path / "topo.txt"
    topo_path.write_text("\n".join([*lines[:47], "  NIC11: mlx5_1"]))
    topo = detect_paths([topo_path, shared_fixtures / H100_IBDEV])
    choice = select_rails(topo)
    assert choice.names == []  # GPU7's NIC has no name: a list of the other 7 would leave it out
    assert choice.unknown == ["NIC11"]


def test_topo_x_off_the_diagonal_is_refused(shared_fixtures: Path) -> None:
    lines = _lines(shared_fixtures, H100_TOPO)
    row = lines[4].split("\t")  # GPU1: "GPU1, NV18, X, ..."
    row[1], row[2] = row[2], row[1]  # a shifted column
    text = "\n".join([*lines[:4], "\t".join(row), *lines[5:]]) + "\n"
    with pytest.raises(ParseError, match="row GPU1: X in column GPU0: columns shifted or misread") as caught:
        parse_topo_matrix(text, "t.txt")
    assert caught.value.line == 5


def test_topo_asymmetry_is_noted(shared_fixtures: Path) -> None:
    lines = _lines(shared_fixtures, H100_TOPO)
    assert lines[11].startswith("NIC0\tPIX\t")
    text = "\n".join([*lines[:11], lines[11].replace("NIC0\tPIX\t", "NIC0\tNODE\t", 1), *lines[12:]]) + "\n"
    topo = parse_topo_matrix(text, "t.txt")
    assert topo.gpu_nic_distance["0"]["mlx5_0"] == "PIX"  # the GPU rows are used
    assert "t.txt: the matrix is not symmetric (GPU0->NIC0 PIX but NIC0->GPU0 NODE): the GPU rows are used" \
        in topo.notes


def test_glued_columns_are_split_again() -> None:
    path = CAPTURES / "topo" / "a100-sxm4-8gpu-10cx6-nps4-glued-columns.txt"
    topo = parse_topo_matrix(path.read_text(), "glued.txt")
    assert [n.name for n in topo.nics] == [f"mlx5_{i}" for i in range(10)]
    assert {r.nic: r.gpus for r in topo.rails} == {
        "mlx5_0": [0, 1], "mlx5_1": [0, 1], "mlx5_2": [2, 3], "mlx5_3": [2, 3],
        "mlx5_4": [4, 5], "mlx5_5": [4, 5], "mlx5_6": [6, 7], "mlx5_7": [6, 7],
    }
    assert topo.gpu_nic_distance["6"]["mlx5_7"] == "PXB"
    assert topo.gpu_nic_distance["6"]["mlx5_8"] == "SYS"
    assert [g.numa for g in topo.gpus] == [3, 3, 1, 1, 7, 7, 5, 5]
    assert "glued.txt: some columns were glued together in the paste (like `SYSSYS`): split again" in topo.notes


def test_a_huge_line_is_not_echoed_whole(shared_fixtures: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    lines = _lines(shared_fixtures, H100_TOPO)
    huge = "NV" + "9x" * 2_000_000  # a 4 MB cell where NV18 was
    path = tmp_path / "topo.txt"
    path.write_text("\n".join([*lines[:4], lines[4].replace("NV18", huge, 1), *lines[5:]]) + "\n")
    assert main(["detect", str(path)]) == EXIT_PARSE
    err = capsys.readouterr().err
    assert f"{path}:5: unknown topo -m cell 'NV9x9x9x" in err
    assert "... (4,000,002 characters)" in err
    assert len(err) < 600


@pytest.mark.parametrize(
    ("encoding", "bom", "note"),
    [
        ("utf-16-le", b"\xff\xfe", "the file is UTF-16 LE (byte-order mark), not UTF-8: decoded as UTF-16"),
        ("utf-16-le", b"", "the file is UTF-16 LE without a byte-order mark (a NUL byte between the characters), "
                           "not UTF-8: decoded as UTF-16"),
    ],
)
def test_utf16_capture_is_decoded_and_named(shared_fixtures: Path, tmp_path: Path, encoding: str, bom: bytes,
                                            note: str, capsys: pytest.CaptureFixture[str]) -> None:
    # What PowerShell's `nvidia-smi topo -m > topo.txt` writes.
    path = tmp_path / "topo.txt"
    path.write_bytes(bom + (shared_fixtures / H100_TOPO).read_text().encode(encoding))
    assert main(["detect", "--json", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert f"{path}: {note}" in data["notes"]
    assert len(data["gpus"]) == 8
    assert data["gpu_nic_distance"]["7"]["mlx5_11"] == "PIX"


def test_nccl_topology_xml_cut_in_a_nic_keeps_the_complete_switches() -> None:
    """nccl-tests #256, bare-metal fs-207: the dump stops right after an opening <nic>."""
    path = CAPTURES / "topo_xml" / "h200-baremetal-topo-dump-cut-mid-nic.xml.txt"
    topo = detect_paths([path])
    assert topo.hostname == "fs-207"
    assert [(g.index, g.bus_id, g.compute_capability) for g in topo.gpus] == [
        (0, "0000:18:00.0", "9.0"), (1, "0000:2a:00.0", "9.0"), (2, "0000:3a:00.0", "9.0")]
    assert {nic.name: nic.bus_id for nic in topo.nics} == {
        "mlx5_0": "0000:19:00.0", "mlx5_1": "0000:29:00.0", "mlx5_2": "0000:3b:00.0"}
    assert {r.nic: r.gpus for r in topo.rails} == {"mlx5_0": [0], "mlx5_1": [1], "mlx5_2": [2]}
    assert (f"{path}:54: the XML stops inside <nic> (opened on line 54): it was cut; the complete elements before "
            "that point are read, the rest of the node is unknown") in topo.notes
    assert not any(n.startswith("numa=off") for n in topo.notes)  # NUMA 0 only because the rest is cut
    assert select_rails(topo).names == []  # 3 of the node's NICs: a list of them would leave the others out


def test_nccl_topology_xml_of_a_vm_without_closing_tags() -> None:
    """nccl-tests #256, the same host as a KVM VM: numaid -1, GPU and NIC straight under the CPU."""
    topo = detect_paths([CAPTURES / "topo_xml" / "h200-kvm-vm-topo-dump-flat-numaid-minus1-excerpt.xml.txt"])
    assert [(g.bus_id, g.numa) for g in topo.gpus] == [("0000:05:00.0", None)]
    assert topo.nvswitch is True
    assert topo.gpu_nic_distance == {"0": {"mlx5_0": "PHB"}}
    assert [n.rate_gbps for n in topo.nics] == [400.0]
