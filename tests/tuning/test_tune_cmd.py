"""`gpuctl tune`: output formats, --spec, --set; the parsers are stubbed until detect lands."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from tests.tuning import topologies as topo
from toolkit.cli import main
from toolkit.topology.model import Topology


@pytest.fixture
def detected(monkeypatch: pytest.MonkeyPatch) -> list[list[Path]]:
    """Replace detect_paths with one returning the h100 capture's topology; records its calls."""
    calls: list[list[Path]] = []

    def detect_paths(paths: list[Path]) -> Topology:
        calls.append(paths)
        return topo.h100_numaoff()

    module = types.ModuleType("toolkit.topology.detect")
    module.detect_paths = detect_paths  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "toolkit.topology.detect", module)
    return calls


def test_default_prints_nccl_conf(detected: list[list[Path]], tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--nccl-version", "2.26.2", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_5,mlx5_6,mlx5_7,mlx5_8,mlx5_11\n" in out
    assert detected == [[tmp_path]]


def test_json_with_set_override(detected: list[list[Path]], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--json", "--set", "NCCL_IB_HCA==mlx5_0", str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["NCCL_IB_HCA"]["value"] == "=mlx5_0"
    assert data["NCCL_IB_HCA"]["layer"] == "user-override"
    assert data["NCCL_IB_HCA"]["replaced"][0]["layer"] == "topology-rule"


def test_explain_table(detected: list[list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--explain", "--nccl-version", "2.26.2", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["KEY", "VALUE", "LAYER"]
    assert any(line.startswith("NCCL_CROSS_NIC") and " 0 " in line and "topology-rule" in line
               for line in out.splitlines())
    assert "(20)" in out  # NCCL_IB_TIMEOUT: a default, shown not pinned


def test_env_format(detected: list[list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--format", "env", str(tmp_path)]) == 0
    assert 'export NCCL_SOCKET_IFNAME="=bond0"\n' in capsys.readouterr().out


def test_bad_set_is_a_usage_error(detected: list[list[Path]], tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--set", "IB_HCA=mlx5_0", str(tmp_path)]) == 2
    assert "expected NCCL_NAME=VALUE" in capsys.readouterr().err


def test_missing_path_is_a_usage_error(detected: list[list[Path]], tmp_path: Path) -> None:
    assert main(["tune", str(tmp_path / "nope")]) == 2


def test_spec_supplies_fabric_mtu_version_and_overrides(detected: list[list[Path]], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "cluster.yaml"
    spec.write_text(
        "name: lab\nprovider: local\nnode_pools:\n  - {name: gpu, instance_type: lab, count: 1}\n"
        "network: {fabric: rdma, mtu: 4200, admin_cidr: 10.0.0.0/8}\n"
        "software: {nccl: 2.19.3}\nnccl_overrides: {NCCL_IB_TIMEOUT: 22, NCCL_IB_PCI_RELAXED_ORDERING: true}\n"
        "lifecycle: {ttl: 2h}\n"
    )
    assert main(["tune", "--json", "--spec", str(spec), str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["NCCL_IB_TIMEOUT"]["value"] == "22"
    assert data["NCCL_IB_TIMEOUT"]["replaced"] == [
        {"layer": "nccl-default", "value": "18", "source": data["NCCL_IB_TIMEOUT"]["replaced"][0]["source"]}
    ]
    assert data["NCCL_IB_PCI_RELAXED_ORDERING"]["value"] == "1"
