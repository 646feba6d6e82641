"""Software RoCE and other vendors' RDMA devices (issue class 4), on real third-party captures.

Soft-RoCE is never a rail; another vendor's hardware may be one, named as what it is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.topology.detect import detect_paths
from toolkit.topology.log_check import judge_log
from toolkit.topology.nccl_log import parse_nccl_log
from toolkit.topology.rdma_kinds import rdma_kind
from toolkit.tuning.engine import infer_fabric, tune

CAPTURES = Path(__file__).resolve().parents[1] / "captures"
SOFT_ROCE = ("Soft-RoCE (rxe): RDMA emulated by the kernel over an Ethernet interface, no RDMA hardware and no "
             "GPUDirect RDMA")


def _tuned(path: Path) -> tuple[str | None, list[str]]:
    topology = detect_paths([path])
    config = tune(topology, fabric=infer_fabric(topology), mtu=None, nccl_version="2.26.2", overrides={})
    return config.value("NCCL_IB_HCA"), config.notes


@pytest.mark.parametrize(("name", "device"), [
    # ibv_devinfo of rxe0: vendor_id 0x0000, fw 0.0.0, no link_layer line, PORT_ACTIVE
    ("ibv-devinfo-softroce-rxe0-vendor-id-0x0000-no-link-layer-line-rxe-dev-issue46.txt", "rxe0"),
    # rdma link: `link rxe_0/1 state ACTIVE ... netdev p1p1`
    ("rdma-link-show-softroce-rxe-underscore-0-netdev-p1p1-ip-addr-3fs-issue263.txt", "rxe_0"),
])
def test_soft_roce_is_never_written_as_a_rail(name: str, device: str) -> None:
    topology = detect_paths([CAPTURES / "rdma" / name])
    [nic] = topology.nics
    assert (nic.name, nic.state, nic.link_layer) == (device, "PORT_ACTIVE" if device == "rxe0" else "ACTIVE", None)
    hca, notes = _tuned(CAPTURES / "rdma" / name)
    assert hca is None
    assert f"{device}: {SOFT_ROCE}: never a rail" in notes
    assert f"{device}: {SOFT_ROCE}: never a rail" in topology.notes


def test_a_broadcom_device_is_a_rail_named_as_what_it_is() -> None:
    name = "rdma-link-rdma-dev-ibstat-broadcom-bnxt-re0-active-bnxt-re1-down-trailing-spaces-ucx-issue11048.txt"
    topology = detect_paths([CAPTURES / "rdma" / name])
    nic = next(n for n in topology.nics if n.name == "bnxt_re0")
    assert (nic.model, nic.state) == ("Broadcom NetXtreme-C/E RoCE Driver HCA", "Active")
    hca, notes = _tuned(CAPTURES / "rdma" / name)
    assert hca == "=bnxt_re0"
    assert ("bnxt_re0: Broadcom NetXtreme RoCE (bnxt_re), not an mlx5 ConnectX or eRDMA device, which gpuctl's "
            "tuning rules and checks are written for; check this device's bandwidth with ib_write_bw before relying "
            "on it") in notes


@pytest.mark.parametrize(("name", "devices", "kind"), [
    # Intel E810 renamed by rdma-core's udev rule to its PCI path: the name says no vendor
    ("nccl-2.10.3-intel-e810-irdma-net-ib-using-rocep216s0f1-roce-libi40iw-warning-nccl-issue622.txt",
     ["rocep216s0f1"], "unknown"),
    ("nccl-2.21.5-l40-irdma0-irdma3-roce-ibext-v8-plugin-two-hosts-nccl-tests-issue227.txt",
     ["irdma0", "irdma3"], "other"),
])
def test_intel_irdma_devices_in_nccl_logs(name: str, devices: list[str], kind: str) -> None:
    summary = parse_nccl_log((CAPTURES / "nccl_log" / name).read_text(), name)
    assert summary.ib_device_names == devices
    topology = detect_paths([CAPTURES / "nccl_log" / name])
    assert [rdma_kind(n).kind for n in topology.nics] == [kind] * len(devices)
    assert "software-rdma" not in [f.code for f in judge_log(summary).findings]


def test_check_log_warns_when_nccl_lists_software_rdma() -> None:
    # The check on a summary model (no real log with Soft-RoCE in NCCL's NET/IB list was found with a
    # source to cite); the parser side of `NET/IB : Using` is covered by the real logs above.
    from toolkit.topology.log_check import check_log
    from toolkit.topology.nccl_log import IbDevice, NcclLogSummary

    summary = NcclLogSummary(source="model", ib_devices=[IbDevice(index=0, name="rxe0", port=1, link_layer="RoCE",
                                                                  line=3)], ib_lines=[3])
    [finding] = [f for f in check_log(summary) if f.code == "software-rdma"]
    assert (finding.severity, finding.lines) == ("warning", [3])
    assert finding.message == f"NCCL's NET/IB uses rxe0: {SOFT_ROCE}; this is not the fabric of a GPU cluster"
