"""Topologies of real captures, read through the real parsers (`detect_paths`), for tuning tests.

Every function but `erdma_node` reads real captures: the repository's own (examples/captures,
tests/topology/captures, tests/captures) or the shared fixtures beside the checkout, which a test
skips without (one reason, see tests/conftest.py). Which capture each reads is in its docstring;
the facts it yields are in shared/fixtures/INDEX.md and tests/captures/INDEX.md.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO, shared_fixture
from toolkit.topology.detect import detect_paths
from toolkit.topology.model import Interface, Nic, Topology

EXAMPLES = REPO / "examples" / "captures"
TOPOLOGY_CAPTURES = REPO / "tests" / "topology" / "captures"
CAPTURES = REPO / "tests" / "captures"


def _detect(*paths: Path) -> Topology:
    return detect_paths(list(paths))


def h100_numaoff() -> Topology:
    """examples/captures/h100-roce-node: topo -m + ip -br a + ibdev2netdev of tpgds-aihub0007
    (shared/fixtures topo/h100-8gpu-12mlx5-roce-numaoff.txt and rdma/h100-node-ip-br-ibdev2netdev.txt)."""
    return _detect(EXAMPLES / "h100-roce-node")


def cx7_show_gids() -> Topology:
    """rdma/cx7-roce-show_gids-ibv_devinfo.txt (tpgds-aihub0001: show_gids + ibv_devinfo -d mlx5_0)."""
    return _detect(shared_fixture("rdma/cx7-roce-show_gids-ibv_devinfo.txt"))


def h200_devinfo() -> Topology:
    """rdma/h200-node-10cx7-plus-cx6lx-bond-ibv_devinfo.txt (11 hca_ids, no topo -m)."""
    return _detect(shared_fixture("rdma/h200-node-10cx7-plus-cx6lx-bond-ibv_devinfo.txt"))


def dgx_a100() -> Topology:
    """topo/dgx-a100-8gpu-12mlx5.txt (old format: NIC columns named mlx5_N; topo -m only)."""
    return _detect(shared_fixture("topo/dgx-a100-8gpu-12mlx5.txt"))


def simai_a100() -> Topology:
    """topo_xml/alibaba-simai-8xa100-5x-cx6dx-bond.xml.txt (Alibaba SimAI, sm=80, NVSwitch c0-c5)."""
    return _detect(shared_fixture("topo_xml/alibaba-simai-8xa100-5x-cx6dx-bond.xml.txt"))


def lingjun_b300() -> Topology:
    """examples/captures/lingjun-b300-node: topo -m of gpulingjun010006136067 (space-aligned
    excerpt; shared/fixtures topo/alibaba-lingjun-b300-8gpu-8cx8-bond.txt). No RDMA tool output."""
    return _detect(EXAMPLES / "lingjun-b300-node")


def gcp_a3high_no_nics() -> Topology:
    """topo/gcp-a3high-8xh100-no-nic-columns.txt (GKE pod: 8x H100 NV18, no NIC columns)."""
    return _detect(shared_fixture("topo/gcp-a3high-8xh100-no-nic-columns.txt"))


def lab_sockets_only() -> Topology:
    """tests/topology/captures/host-ip-j-addr.json.txt: `ip -j addr` of the gpuctl dev machine (no GPU,
    no RDMA tool output): eth0 192.0.2.2/24, MTU 1400."""
    return _detect(TOPOLOGY_CAPTURES / "host-ip-j-addr.json.txt")


def mixed_25g_roce_200g_ib() -> Topology:
    """tests/captures/rdma/ibstat-cx4lx-25g-eth-plus-cx6-200g-ib-2-ports-down.txt (host n013, ibstat only)."""
    return _detect(CAPTURES / "rdma" / "ibstat-cx4lx-25g-eth-plus-cx6-200g-ib-2-ports-down.txt")


def erdma_node(mtu: int) -> Topology:
    """An Alibaba eRDMA node as Alibaba's pages describe it (erdma_0 behind eth0), MTU given.

    Not a capture: the one real eRDMA capture (tests/topology/captures/erdma-h20-...) has no
    interface list, and the LL128 rule needs the interface MTU. So this is the shape the
    documentation gives (device prefix erdma, eth0, vendor 0x1ded), without provenance.
    """
    return Topology(
        hostname="erdma-node",
        nics=[Nic(name="erdma_0", netdev="eth0", transport="eRDMA", vendor_id="0x1ded",
                  state="PORT_ACTIVE", link_layer="Ethernet")],
        interfaces=[Interface(name="eth0", state="UP", mtu=mtu, ipv4=["10.42.0.7/24"])],
    )
