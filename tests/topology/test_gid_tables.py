"""GID tables on their own (issue class: a GID table alone is evidence a device exists).

Every capture is a third-party paste in tests/captures/rdma (line 1 names its source); the facts
below are written out from the captures themselves (tests/captures/INDEX.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.topology import rdma
from toolkit.topology.detect import detect_paths
from toolkit.topology.kinds import recognise

RDMA = Path(__file__).resolve().parents[1] / "captures" / "rdma"


def _nics(name: str) -> list[tuple[str, int | None, int | None, str | None, str | None]]:
    topology = detect_paths([RDMA / name])
    return [(n.name, n.port, n.gid_index, n.gid_ipv4, n.state) for n in topology.nics]


def _notes(name: str) -> list[str]:
    return detect_paths([RDMA / name]).notes


@pytest.mark.parametrize(("name", "expected"), [
    # indented by 22 spaces, prompt included: fe80 at 0/1, IPv4 at 2/3 on both devices
    ("show-gids-indented-22-spaces-prompt-mlx5-0-1-v1-v2-fe80-ipv4-nccl-tests-issue192.txt",
     [("mlx5_0", 1, 3, "11.0.0.72", None), ("mlx5_1", 1, 3, "11.0.0.73", None)]),
    # tab-separated, the table starts at index 4; mlx5_2 is cut after its first (link-local) row
    ("show-gids-tabs-sparse-index-4-7-macvlan-pod-mlx5-0-2-nccl-issue1573.txt",
     [("mlx5_0", 1, 7, "10.152.0.12", None), ("mlx5_1", 1, 7, "10.152.4.12", None),
      ("mlx5_2", 1, None, None, None)]),
    # two fe80 pairs: IPv4 at 4/5
    ("show-gids-space-aligned-cx6-two-fe80-pairs-ipv4-at-idx-4-5-spectrumscale-pr4.txt",
     [("mlx5_0", 1, 5, "172.19.0.60", None)]),
    # IPv4 rows (6/7) before the link-local ones (8/9)
    ("show-gids-sparse-ipv4-idx-6-7-before-fe80-idx-8-9-nccl-pr1587.txt",
     [("mlx5_0", 1, 7, "11.0.4.1", None)]),
    # `ibv_devinfo -vvv -d mlx5_6 | grep GID` flattened onto one line, GID[4] cut mid-value
    ("ibv-devinfo-vvv-grep-gid-flattened-one-line-fe80-ipv4-fc00-juniper-jvd-appendix-d.txt",
     [("mlx5_6", 1, 3, "10.200.1.10", None)]),
])
def test_a_gid_table_alone_lists_its_devices_with_the_roce_v2_ipv4_index(name: str, expected: list[object]) -> None:
    assert _nics(name) == expected
    topology = detect_paths([RDMA / name])
    assert topology.rdma_devices_listed is True
    assert any("the device(s) exist, but a GID table does not say whether a port is up" in n
               for n in topology.notes)


def test_two_tables_with_prose_between_keep_the_first_and_name_both_indexes() -> None:
    name = "show-gids-two-pods-prose-between-ipv4-only-idx-4-5-vs-6-7-plus-nccl-2.13.4-multus-issue1100.txt"
    text = (RDMA / name).read_text()
    notes: list[str] = []
    gids = rdma.parse_show_gids(text, name, notes)
    assert [(g.device, g.index, g.ipv4, g.type, g.netdev) for g in gids] == [
        ("mlx5_4", 4, "172.20.1.1", "RoCE v1", "net1"), ("mlx5_4", 5, "172.20.1.1", "RoCE v2", "net1")]
    assert notes == [f"{name}: 2 show_gids tables list mlx5_4 port 1 (from different hosts or pods?); its RoCE v2 "
                     "IPv4 GID index by table: table 1: 5, table 2: 7; table 1 is kept: give each host's capture "
                     "on its own"]
    # the NCCL log in the same paste is read too: NCCL used mlx5_4 over RoCE
    assert _nics(name) == [("mlx5_4", 1, 5, "172.20.1.1", None)]
    assert detect_paths([RDMA / name]).nics[0].seen_by == ["nccl-log", "show_gids"]


def test_gid_lines_of_an_unnamed_device_give_the_index_in_a_note_and_no_device() -> None:
    name = "ibv-devinfo-v-broadcom-bnxt-re-port-down-gid-0-1-fe80-v1-v2-ucx-issue11048.txt"
    assert recognise((RDMA / name).read_text()) == "gid-lines"
    assert _nics(name) == []
    assert (f"{RDMA / name}: GID lines without the device they belong to (no `-d` or hca_id line): the device is not "
            "known; its RoCE v2 GID with an IPv4 address: none in these lines") in _notes(name)


def test_gids_without_a_roce_version_leave_the_index_unknown() -> None:
    name = "ibv-devinfo-v-port-gid-14-15-only-no-type-suffix-bold-marker-k8s-rdma-shared-dev-plugin-issue164.txt"
    notes: list[str] = []
    gids = rdma.parse_gid_lines((RDMA / name).read_text(), name, notes)
    assert [(g.index, g.ipv4, g.type) for g in gids] == [(14, "192.168.6.6", None), (15, "192.168.6.6", None)]
    assert any("printed without `, RoCE v1/v2`" in n for n in notes)
    assert _nics(name) == []  # the device (mlx5_0) is named only in the line-1 source note, not in the paste


def test_a_sysfs_cat_of_a_glob_reports_the_gids_but_never_an_index() -> None:
    name = "sysfs-cat-gids-head-4-rxe-fe80-ipv4-zero-rows-backticked-rxe-dev-issue79.txt"
    notes: list[str] = []
    assert rdma.parse_gid_lines((RDMA / name).read_text(), name, notes) == []
    assert notes == [f"{name}: a `cat` of sysfs GID files of a device the glob picked: 2 GID(s) set (IPv4 1.1.1.2); "
                     "their indexes and RoCE versions cannot be read from it (the shell lists the files 0, 1, 10, "
                     "100, ... without names, and gid_attrs/types is not in it): run show_gids, or grep . on the "
                     "gids/ and types/ files"]
    assert _nics(name) == []

