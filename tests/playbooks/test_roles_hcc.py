"""Tencent HCC nodes, whose provider reports no fabric interface: the rdma role's discover.yml
finds the RDMA bonds' netdevs and addresses in sysfs, and gpuctl keeps what it found.

The role runs for real with ansible-playbook on localhost, against a fake /sys/class/infiniband
tree and a stand-in `ip` (nothing of this machine is read or changed). The tree's GID table is the
real `show_gids` capture in the shared fixtures (rdma/cx7-roce-show_gids-ibv_devinfo.txt: mlx5_0,
RoCE v1/v2 link-local GIDs at 0/1, the IPv4 10.99.91.39 at 2/3, netdev ens108np0); the capture
shows no prefix length, so the stand-in `ip` says /24 (stated here, not captured)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import shared_fixture
from tests.playbooks.test_roles_rails import run_play
from toolkit.configure.discovered import DISCOVERY_TASK, discovered_interfaces, peer_addresses
from toolkit.paths import ROLES_PATH

SHOW_GIDS = "rdma/cx7-roce-show_gids-ibv_devinfo.txt"
GID_TYPES = {"v1": "IB/RoCE v1", "v2": "RoCE v2"}  # show_gids' VER column -> the sysfs type text


def gid_rows(text: str) -> list[list[str]]:
    """The show_gids table rows: DEV PORT INDEX GID [IPv4] VER NETDEV."""
    return [line.split() for line in text.splitlines() if line.startswith("mlx5_") and "\t1\t" in line]


def fake_ib(root: Path, rows: list[list[str]], rename: dict[str, str] | None = None) -> Path:
    """/sys/class/infiniband with each row's GID, type and netdev under ports/1 (devices renamed)."""
    ib = root / "infiniband"
    for row in rows:
        dev, index, gid, ver, netdev = row[0], row[2], row[3], row[-2], row[-1]
        dev = (rename or {}).get(dev, dev)
        port = ib / dev / "ports" / "1"
        for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
            (port / sub).mkdir(parents=True, exist_ok=True)
        (port / "gids" / index).write_text(gid + "\n")
        (port / "gid_attrs" / "types" / index).write_text(GID_TYPES[ver] + "\n")
        (port / "gid_attrs" / "ndevs" / index).write_text(netdev + "\n")
    return ib


def stand_in_ip(root: Path, addresses: dict[str, str]) -> Path:
    """An `ip` that answers `ip -o -4 addr show dev NETDEV scope global` as iproute2 prints it."""
    script = root / "ip"
    cases = "".join(f'  {dev}) echo "7: {dev}    inet {cidr} brd + scope global {dev}       valid_lft forever" ;;\n'
                    for dev, cidr in addresses.items())
    # argv: -o -4 addr show dev NETDEV scope global
    script.write_text(f'#!/bin/sh\n[ "$7" = scope ] || exit 2\ncase $6 in\n{cases}esac\n')
    script.chmod(0o755)
    return script


def discover(tmp_path: Path, ib: Path, ip: Path, glob: str) -> tuple[int, str, Any]:
    play: dict[str, Any] = {"tasks": [
        {"name": "Discover", "ansible.builtin.include_role": {"name": "rdma", "tasks_from": "discover.yml"}},
        {"name": "Show", "ansible.builtin.copy": {
            "dest": str(tmp_path / "facts.json"), "mode": "0600",
            "content": "{{ {'interfaces': gpuctl_fabric_interfaces, 'first': gpuctl_fabric_interface, "
                       "'ip': gpuctl_fabric_ip, 'stdout': rdma_discovered.stdout} | to_json }}"}},
    ]}
    # The inventory's empty fabric as play vars (extra vars would outrank the facts the role sets).
    play["vars"] = {"gpuctl_fabric_discover": True, "gpuctl_fabric_interfaces": [], "gpuctl_fabric_interface": "",
                    "gpuctl_fabric_ip": ""}
    extra = {"rdma_sys_class_dir": str(ib), "rdma_discover_glob": glob, "rdma_ip_command": str(ip)}
    rc, log = run_play(tmp_path, play, extra)
    facts = json.loads((tmp_path / "facts.json").read_text()) if (tmp_path / "facts.json").exists() else None
    return rc, log, facts


def test_discovery_finds_the_roce_v2_netdev_and_its_address_from_a_real_gid_table(tmp_path: Path) -> None:
    rows = gid_rows(shared_fixture(SHOW_GIDS).read_text())
    assert [r[2] for r in rows] == ["0", "1", "2", "3"]
    # The capture's mlx5_0 twice, as the two bonds of an HCC node would show (names as HCC's).
    ib = fake_ib(tmp_path, rows, {"mlx5_0": "mlx5_bond_0"})
    fake_ib(tmp_path, [[*r[:-1], "bond1"] for r in rows], {"mlx5_0": "mlx5_bond_10"})
    fake_ib(tmp_path, [[*r[:-1], "bond2"] for r in rows], {"mlx5_0": "mlx5_bond_2"})
    ip = stand_in_ip(tmp_path, {"ens108np0": "10.99.91.39/24", "bond1": "10.99.92.39/24", "bond2": "10.99.93.39/24"})
    rc, log, facts = discover(tmp_path, ib, ip, "mlx5_bond_*")
    assert rc == 0, log
    # Natural device order: mlx5_bond_2 before mlx5_bond_10.
    assert facts["interfaces"] == [
        {"rdma_device": "mlx5_bond_0", "name": "ens108np0", "ipv4": "10.99.91.39/24"},
        {"rdma_device": "mlx5_bond_2", "name": "bond2", "ipv4": "10.99.93.39/24"},
        {"rdma_device": "mlx5_bond_10", "name": "bond1", "ipv4": "10.99.92.39/24"},
    ]
    assert facts["first"] == "ens108np0"
    assert facts["ip"] == "10.99.91.39/24"
    # gpuctl reads the same lines back from the run's events for its record.
    assert discovered_interfaces(facts["stdout"]) == facts["interfaces"]


def test_discovery_fails_a_node_without_a_usable_bond_and_says_why(tmp_path: Path) -> None:
    rows = gid_rows(shared_fixture(SHOW_GIDS).read_text())
    ib = fake_ib(tmp_path, rows, {"mlx5_0": "mlx5_bond_0"})
    ip = stand_in_ip(tmp_path, {})  # rdma-agent has not given the bond its address yet
    rc, log, _ = discover(tmp_path, ib, ip, "mlx5_bond_*")
    assert rc != 0
    assert "none was found on it" in log
    assert "noaddress mlx5_bond_0 ens108np0" in log


def test_discovery_refuses_a_netdev_name_that_reads_as_an_option(tmp_path: Path) -> None:
    rows = gid_rows(shared_fixture(SHOW_GIDS).read_text())
    ib = fake_ib(tmp_path, [[*r[:-1], "-oProxyCommand"] for r in rows], {"mlx5_0": "mlx5_bond_0"})
    ip = stand_in_ip(tmp_path, {})
    rc, log, _ = discover(tmp_path, ib, ip, "mlx5_bond_*")
    assert rc != 0
    assert "badname mlx5_bond_0" in log


def test_discovered_lines_keep_only_well_formed_interfaces() -> None:
    stdout = "\n".join([
        '{"rdma_device": "mlx5_bond_0", "name": "bond0", "ipv4": "30.159.184.22/24"}',
        '{"rdma_device": "mlx5_bond_1", "name": "{{ lookup(\'pipe\', \'id\') }}", "ipv4": "30.159.184.23/24"}',
        '{"rdma_device": "mlx5_bond_2", "name": "bond2", "ipv4": "not-an-address"}',
        "noaddress mlx5_bond_3 bond3",
        "{not json",
    ])
    assert discovered_interfaces(stdout) == [
        {"name": "bond0", "ipv4": "30.159.184.22/24", "rdma_device": "mlx5_bond_0"}]
    assert peer_addresses(["b", "c"], {"b": ["30.7.0.2", "30.7.1.2"], "a": ["30.7.0.1"]}) == ["30.7.0.2", "30.7.1.2"]


def test_the_discovery_task_name_is_the_one_gpuctl_listens_for() -> None:
    text = (ROLES_PATH / "rdma" / "tasks" / "discover.yml").read_text()
    assert f"- name: {DISCOVERY_TASK}\n" in text


pytestmark = pytest.mark.unit


# ------------------------------------------------------------------------------------ configure side

def hcc_outputs(count: int) -> Any:
    """Tencent outputs as the provider writes them: no fabric interface (the bonds are not in its API)."""
    from tests.playbooks.test_render import tencent_outputs

    outputs = tencent_outputs()
    template = outputs.nodes[0]
    nodes = [template.model_copy(update={"name": f"hcc-v100-gpu-{i}", "fabric_interfaces": []}) for i in range(count)]
    return outputs.model_copy(update={"nodes": nodes})


def test_an_hcc_node_without_fabric_outputs_is_marked_for_discovery_with_peers_by_name() -> None:
    from tests.playbooks.test_render import tencent_spec
    from toolkit.configure.render import inventory_data, render_playbook
    from toolkit.paths import Paths

    outputs = hcc_outputs(4)
    data = inventory_data(tencent_spec(), outputs, Paths(Path("/gpuctl-home/clusters/hcc-v100")), "")
    host = data.hosts["hcc-v100-gpu-0"]
    assert host["gpuctl_fabric_discover"] is True
    assert host["gpuctl_fabric_interfaces"] == []
    assert "gpuctl_mtu_peers" not in host
    # peers.peers_of's pattern, by node name: strides 1 and 2.
    assert host["gpuctl_mtu_peer_nodes"] == ["hcc-v100-gpu-1", "hcc-v100-gpu-2"]
    assert data.hosts["hcc-v100-gpu-2"]["gpuctl_mtu_peer_nodes"] == ["hcc-v100-gpu-3"]
    assert data.hosts["hcc-v100-gpu-3"]["gpuctl_mtu_peer_nodes"] == ["hcc-v100-gpu-0"]  # the last pings the first
    site = render_playbook(outputs, Paths(Path("/gpuctl-home/clusters/hcc-v100")))
    assert "tasks_from: discover.yml" in site
    assert site.index("tasks_from: discover.yml") < site.index("  roles:")


def test_the_record_of_a_discovered_node_holds_the_bonds_and_the_peers_addresses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.playbooks.test_render import tencent_spec
    from toolkit.configure import converge
    from toolkit.configure.render import inventory_data
    from toolkit.paths import Paths

    outputs = hcc_outputs(2)
    data = inventory_data(tencent_spec(), outputs, Paths(tmp_path), "")
    found = [{"name": "bond0", "ipv4": "30.7.0.31/24", "rdma_device": "mlx5_bond_0"},
             {"name": "bond1", "ipv4": "30.7.1.31/24", "rdma_device": "mlx5_bond_1"}]
    record = converge.write_record(tmp_path, "hcc-v100-gpu-0", ["rdma"], data, identity={"boot_id": "b"},
                                   packages={}, found=found, found_peers=["30.7.0.32", "30.7.1.32"])
    assert record["expect"]["fabric_interfaces"] == ["bond0", "bond1"]
    assert record["expect"]["addresses"] == ["30.7.0.31", "30.7.1.31"]
    assert record["expect"]["peers"] == ["30.7.0.32", "30.7.1.32"]
    script = converge.probe_script(record)
    assert "/sys/class/net/bond1/mtu" in script
    assert "30.7.1.32" in script
