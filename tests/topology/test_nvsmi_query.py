"""`nvidia-smi --query-gpu` CSV, `-q` text and `-q -x` XML parsers."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.errors import ParseError
from toolkit.topology.nvsmi_query import (
    normalise_bus_id,
    parse_nvsmi_q,
    parse_nvsmi_q_xml,
    parse_query_gpu_csv,
)


def test_h200_query_gpu_214_fields(shared_fixtures: Path) -> None:
    path = shared_fixtures / "gpu_query" / "h200-vm-query-gpu-214-fields.csv.txt"
    topo = parse_query_gpu_csv(path.read_text(), str(path))
    assert len(topo.gpus) == 1
    gpu = topo.gpus[0]
    assert gpu.index == 0
    assert gpu.model == "NVIDIA H200"
    assert gpu.memory_mib == 143771
    assert gpu.bus_id == "0000:83:00.0"
    assert gpu.compute_capability == "9.0"
    assert gpu.numa is None  # query-gpu has no NUMA field: not guessed
    assert topo.driver_version == "580.173.02"
    assert topo.nvswitch is True  # fabric.state Completed, fabric.status Success
    assert topo.notes == []


def test_gcp_h100_nvidia_smi_q(shared_fixtures: Path) -> None:
    path = shared_fixtures / "gpu_query" / "gcp-a3high-h100-nvidia-smi-q.txt"
    topo = parse_nvsmi_q(path.read_text(), str(path))
    assert topo.driver_version == "535.309.01"
    assert topo.cuda_version == "12.2"
    assert len(topo.gpus) == 1
    gpu = topo.gpus[0]
    assert gpu.model == "NVIDIA H100 80GB HBM3"
    assert gpu.memory_mib == 81559  # FB total, not BAR1's 131072
    assert gpu.bus_id == "0000:04:00.0"
    assert gpu.uuid == "GPU-f8844f98-2150-7cb7-b4d2-93705d00c323"
    assert topo.nvswitch is True  # Fabric State Completed / Status Success
    assert any("passed through to a VM" in note for note in topo.notes)


CSV_HEADER = "index, name, pci.bus_id, memory.total [MiB], compute_cap, fabric.state, fabric.status\n"


def test_csv_missing_values_and_fabric_not_ready() -> None:
    text = CSV_HEADER + (
        "0, NVIDIA A10, 00000000:17:00.0, 23028 MiB, 8.6, [N/A], N/A\n"
        "1, NVIDIA H100 80GB HBM3, 00000000:18:00.0, , 9.0, In Progress, N/A\n"
    )
    topo = parse_query_gpu_csv(text, "q.csv")
    assert [g.memory_mib for g in topo.gpus] == [23028, None]
    assert topo.nvswitch is True
    assert any("NVSwitch fabric not ready (In Progress/None)" in n for n in topo.notes)


def test_csv_truncated_row_names_the_line() -> None:
    text = CSV_HEADER + "0, NVIDIA A10, 00000000:17:00.0\n"
    with pytest.raises(ParseError, match="3 values for 7 columns") as error:
        parse_query_gpu_csv(text, "q.csv")
    assert error.value.line == 2


def test_csv_memory_that_is_not_a_size() -> None:
    text = CSV_HEADER + "0, NVIDIA A10, 00000000:17:00.0, lots, 8.6, N/A, N/A\n"
    with pytest.raises(ParseError, match="'lots' is not a size in MiB"):
        parse_query_gpu_csv(text, "q.csv")


def test_q_text_truncated_before_the_announced_gpus(shared_fixtures: Path) -> None:
    text = (shared_fixtures / "gpu_query" / "gcp-a3high-h100-nvidia-smi-q.txt").read_text()
    text = text.replace("Attached GPUs                             : 1",
                        "Attached GPUs                             : 2")
    with pytest.raises(ParseError, match="Attached GPUs : 2` but 1 GPU sections"):
        parse_nvsmi_q(text, "q.txt")


def test_q_text_bad_memory_names_its_line(shared_fixtures: Path) -> None:
    lines = (shared_fixtures / "gpu_query" / "gcp-a3high-h100-nvidia-smi-q.txt").read_text()
    lines = lines.replace("Total                             : 81559 MiB",
                          "Total                             : 81559 GB")
    with pytest.raises(ParseError) as error:
        parse_nvsmi_q(lines, "q.txt")
    assert error.value.line == 97  # "        Total  : 81559 MiB" in the capture


# CONSTRUCTED, not captured: no real `nvidia-smi -q -x` output is in shared/fixtures yet. The
# element names are those of NVIDIA's published nvsmi_device DTD (nvidia_smi_log, driver_version,
# cuda_version, attached_gpus, gpu@id, product_name, uuid, minor_number, fb_memory_usage/total,
# pci/pci_bus_id, fabric/state|status); values echo the real -q capture above. Replace with a
# real capture when one is found.
CONSTRUCTED_Q_XML = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
  <driver_version>535.309.01</driver_version>
  <cuda_version>12.2</cuda_version>
  <attached_gpus>2</attached_gpus>
  <gpu id="00000000:04:00.0">
    <product_name>NVIDIA H100 80GB HBM3</product_name>
    <uuid>GPU-f8844f98-2150-7cb7-b4d2-93705d00c323</uuid>
    <minor_number>0</minor_number>
    <pci><pci_bus_id>00000000:04:00.0</pci_bus_id></pci>
    <fb_memory_usage><total>81559 MiB</total></fb_memory_usage>
    <fabric><state>Completed</state><status>Success</status></fabric>
  </gpu>
  <gpu id="00000000:05:00.0">
    <product_name>NVIDIA H100 80GB HBM3</product_name>
    <pci><pci_bus_id>00000000:05:00.0</pci_bus_id></pci>
    <fb_memory_usage><total>N/A</total></fb_memory_usage>
    <fabric><state>Completed</state><status>Success</status></fabric>
  </gpu>
</nvidia_smi_log>
"""


def test_q_xml_constructed_from_dtd_element_names() -> None:
    topo = parse_nvsmi_q_xml(CONSTRUCTED_Q_XML, "q.xml")
    assert topo.driver_version == "535.309.01"
    assert topo.cuda_version == "12.2"
    assert [(g.index, g.bus_id, g.memory_mib) for g in topo.gpus] == [
        (0, "0000:04:00.0", 81559), (1, "0000:05:00.0", None)]
    assert topo.gpus[0].model == "NVIDIA H100 80GB HBM3"
    assert topo.nvswitch is True


def test_q_xml_internal_dtd_and_entities_are_refused() -> None:
    evil = ('<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log [\n<!ENTITY a "aaaa">\n]>\n'
            "<nvidia_smi_log>&a;</nvidia_smi_log>\n")
    with pytest.raises(ParseError, match="refused") as error:
        parse_nvsmi_q_xml(evil, "q.xml")
    assert error.value.line is not None


def test_q_xml_truncated_names_the_line() -> None:
    truncated = CONSTRUCTED_Q_XML.split("<fabric>")[0]
    with pytest.raises(ParseError, match="not well-formed XML") as error:
        parse_nvsmi_q_xml(truncated, "q.xml")
    assert error.value.line == 13  # the end of the input, where the document stops


def test_bus_ids_are_normalised() -> None:
    assert normalise_bus_id("00000000:83:00.0") == "0000:83:00.0"
    assert normalise_bus_id("0000:0A:00.0") == "0000:0a:00.0"
