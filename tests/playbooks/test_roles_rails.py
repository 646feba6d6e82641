"""Every rail, not only the first: the mtu role on every fabric interface (persisted only after the
peer check, never as a half netplan config, through NetworkManager where it owns the interface), the
erdma role's device count by kernel driver, and the count gpuctl derives from the catalog.

The roles run for real by ansible-playbook on localhost against fake /sys trees and a stand-in
nmcli that logs its arguments (nothing of this machine is changed: every MTU already matches, or
the run is in check mode). netplan itself is not installed here: the rendered YAML is checked."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.conftest import SHARED_FIXTURES, shared_fixture
from toolkit.catalog.store import load_catalog
from toolkit.configure.rdma_devices import min_rdma_devices
from toolkit.paths import ROLES_PATH

BIN = Path(sys.executable).parent
# A real ibv_devinfo listing (DeepEP issue #355): ten ConnectX-7 ports mlx5_0..7, 10, 11 and a bond.
DEVINFO = SHARED_FIXTURES / "rdma" / "h200-node-10cx7-plus-cx6lx-bond-ibv_devinfo.txt"


@pytest.fixture
def devinfo_capture() -> Path:
    """The capture above, or a skip with the one shared-fixtures reason (a failure in CI)."""
    return shared_fixture("rdma/h200-node-10cx7-plus-cx6lx-bond-ibv_devinfo.txt")


def run_play(tmp_path: Path, play: dict[str, Any], extra: dict[str, Any], *, check: bool = False,
             env: dict[str, str] | None = None) -> tuple[int, str]:
    play = {"hosts": "localhost", "connection": "local", "gather_facts": False, **play}
    (tmp_path / "play.yml").write_text(yaml.safe_dump([play]))
    (tmp_path / "extra.json").write_text(json.dumps({"ansible_python_interpreter": sys.executable, **extra}))
    done = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", "localhost,", "play.yml", "-e", "@extra.json",
         *(["--check"] if check else [])],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300,
        env={**os.environ, "ANSIBLE_ROLES_PATH": str(ROLES_PATH), "ANSIBLE_NOCOLOR": "1", **(env or {})},
    )
    return done.returncode, done.stdout + done.stderr


# ------------------------------------------------------------------------------------ mtu role

def node(tmp_path: Path, mtus: dict[str, int]) -> dict[str, Any]:
    """Extra vars for the mtu role on a fake node whose interfaces have `mtus`; no peers to ping."""
    for name, mtu in mtus.items():
        (tmp_path / "sys" / name).mkdir(parents=True)
        (tmp_path / "sys" / name / "mtu").write_text(f"{mtu}\n")
    names = list(mtus)
    return {
        "gpuctl_mtu": 8500, "gpuctl_fabric_interface": names[0], "gpuctl_fabric_ip": "10.0.0.1/24",
        "gpuctl_fabric_interfaces": [{"name": n, "ipv4": "", "rdma_device": ""} for n in names],
        "gpuctl_mtu_peers": [],
        "mtu_sys_net_dir": str(tmp_path / "sys"), "mtu_nmcli": str(tmp_path / "no-nmcli"),
        "mtu_netplan_dir": str(tmp_path / "netplan"), "mtu_ifcfg_dir": str(tmp_path / "ifcfg"),
        "mtu_ifupdown_dir": str(tmp_path / "network"), "mtu_networkd_dir": str(tmp_path / "networkd"),
    }


CLOUD_INIT = """\
network:
  version: 2
  ethernets:
    eth0:
      match: {macaddress: "00:16:3e:00:00:01"}
      set-name: eth0
      dhcp4: true
"""


def test_mtu_merges_into_the_netplan_definition_of_each_rail_and_writes_no_half_config(tmp_path: Path) -> None:
    extra = node(tmp_path, {"eth0": 8500, "eth1": 8500})
    (tmp_path / "netplan").mkdir()
    (tmp_path / "netplan" / "50-cloud-init.yaml").write_text(CLOUD_INIT)
    rc, log = run_play(tmp_path, {"roles": ["mtu"]}, extra)
    assert rc == 0, log
    assert sorted(p.name for p in (tmp_path / "netplan").iterdir()) == ["50-cloud-init.yaml",
                                                                       "60-gpuctl-mtu-eth0.yaml"]
    # Only `mtu`, under the ID cloud-init defined eth0 with: a merge, the addressing stays there.
    written = yaml.safe_load((tmp_path / "netplan" / "60-gpuctl-mtu-eth0.yaml").read_text())
    assert written == {"network": {"version": 2, "ethernets": {"eth0": {"mtu": 8500}}}}
    # No netplan file names eth1: a file with only its MTU would take it over without an address.
    assert "eth1: no netplan file defines eth1 by name" in log
    # The same run again changes nothing.
    rc, log = run_play(tmp_path, {"roles": ["mtu"]}, extra)
    assert rc == 0, log
    assert "changed=0" in log


def test_mtu_merges_a_bond_under_bonds(tmp_path: Path) -> None:
    extra = node(tmp_path, {"bond0": 8500})
    (tmp_path / "netplan").mkdir()
    (tmp_path / "netplan" / "50-hcc.yaml").write_text(
        "network:\n  version: 2\n  bonds:\n    bond0:\n      interfaces: [eth1, eth2]\n"
        "      addresses: [30.7.0.31/24]\n      parameters: {mode: 802.3ad}\n")
    rc, log = run_play(tmp_path, {"roles": ["mtu"]}, extra)
    assert rc == 0, log
    written = yaml.safe_load((tmp_path / "netplan" / "60-gpuctl-mtu-bond0.yaml").read_text())
    assert written == {"network": {"version": 2, "bonds": {"bond0": {"mtu": 8500}}}}


def test_mtu_goes_on_the_networkmanager_connection_where_networkmanager_runs_the_interface(tmp_path: Path) -> None:
    extra = node(tmp_path, {"eth0": 8500, "eth1": 8500})
    (tmp_path / "netplan").mkdir()
    calls = tmp_path / "nmcli.log"
    profile_mtu = tmp_path / "profile_mtu"
    profile_mtu.write_text("auto")
    nmcli = tmp_path / "nmcli"
    # eth0 runs under NetworkManager (an active connection); eth1 is not NetworkManager's.
    nmcli.write_text(f"""#!/bin/sh
echo "$*" >> {calls}
case "$*" in
  "-e no -g GENERAL.CON-UUID device show eth0") echo 5f1e2d3c-0000-4000-8000-000000000001 ;;
  "-e no -g GENERAL.CON-UUID device show eth1") exit 10 ;;
  "-e no -g 802-3-ethernet.mtu connection show uuid 5f1e2d3c-0000-4000-8000-000000000001") cat {profile_mtu} ;;
esac
exit 0
""")
    nmcli.chmod(0o755)
    extra["mtu_nmcli"] = str(nmcli)
    rc, log = run_play(tmp_path, {"roles": ["mtu"]}, extra)
    assert rc == 0, log
    assert calls.read_text().splitlines() == [
        "-e no -g GENERAL.CON-UUID device show eth0",
        "-e no -g 802-3-ethernet.mtu connection show uuid 5f1e2d3c-0000-4000-8000-000000000001",
        "-e no -g GENERAL.CON-UUID device show eth1",
        "connection modify uuid 5f1e2d3c-0000-4000-8000-000000000001 802-3-ethernet.mtu 8500",
        "device reapply eth0",
    ]
    # No netplan file beside NetworkManager's connection.
    assert not (tmp_path / "netplan" / "60-gpuctl-mtu-eth0.yaml").exists()
    # Once the profile carries the MTU, nothing is modified or reapplied.
    calls.unlink()
    profile_mtu.write_text("8500")
    rc, log = run_play(tmp_path, {"roles": ["mtu"]}, extra)
    assert rc == 0, log
    assert "changed=0" in log
    assert not any(line.startswith(("connection modify", "device reapply"))
                   for line in calls.read_text().splitlines())


def test_mtu_writes_an_ifupdown_stanza_only_where_no_other_stanza_defines_the_interface(tmp_path: Path) -> None:
    extra = node(tmp_path, {"eth0": 8500, "fab0": 8500})
    (tmp_path / "network" / "interfaces.d").mkdir(parents=True)
    (tmp_path / "network" / "interfaces").write_text("source /etc/network/interfaces.d/*\n")
    (tmp_path / "network" / "interfaces.d" / "50-cloud-init").write_text("auto eth0\niface eth0 inet dhcp\n")
    rc, log = run_play(tmp_path, {"roles": ["mtu"]}, extra)
    assert rc == 0, log
    assert sorted(p.name for p in (tmp_path / "network" / "interfaces.d").iterdir()) == [
        "50-cloud-init", "60-gpuctl-mtu-fab0"]
    stanza = [line.strip() for line in (tmp_path / "network" / "interfaces.d" / "60-gpuctl-mtu-fab0").read_text()
              .splitlines() if not line.startswith("#")]
    assert stanza == ["allow-hotplug fab0", "iface fab0 inet manual", "mtu 8500"]
    assert "50-cloud-init already has a stanza for eth0" in log


def test_mtu_fails_a_node_with_a_missing_rail(tmp_path: Path) -> None:
    extra = node(tmp_path, {"eth0": 8500})
    extra["gpuctl_fabric_interfaces"].append({"name": "eth1", "ipv4": "", "rdma_device": ""})
    rc, log = run_play(tmp_path, {"roles": ["mtu"]}, extra)
    assert rc != 0
    assert "localhost has no eth1" in log
    assert "the provider reported 1 of its 2 fabric interface(s) (eth0, eth1)" in log


def test_mtu_check_mode_reports_every_rail_and_writes_nothing(tmp_path: Path) -> None:
    extra = node(tmp_path, {"eth0": 1500, "eth1": 1500})
    (tmp_path / "netplan").mkdir()
    (tmp_path / "netplan" / "50-cloud-init.yaml").write_text(CLOUD_INIT)
    rc, log = run_play(tmp_path, {"roles": ["mtu"]}, extra, check=True)
    assert rc == 0, log
    assert "changed=2" in log  # the runtime MTU task and the netplan file, each would change
    assert (tmp_path / "sys" / "eth1" / "mtu").read_text() == "1500\n"
    assert sorted(p.name for p in (tmp_path / "netplan").iterdir()) == ["50-cloud-init.yaml"]


def test_mtu_is_persisted_only_after_the_peer_check() -> None:
    tasks = yaml.safe_load((ROLES_PATH / "mtu" / "tasks" / "main.yml").read_text())
    names = [t["name"] for t in tasks]
    ping = names.index("Check the path MTU to this node's fabric peers, and tell an unreachable peer "
                       "from a too-small MTU")
    persist = names.index("Keep the MTU across reboots, now that the peers answered at it")
    assert names.index("Fail if a fabric interface the provider reported is missing on this node") < ping < persist
    assert persist == len(names) - 1
    first = tasks[0]["ansible.builtin.command"]["argv"]
    assert "lookup('ansible.builtin.file', 'mtu_state.sh')" in first
    assert "+ mtu_interfaces" in first


def filters() -> ModuleType:
    path = ROLES_PATH / "mtu" / "filter_plugins" / "mtu_persistence.py"
    spec = importlib.util.spec_from_file_location("mtu_persistence", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_netplan_definition_is_found_only_by_exact_name() -> None:
    find = filters().netplan_definition
    files = {
        "00-broken.yaml": "network: [unclosed",
        "50-cloud-init.yaml": CLOUD_INIT,
        "55-eth2.yaml": "network:\n  ethernets:\n    eth2:\n      dhcp4: true\n",
        "56-glob.yaml": "network:\n  ethernets:\n    all-en:\n      match: {name: 'eth*'}\n      dhcp4: true\n",
        "57-byname.yaml": "network:\n  ethernets:\n    rail3:\n      match: {name: eth3}\n      dhcp4: true\n",
        "60-gpuctl-mtu-eth4.yaml": "network:\n  ethernets:\n    eth4:\n      mtu: 8500\n",
        "70-vlan.yaml": "network:\n  vlans:\n    vlan10:\n      id: 10\n      link: eth0\n",
    }
    assert find(files, "eth0") == {"section": "ethernets", "id": "eth0", "file": "50-cloud-init.yaml"}
    assert find(files, "eth2") == {"section": "ethernets", "id": "eth2", "file": "55-eth2.yaml"}
    assert find(files, "eth3") == {"section": "ethernets", "id": "rail3", "file": "57-byname.yaml"}
    assert find(files, "vlan10") == {"section": "vlans", "id": "vlan10", "file": "70-vlan.yaml"}
    # A glob would also cover other interfaces, and gpuctl's own file defines nothing.
    assert find(files, "eth4") is None
    assert find(files, "eth9") is None


# ------------------------------------------------------------------------------------ erdma role

def rdma_sysfs(root: Path, drivers: dict[str, str]) -> Path:
    """/sys/class/infiniband/<device>/device/driver -> .../drivers/<driver>, as the kernel links it."""
    for device, driver in drivers.items():
        (root / "bus" / "pci" / "drivers" / driver).mkdir(parents=True, exist_ok=True)
        (root / "class" / "infiniband" / device / "device").mkdir(parents=True)
        (root / "class" / "infiniband" / device / "device" / "driver").symlink_to(
            root / "bus" / "pci" / "drivers" / driver)
    return root / "class" / "infiniband"


def erdma_verify(tmp_path: Path, drivers: dict[str, str], extra: dict[str, Any]) -> tuple[int, str]:
    (tmp_path / "module" / "erdma").mkdir(parents=True)
    (tmp_path / "provider").mkdir()
    (tmp_path / "provider" / "liberdma-rdmav34.so").write_text("")
    devinfo = tmp_path / "ibv_devinfo"
    devinfo.write_text(f"#!/bin/sh\ncat {DEVINFO}\n")
    devinfo.chmod(0o755)
    return run_play(tmp_path, {"tasks": [{"ansible.builtin.include_role": {"name": "erdma",
                                                                            "tasks_from": "verify.yml"}}]}, {
        "erdma_sysfs_dir": str(rdma_sysfs(tmp_path / "sys", drivers)), "erdma_sys_module_dir": str(tmp_path / "module"),
        "erdma_provider_dir": str(tmp_path / "provider"), "erdma_ibv_devinfo": str(devinfo), **extra})


@pytest.mark.usefixtures("devinfo_capture")
def test_erdma_devices_are_matched_by_kernel_driver_not_by_name(tmp_path: Path) -> None:
    # The names are the capture's (mlx5_*): what makes a device eRDMA is the driver running it.
    # erdma_9 is run by mlx5_core: its name alone must not count it.
    drivers = {"mlx5_0": "erdma", "mlx5_1": "erdma", "mlx5_2": "mlx5_core", "erdma_9": "mlx5_core"}
    rc, log = erdma_verify(tmp_path, drivers, {"gpuctl_rdma_min_devices": 2})
    assert rc == 0, log


@pytest.mark.usefixtures("devinfo_capture")
def test_erdma_fails_a_node_with_a_missing_rail_and_names_it(tmp_path: Path) -> None:
    drivers = {"mlx5_0": "erdma", "erdma_9": "mlx5_core"}
    rc, log = erdma_verify(tmp_path, drivers, {
        "gpuctl_rdma_min_devices": 2, "gpuctl_rdma_min_devices_reason": "one erdma device per ERI",
        "gpuctl_fabric_interfaces": [{"name": "eth0", "ipv4": "", "rdma_device": "mlx5_0"},
                                     {"name": "eth1", "ipv4": "", "rdma_device": "erdma_1"}]})
    assert rc != 0
    message = " ".join(log.split())
    assert ("expected at least 2 eRDMA device(s) (kernel driver erdma; one erdma device per ERI), every port "
            "PORT_ACTIVE; found mlx5_0 (1 rail(s) missing of the fabric interfaces eth0, eth1); no device for eth1."
            ) in message


@pytest.mark.usefixtures("devinfo_capture")
def test_erdma_device_missing_from_ibv_devinfo_is_not_active(tmp_path: Path) -> None:
    """A device the erdma driver runs that ibv_devinfo does not list has no usable userspace."""
    rc, log = erdma_verify(tmp_path, {"mlx5_0": "erdma", "erdma_7": "erdma"}, {"gpuctl_rdma_min_devices": 2})
    assert rc != 0
    assert "not PORT_ACTIVE or not listed by ibv_devinfo: erdma_7" in " ".join(log.split())


def test_fabric_roles_read_the_minimum_from_the_inventory(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    rc, log = run_play(tmp_path, {
        "vars_files": [str(ROLES_PATH / "erdma" / "defaults" / "main.yml"),
                       str(ROLES_PATH / "rdma" / "defaults" / "main.yml")],
        "tasks": [{"ansible.builtin.copy": {"dest": str(out), "mode": "0644", "content":
                   "{{ [erdma_min_devices | int, rdma_min_devices | int, erdma_min_devices_reason] | to_json }}"}}],
    }, {"gpuctl_rdma_min_devices": 8, "gpuctl_rdma_min_devices_reason": "8 bonds"})
    assert rc == 0, log
    assert json.loads(out.read_text()) == [8, 8, "8 bonds"]


# ------------------------------------------------------------------------------------ catalog count

def test_minimum_devices_come_from_the_catalog_row() -> None:
    alicloud = load_catalog("alicloud")
    assert min_rdma_devices("erdma", "ecs.ebmgn7ex.32xlarge", alicloud.find("ecs.ebmgn7ex.32xlarge"), 2) == (
        2, "one erdma device per ERI: 2 ERI(s) per ecs.ebmgn7ex.32xlarge node, "
           "one per physical network card (ERI quota unknown)")
    # A provider that reported more ERIs than the catalog expects: every one needs its device.
    assert min_rdma_devices("erdma", "ecs.ebmgn7ex.32xlarge", alicloud.find("ecs.ebmgn7ex.32xlarge"), 3) == (
        3, "one erdma device per ERI: 3 fabric interfaces attached")
    assert min_rdma_devices("erdma", "ecs.ebmgn7ix.32xlarge", alicloud.find("ecs.ebmgn7ix.32xlarge"), 1) == (
        1, "one erdma device per ERI: 1 ERI(s) per ecs.ebmgn7ix.32xlarge node, "
           "the primary ERI only (ERI quota and network cards unknown)")
    tencent = load_catalog("tencentcloud")
    assert min_rdma_devices("rdma", "HCCG5v.24XLARGE384", tencent.find("HCCG5v.24XLARGE384"), 1) == (
        1, "the catalog states no RDMA NIC count for HCCG5v.24XLARGE384: at least one device")
    assert min_rdma_devices("rdma", "HCCX.NEW", None, 1) == (
        1, "HCCX.NEW is not in the catalog: at least one device, its count unknown")
