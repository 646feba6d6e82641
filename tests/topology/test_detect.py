"""Capture recognition, merging, and `gpuctl detect` on every GPU-side real capture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolkit.cli import main
from toolkit.errors import EXIT_PARSE
from toolkit.topology.detect import detect_paths, nccl_version_from, parse_manifest
from toolkit.topology.kinds import recognise, split_transcript

GPU_FIXTURES = [
    "topo/alibaba-lingjun-b300-8gpu-8cx8-bond.txt",
    "topo/dgx-a100-8gpu-12mlx5.txt",
    "topo/dgx1-v100-topo-mp-pcie-view.txt",
    "topo/gcp-a3high-8xh100-no-nic-columns.txt",
    "topo/h100-8gpu-12mlx5-roce-numaoff.txt",
    "gpu_query/gcp-a3high-h100-nvidia-smi-q.txt",
    "gpu_query/h200-vm-query-gpu-214-fields.csv.txt",
    "topo_xml/alibaba-simai-8xa100-5x-cx6dx-bond.xml.txt",
    "topo_xml/ibmcloud-gx3d-8xh100-8cx7vf.xml.txt",
]


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("topo/alibaba-lingjun-b300-8gpu-8cx8-bond.txt", "topo-matrix"),
        ("topo/gcp-a3high-8xh100-no-nic-columns.txt", "topo-matrix"),
        ("gpu_query/gcp-a3high-h100-nvidia-smi-q.txt", "nvsmi-q"),
        ("gpu_query/h200-vm-query-gpu-214-fields.csv.txt", "query-gpu-csv"),
        ("topo_xml/ibmcloud-gx3d-8xh100-8cx7vf.xml.txt", "nccl-topo-xml"),
        ("rdma/h200-node-10cx7-plus-cx6lx-bond-ibv_devinfo.txt", "ibv_devinfo"),
        ("nccl_tests/gcp-a3high-1node-8xh100-allreduce.txt", "nccl-tests"),
        ("nccl_log/h200-4gpu-2rail-mixed-gdr-channels.txt", "nccl-log"),
    ],
)
def test_recognise_real_captures(shared_fixtures: Path, name: str, kind: str) -> None:
    assert recognise((shared_fixtures / name).read_text()) == kind


def test_transcript_is_cut_per_command(shared_fixtures: Path) -> None:
    text = (shared_fixtures / "rdma" / "cx7-roce-show_gids-ibv_devinfo.txt").read_text()
    segments = split_transcript(text)
    assert [(s.first_line, recognise(s.text)) for s in segments] == [
        (3, "show_gids"), (11, "ibv_devinfo")]


@pytest.mark.parametrize("name", GPU_FIXTURES)
def test_gpuctl_detect_each_gpu_capture(shared_fixtures: Path, name: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["detect", str(shared_fixtures / name)]) == 0
    out = capsys.readouterr().out
    assert "GPUs: " in out
    assert "GPUs: none" not in out


@pytest.mark.parametrize("name", GPU_FIXTURES)
def test_gpuctl_detect_json_keys(shared_fixtures: Path, name: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["detect", "--json", str(shared_fixtures / name)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"gpus", "nics", "gpu_nic_distance", "rails", "notes", "sources"} <= set(data)
    assert {"index", "model", "numa"} <= set(data["gpus"][0])
    for nic in data["nics"]:
        assert {"name", "netdev", "link_layer", "state", "rate_gbps", "gid_index"} <= set(nic)


def test_detect_merges_matrix_with_rdma_captures(shared_fixtures: Path) -> None:
    """The numa=off H100 host: its matrix plus its own ibdev2netdev (same host tpgds-aihub0007)."""
    topo = detect_paths([
        shared_fixtures / "topo" / "h100-8gpu-12mlx5-roce-numaoff.txt",
        shared_fixtures / "rdma" / "h100-node-ip-br-ibdev2netdev.txt",
    ])
    nics = {n.name: n for n in topo.nics}
    assert len(nics) == 12
    assert nics["mlx5_3"].netdev == "bond0"
    assert nics["mlx5_9"].netdev == "bond0"
    assert nics["mlx5_4"].state == "Down"
    assert nics["mlx5_10"].state == "Down"
    assert [r.nic for r in topo.rails] == [
        "mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_11"]
    assert any(n.startswith("numa=off: every GPU reports NUMA 0") for n in topo.notes)
    assert any("not rails" in n and "mlx5_3, mlx5_4, mlx5_9, mlx5_10" in n for n in topo.notes)


def test_detect_fills_models_from_query_into_the_matrix(shared_fixtures: Path) -> None:
    """GCP A3 high: matrix (8 GPUs) + -q from a pod holding GPU 0 of the same node type."""
    topo = detect_paths([
        shared_fixtures / "topo" / "gcp-a3high-8xh100-no-nic-columns.txt",
        shared_fixtures / "gpu_query" / "gcp-a3high-h100-nvidia-smi-q.txt",
    ])
    assert len(topo.gpus) == 8
    assert topo.gpus[0].model == "NVIDIA H100 80GB HBM3"
    assert topo.gpus[0].memory_mib == 81559
    assert topo.gpus[0].numa == 0
    assert topo.gpus[1].model is None  # -q saw one GPU only: the others are not guessed
    assert topo.driver_version == "535.309.01"
    assert topo.nvswitch is True
    assert topo.nics == []
    assert topo.rails == []


def test_garbage_file_is_a_parse_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello, world\n")
    assert main(["detect", str(path)]) == EXIT_PARSE
    assert "not a capture gpuctl can read" in capsys.readouterr().err


def test_broken_capture_reports_file_and_line(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "topo.txt"
    path.write_text("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-7\t0\nGPU1\tNV4\n")
    assert main(["detect", str(path)]) == EXIT_PARSE
    err = capsys.readouterr().err
    assert f"{path}:3:" in err
    assert "Traceback" not in err


def _bundle(tmp_path: Path, manifest: str, files: dict[str, str]) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "MANIFEST").write_text(manifest)
    for name, text in files.items():
        (bundle / name).write_text(text)
    return bundle


def test_bundle_with_replay_note_and_failed_nvidia_smi(tmp_path: Path,
                                                       shared_fixtures: Path) -> None:
    topo_text = (shared_fixtures / "topo" / "alibaba-lingjun-b300-8gpu-8cx8-bond.txt").read_text()
    bundle = _bundle(
        tmp_path,
        "# gpuctl gather manifest\nformat: 1\nreplayed: DeepEP #590 Lingjun capture\n"
        "nvidia-smi-topo-m.txt\t0\tnvidia-smi topo -m\n"
        "nvidia-smi-q.xml\t9\tnvidia-smi -q -x\n"
        "ibstat.txt\tmissing\tibstat\n",
        {
            "nvidia-smi-topo-m.txt": topo_text,
            "nvidia-smi-q.xml": "NVIDIA-SMI has failed because it couldn't communicate with the "
                                "NVIDIA driver.\n",
            "hostname.txt": "gpulingjun010006136067\n",
            "proc-cmdline.txt": "BOOT_IMAGE=/vmlinuz ro\n",
        },
    )
    topo = detect_paths([bundle])
    assert topo.hostname == "gpulingjun010006136067"
    assert [r.nic for r in topo.rails] == [f"mlx5_bond_{k}" for k in range(8)]
    assert "replayed capture: DeepEP #590 Lingjun capture" in topo.notes
    assert "not installed on the node: ibstat" in topo.notes
    assert any("nvidia-smi -q -x (exit 9): NVIDIA-SMI has failed" in n for n in topo.notes)


def test_numa_off_confirmed_by_the_kernel_command_line(tmp_path: Path,
                                                       shared_fixtures: Path) -> None:
    text = (shared_fixtures / "topo" / "h100-8gpu-12mlx5-roce-numaoff.txt").read_text()
    bundle = _bundle(tmp_path, "# gpuctl gather manifest\nnvidia-smi-topo-m.txt\t0\tnvidia-smi\n",
                     {"nvidia-smi-topo-m.txt": text, "proc-cmdline.txt": "ro quiet numa=off\n"})
    topo = detect_paths([bundle])
    assert "numa=off: every GPU reports NUMA 0: the kernel command line has numa=off" in topo.notes


def test_manifest_and_nccl_version_helpers() -> None:
    manifest = parse_manifest("# gpuctl gather manifest\nreplayed: x\nibstat.txt\tmissing\tibstat\n")
    assert manifest.meta == {"replayed": "x"}
    assert manifest.status == {"ibstat.txt": "missing"}
    assert nccl_version_from("\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/libnccl.so.2.21.5") == "2.21.5"
    assert nccl_version_from("libnccl2 2.23.4-1+cuda12.6") == "2.23.4"
    assert nccl_version_from("#define NCCL_MAJOR 2\n#define NCCL_MINOR 18\n#define NCCL_PATCH 3\n"
                             ) == "2.18.3"


def test_rdma_only_input_does_not_claim_the_node_has_no_gpu(shared_fixtures: Path) -> None:
    topo = detect_paths([shared_fixtures / "rdma" / "h200-node-10cx7-plus-cx6lx-bond-ibv_devinfo.txt"])
    assert len(topo.nics) == 11
    assert "no GPU capture among the inputs (nvidia-smi, NCCL XML): GPUs unknown" in topo.notes
    assert not any(n.startswith("no GPU found") for n in topo.notes)


# --- evidence, not absence ---------------------------------------------------------------------

CAPTURES = Path(__file__).resolve().parents[1] / "captures"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "captures"
NO_RDMA = Path(__file__).parent / "captures" / "ibv_devinfo-no-devices-softroce-bond-linux-rdma.txt"


def test_a_matrix_without_nic_rows_says_nothing_about_rdma(shared_fixtures: Path) -> None:
    topo = detect_paths([shared_fixtures / "topo" / "gcp-a3high-8xh100-no-nic-columns.txt"])
    assert topo.rdma_devices_listed is None
    assert topo.rdma_evidence == []
    assert ("RDMA devices not known: no capture lists them or says there are none (ibv_devinfo, ibstat, "
            "ibdev2netdev, rdma link, an NCCL topology XML, an NCCL log using NET/IB)") in topo.notes


def test_nccl_tests_output_alone_says_nothing_about_rdma(shared_fixtures: Path) -> None:
    topo = detect_paths([shared_fixtures / "nccl_tests" / "gcp-a3high-1node-8xh100-allreduce.txt"])
    assert topo.rdma_devices_listed is None


def test_an_rdma_tool_that_listed_nothing_is_evidence() -> None:
    topo = detect_paths([NO_RDMA])
    assert topo.rdma_devices_listed is False
    assert topo.rdma_evidence == [f"ibv_devinfo ran and listed no device ({NO_RDMA}: No IB devices found)"]
    assert topo.hostname == "server"


def test_nccl_log_channels_over_net_ib_are_evidence(shared_fixtures: Path) -> None:
    path = shared_fixtures / "nccl_log" / "h100-2node-roce-pxn-ranks8-15.txt"
    topo = detect_paths([path])
    assert topo.rdma_devices_listed is True
    assert topo.rdma_evidence == [
        f"NCCL log: 16 channel connection(s) over NET/IB, 16 with GPUDirect RDMA ({path})"]
    assert topo.hostname == "tpgds-aihub0008"  # the first line's cut "pgds-aihub0008" is not a second host


def test_nccl_no_device_found_is_not_proof(shared_fixtures: Path) -> None:
    path = shared_fixtures / "nccl_log" / "gcp-a3high-2node-socket-fallback-nvls.txt"
    topo = detect_paths([path])
    assert topo.rdma_devices_listed is None
    assert (f"{path}:3: the NCCL log says `NET/IB : No device found`: NCCL found no usable RDMA device in that "
            "run; not taken as proof the node has none (a container without /dev/infiniband, or an NCCL_IB_HCA "
            "that matches nothing, prints the same)") in topo.notes


def test_an_nccl_log_saved_with_nccl_tests_output_is_read_as_a_log() -> None:
    path = CAPTURES / "mixed" / "a100-pcie-2node-gather-trace-roce25g-plus-ib200g-nccl2.16.5.txt"
    assert recognise(path.read_text()) == "nccl-log"
    topo = detect_paths([path])
    assert topo.nccl_version == "2.16.5+cuda11.8"
    assert topo.hostname == "n013"
    assert topo.nccl_log is not None


def test_bundle_rdma_link_that_ran_and_listed_nothing(tmp_path: Path) -> None:
    bundle = _bundle(
        tmp_path,
        "# gpuctl gather manifest\nformat: 1\n"
        "ibv_devinfo-v.txt\tmissing\tibv_devinfo -v\nrdma-link.txt\t0\trdma link show\n",
        {"rdma-link.txt": ""},
    )
    topo = detect_paths([bundle])
    assert topo.rdma_devices_listed is False
    assert topo.rdma_evidence == [f"`rdma link show` ran (exit 0) and listed nothing ({bundle / 'rdma-link.txt'})"]


def test_bundle_rdma_link_that_failed_is_not_evidence(tmp_path: Path) -> None:
    # What `rdma link show` does on a VM without the RDMA netlink family (the gpuctl dev machine).
    bundle = _bundle(
        tmp_path,
        "# gpuctl gather manifest\nformat: 1\nrdma-link.txt\t1\trdma link show\n",
        {"rdma-link.txt": "", "rdma-link.txt.stderr": "Failed to open NETLINK_RDMA socket\n"},
    )
    assert detect_paths([bundle]).rdma_devices_listed is None


# --- one host per bundle -----------------------------------------------------------------------


def test_captures_of_two_hosts_are_reported(shared_fixtures: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """What examples/captures/h100-roce-node used to hold: tpgds-aihub0007's matrix and ibdev2netdev
    with tpgds-aihub0001's show_gids + ibv_devinfo, whose 10.99.91.39 ended up on aihub0007's mlx5_0."""
    folder = tmp_path / "bundle"
    folder.mkdir()
    for name in ("topo/h100-8gpu-12mlx5-roce-numaoff.txt", "rdma/h100-node-ip-br-ibdev2netdev.txt",
                 "rdma/cx7-roce-show_gids-ibv_devinfo.txt"):
        (folder / Path(name).name).write_bytes((shared_fixtures / name).read_bytes())
    topo = detect_paths([folder])
    assert topo.hostname is None
    assert (
        f"the captures come from 2 different hosts: tpgds-aihub0007 ({folder}/h100-8gpu-12mlx5-roce-numaoff.txt:2, "
        f"{folder}/h100-node-ip-br-ibdev2netdev.txt:2); tpgds-aihub0001 ({folder}/cx7-roce-show_gids-ibv_devinfo.txt:2)"
        ". One node's topology must come from that node only: values from the other host (addresses, states, "
        "devices) would be merged into it"
    ) in topo.notes
    assert main(["detect", "--strict", str(folder)]) == EXIT_PARSE
    err = capsys.readouterr().err
    assert f"{folder}/cx7-roce-show_gids-ibv_devinfo.txt: the captures come from 2 different hosts" in err
    assert "Traceback" not in err


def test_the_shipped_example_is_one_host(capsys: pytest.CaptureFixture[str]) -> None:
    topo = detect_paths([EXAMPLES / "h100-roce-node"])
    assert topo.hostname == "tpgds-aihub0007"
    assert not any("different hosts" in n for n in topo.notes)
    assert {n.name: n.netdev for n in topo.nics if n.name in ("mlx5_0", "mlx5_3")} == {
        "mlx5_0": "enp25s0np0", "mlx5_3": "bond0"}
    assert all(n.gid_ipv4 is None for n in topo.nics)  # no other host's GID table
    assert main(["detect", "--strict", str(EXAMPLES / "h100-roce-node")]) == 0
    assert "host tpgds-aihub0007" in capsys.readouterr().out


def test_a_job_log_of_several_hosts_is_not_a_host_conflict() -> None:
    path = CAPTURES / "mixed" / "a100-4node-2gpu-sharp-collnet-fallback-allreduce-info-nccl2.23.4.txt"
    topo = detect_paths([path])
    assert not any("different hosts" in n for n in topo.notes)
    assert any(n.startswith(f"{path}: the NCCL log comes from 4 hosts (") for n in topo.notes)
