"""The hostfile's forms and the choice of address, without a cluster (the lab scale test runs it on
16 ready nodes and one failed one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import FakeDriver
from toolkit.cli import main
from toolkit.errors import UsageError
from toolkit.jobs import hostfile
from toolkit.jobs.hostfile import Host, Ready, fabric_address, render
from toolkit.providers.base import FabricInterface, NodeOutput

HOSTS = [Host("c-n-0", "10.1.0.10", 8), Host("c-n-1", "10.1.0.11", 8)]


def test_each_launcher_gets_its_own_form() -> None:
    assert render(HOSTS, "mpirun") == "10.1.0.10 slots=8\n10.1.0.11 slots=8\n"
    assert render(HOSTS, "deepspeed") == "10.1.0.10 slots=8\n10.1.0.11 slots=8\n"
    assert render(HOSTS, "plain") == "10.1.0.10\n10.1.0.11\n"
    assert render(HOSTS, "torchrun") == ("--nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d "
                                         "--rdzv-endpoint=10.1.0.10:29400\n")


def test_torchrun_refuses_nodes_of_different_gpu_counts_and_nothing_ready_is_an_error() -> None:
    with pytest.raises(UsageError, match=r"different GPU counts \(4, 8\)"):
        render([*HOSTS, Host("c-m-0", "10.1.0.20", 4)], "torchrun")
    with pytest.raises(UsageError, match="no node of the cluster is ready"):
        render([], "mpirun")


def node(*interfaces: FabricInterface) -> NodeOutput:
    return NodeOutput(name="c-n-0", pool="n", instance_id="i-0", instance_type="t", private_ip="192.168.0.5",
                      ssh_host="47.0.0.5", fabric_interfaces=list(interfaces))


def test_the_address_is_the_fabric_side_one() -> None:
    assert fabric_address(node(FabricInterface(name="eth1", ipv4="10.1.0.10/24")), []) == "10.1.0.10"
    # Found on the node (Tencent HCC bonds): that first.
    assert fabric_address(node(), ["10.2.0.7", "10.2.1.7"]) == "10.2.0.7"
    # No fabric address at all: the private one.
    assert fabric_address(node(FabricInterface(name="eth1")), []) == "192.168.0.5"


def test_the_command_prints_the_file_and_names_what_it_left_out(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr("toolkit.commands.hostfile.driver_for", lambda spec, args: FakeDriver())
    monkeypatch.setattr(hostfile, "ready_hosts", lambda outputs, paths: Ready(
        hosts=HOSTS[:1], left_out={"lab-node-1": "failed at 2026-12-02T10:00:00Z: mtu: check: ping failed"}))
    assert main(["hostfile", "examples/local-lab.yaml"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "10.1.0.10 slots=8\n"
    assert captured.err.splitlines()[-1] == ("gpuctl hostfile: left out lab-node-1: failed at 2026-12-02T10:00:00Z: "
                                             "mtu: check: ping failed")
