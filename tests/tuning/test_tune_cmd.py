"""`gpuctl tune`: output formats, --spec, --set, on the shipped real capture (examples/captures)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.tuning.topologies import EXAMPLES
from toolkit.cli import main


@pytest.fixture
def detected(tmp_path: Path) -> Path:
    """A copy of the shipped h100 capture folder (tpgds-aihub0007) for `gpuctl tune` to read."""
    return Path(shutil.copytree(EXAMPLES / "h100-roce-node", tmp_path / "h100-roce-node"))


def test_default_prints_nccl_conf(detected: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--nccl-version", "2.26.2", str(detected)]) == 0
    out = capsys.readouterr().out
    assert "NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11\n" in out
    assert "# node: tpgds-aihub0007\n" in out


def test_json_with_set_override(detected: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--json", "--set", "NCCL_IB_HCA==mlx5_0", str(detected)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["NCCL_IB_HCA"]["value"] == "=mlx5_0"
    assert data["NCCL_IB_HCA"]["layer"] == "user-override"
    assert data["NCCL_IB_HCA"]["replaced"][0]["layer"] == "topology-rule"


def test_explain_table(detected: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--explain", "--nccl-version", "2.26.2", str(detected)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["KEY", "VALUE", "LAYER"]
    assert any(line.startswith("NCCL_CROSS_NIC") and " 0 " in line and "topology-rule" in line
               for line in out.splitlines())
    assert "(20)" in out  # NCCL_IB_TIMEOUT: a default, shown not pinned


def test_env_format(detected: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--format", "env", str(detected)]) == 0
    assert 'export NCCL_SOCKET_IFNAME="=bond0"\n' in capsys.readouterr().out


def test_bad_set_is_a_usage_error(detected: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--set", "IB_HCA=mlx5_0", str(detected)]) == 2
    assert "expected NCCL_NAME=VALUE" in capsys.readouterr().err


def test_missing_path_is_a_usage_error(detected: Path, tmp_path: Path) -> None:
    assert main(["tune", str(tmp_path / "nope")]) == 2


def test_spec_supplies_fabric_mtu_version_and_overrides(detected: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "cluster.yaml"
    spec.write_text(
        "name: lab\nprovider: local\nnode_pools:\n  - {name: gpu, instance_type: lab, count: 1}\n"
        "network: {fabric: rdma, mtu: 4200, admin_cidr: 10.0.0.0/8}\n"
        "software: {nccl: 2.19.3}\nnccl_overrides: {NCCL_IB_TIMEOUT: 22, NCCL_IB_PCI_RELAXED_ORDERING: true}\n"
        "lifecycle: {ttl: 2h}\n"
    )
    assert main(["tune", "--json", "--spec", str(spec), str(detected)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["NCCL_IB_TIMEOUT"]["value"] == "22"
    assert data["NCCL_IB_TIMEOUT"]["replaced"] == [
        {"layer": "nccl-default", "value": "18", "source": data["NCCL_IB_TIMEOUT"]["replaced"][0]["source"]}
    ]
    assert data["NCCL_IB_PCI_RELAXED_ORDERING"]["value"] == "1"


@pytest.mark.parametrize(("item", "expected"), [
    # A carriage return used to reach NcclSetting and end as an internal error (exit 1).
    ("NCCL_IB_HCA=mlx5_0\r", "--set NCCL_IB_HCA: the value contains a control character U+000D; write the value on "
                             "one line without control characters"),
    # A trailing newline used to be dropped silently by the old pattern's `$`.
    ("NCCL_IB_HCA=mlx5_0\n", "--set NCCL_IB_HCA: the value contains a control character U+000A; write the value on "
                             "one line without control characters"),
    ("NCCL_DEBUG=WARN\x00", "--set NCCL_DEBUG: the value contains a control character U+0000; write the value on one "
                            "line without control characters"),
    ("NCCL_DEBUG={{ 7*7 }}", "--set NCCL_DEBUG: the value contains a template marker '{{'; spec values are data and "
                             "are never evaluated, so write the literal value"),
    ("NCCL_DEBUG=--help", "--set NCCL_DEBUG: the value starts with '-' and would be read as a command-line option; "
                          "remove the leading '-'"),
    ("NCCL_DEBUG=" + "x" * 1024, "--set NCCL_DEBUG: the value is 1024 characters long; at most 1023"),
    ("NCCL_X\n=1", "--set 'NCCL_X\\n=1': expected NCCL_NAME=VALUE (NCCL_ then capital letters, digits and '_', at "
                   "most 128 characters), e.g. --set NCCL_IB_TIMEOUT=22"),
    ("NCCL_" + "A" * 124 + "=1", f"--set 'NCCL_{'A' * 71}...: expected NCCL_NAME=VALUE (NCCL_ then capital letters, "
                                 "digits and '_', at most 128 characters), e.g. --set NCCL_IB_TIMEOUT=22"),
    ("NCCL_NET_PLUGIN=/tmp/evil.so", "--set NCCL_NET_PLUGIN: NCCL_NET_PLUGIN loads a shared library into every NCCL "
                                     "process (NCCL 2.30.7 src/plugin/net.cc:263); a spec cannot declare plugin "
                                     "software for gpuctl to install"),
    ("NCCL_DEBUG_FILE=/etc/passwd", "--set NCCL_DEBUG_FILE: NCCL_DEBUG_FILE names a file NCCL creates or truncates "
                                    "(NCCL 2.30.7 src/debug.cc:103)"),
])
def test_hostile_set_values_are_refused_cleanly(item: str, expected: str, detected: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--set", item, str(detected)]) == 2
    captured = capsys.readouterr()
    assert f"gpuctl tune: error: {expected}" in captured.err
    assert captured.out == ""


def test_set_takes_the_debug_file_in_the_log_directory(detected: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--set", "NCCL_DEBUG_FILE=/var/log/gpuctl/nccl/nccl.%h.%p", "--set", "NCCL_NET_PLUGIN=none",
                 str(detected)]) == 0
    out = capsys.readouterr().out
    assert "\nNCCL_DEBUG_FILE=/var/log/gpuctl/nccl/nccl.%h.%p\n" in out
    assert "\nNCCL_NET_PLUGIN=none\n" in out
