"""Rendered inventory and site playbook against golden files; the roles against ansible-lint.

Three clusters: the local lab (fabric tcp), an Alibaba Cloud eRDMA cluster and a Tencent Cloud HCC
RDMA cluster. GPUCTL_UPDATE_GOLDEN=1 rewrites the golden files (review the diff before committing it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolkit.configure.render import (
    DELIVER_ROLES,
    ROLES,
    inventory_data,
    node_local_playbooks,
    render_ansible_cfg,
    render_inventory,
    render_playbook,
)
from toolkit.errors import UsageError
from toolkit.paths import Paths
from toolkit.providers.base import ClusterOutputs, FabricInterface, NodeOutput
from toolkit.spec.loader import load_spec_text
from toolkit.spec.models import ClusterSpec

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden"
BASE = Path("/gpuctl-home/clusters/lab")  # fixed, so golden files do not depend on the machine


def spec() -> ClusterSpec:
    return load_spec_text("""\
name: lab
provider: local
node_pools:
  - {name: node, instance_type: lab, count: 2, capture: /captures/h100}
network: {fabric: tcp, mtu: 8500, admin_cidr: 127.0.0.0/8}
nccl_overrides: {NCCL_DEBUG: WARN, NCCL_IB_TIMEOUT: 22}
lifecycle: {ttl: 2h}
""")


def outputs() -> ClusterOutputs:
    nodes = [
        NodeOutput(name=f"lab-node-{i}", pool="node", instance_id=f"gl-a5114-n{i + 1}", instance_type="lab",
                   private_ip=f"10.213.7.{11 + i}", ssh_host=f"10.213.7.{11 + i}",
                   fabric_interfaces=[FabricInterface(name="fab0", ipv4=f"10.214.7.{11 + i}/24")],
                   replay_capture="/captures/h100")
        for i in range(2)
    ]
    return ClusterOutputs(cluster="lab", provider="local", fabric="tcp", mtu=8500, nodes=nodes,
                          ssh_private_key=BASE / "ssh/id_ed25519", known_hosts=BASE / "ssh/known_hosts")


def alicloud_spec() -> ClusterSpec:
    return load_spec_text("""\
name: erdma-a100
provider: alicloud
region: cn-wulanchabu
zone: cn-wulanchabu-c
owner: infra-team@example.com
node_pools:
  - name: gpu
    instance_type: ecs.ebmgn7ex.32xlarge
    count: 2
    image: ubuntu_22_04
    system_disk: {size_gb: 500, category: cloud_essd}
    billing: {mode: pay_as_you_go}
network: {fabric: erdma, mtu: 8500, vpc_cidr: 10.42.0.0/16, admin_cidr: 203.0.113.0/24}
ssh: {public_key: /keys/example_ed25519.pub}
lifecycle: {ttl: 8h}
""")


def alicloud_outputs() -> ClusterOutputs:
    nodes = [
        NodeOutput(name=f"erdma-a100-gpu-{i}", pool="gpu", instance_id=f"i-wz9erdma0{i}",
                   instance_type="ecs.ebmgn7ex.32xlarge", private_ip=f"10.42.0.{21 + i}",
                   public_ip=f"203.0.113.{21 + i}", ssh_host=f"203.0.113.{21 + i}",
                   # Two ERIs, one per network card, as the Alibaba program attaches them to an ebmgn7ex.
                   fabric_interfaces=[FabricInterface(name="eth0", ipv4=f"10.42.0.{21 + i}/24", rdma_device="erdma_0"),
                                      FabricInterface(name="eth1", ipv4=f"10.42.0.{41 + i}/24")])
        for i in range(2)
    ]
    return ClusterOutputs(cluster="erdma-a100", provider="alicloud", fabric="erdma", mtu=8500, nodes=nodes,
                          known_hosts=Path("/gpuctl-home/clusters/erdma-a100/ssh/known_hosts"))


def tencent_spec() -> ClusterSpec:
    return load_spec_text("""\
name: hcc-v100
provider: tencentcloud
region: ap-shanghai
zone: ap-shanghai-5
owner: infra-team@example.com
node_pools:
  - name: gpu
    instance_type: HCCG5v.24XLARGE384
    count: 2
    image: ubuntu_22_04
    system_disk: {size_gb: 500, category: CLOUD_BSSD}
    billing: {mode: pay_as_you_go}
network: {fabric: rdma, mtu: 8500, vpc_cidr: 10.43.0.0/16, admin_cidr: 203.0.113.0/24}
ssh: {public_key: /keys/example_ed25519.pub, user: ubuntu}
lifecycle: {ttl: 8h}
""")


def tencent_outputs() -> ClusterOutputs:
    nodes = [
        NodeOutput(name=f"hcc-v100-gpu-{i}", pool="gpu", instance_id=f"ins-hcc0{i}", instance_type="HCCG5v.24XLARGE384",
                   private_ip=f"10.43.0.{31 + i}", public_ip=f"203.0.113.{31 + i}", ssh_host=f"203.0.113.{31 + i}",
                   ssh_user="ubuntu",
                   fabric_interfaces=[FabricInterface(name="bond0", ipv4=f"30.7.0.{31 + i}/24",
                                                      rdma_device="mlx5_bond_0")])
        for i in range(2)
    ]
    return ClusterOutputs(cluster="hcc-v100", provider="tencentcloud", fabric="rdma", mtu=8500, nodes=nodes,
                          known_hosts=Path("/gpuctl-home/clusters/hcc-v100/ssh/known_hosts"))


CLUSTERS: dict[str, tuple[Callable[[], ClusterSpec], Callable[[], ClusterOutputs]]] = {
    "lab": (spec, outputs),
    "alicloud-erdma": (alicloud_spec, alicloud_outputs),
    "tencentcloud-rdma": (tencent_spec, tencent_outputs),
}
# The site playbook's roles per cluster, written out literally so the order is never compared with
# the code that produces it.
EXPECTED_ROLES = {
    "lab": ["nvidia_driver", "cuda", "nccl", "rdma_userspace", "mtu", "topology_facts", "lifecycle", "install_record"],
    "alicloud-erdma": ["nvidia_driver", "cuda", "nccl", "rdma_userspace", "erdma", "mtu", "topology_facts",
                       "lifecycle", "install_record"],
    "tencentcloud-rdma": ["nvidia_driver", "cuda", "nccl", "rdma_userspace", "rdma", "mtu", "topology_facts",
                          "lifecycle", "install_record"],
}


class _InventoryLoader(yaml.SafeLoader):
    """Reads a gpuctl inventory back, keeping which scalars were tagged !unsafe."""


class Unsafe(str):
    pass


def _construct_unsafe(loader: yaml.SafeLoader, node: yaml.Node) -> Unsafe:
    assert isinstance(node, yaml.ScalarNode)
    return Unsafe(loader.construct_scalar(node))


_InventoryLoader.add_constructor("!unsafe", _construct_unsafe)


def load_inventory(text: str) -> dict[str, Any]:
    data = yaml.load(text, Loader=_InventoryLoader)
    assert isinstance(data, dict)
    return data


def inventory(spec: ClusterSpec, outputs: ClusterOutputs, paths: Paths, gather: str) -> str:
    return render_inventory(inventory_data(spec, outputs, paths, gather), cluster=outputs.cluster,
                            provider=outputs.provider)


def cluster_base(name: str) -> Path:
    return BASE if name == "lab" else Path(f"/gpuctl-home/clusters/{CLUSTERS[name][1]().cluster}")


# The install inputs digest covers the install roles' files: it changes with every edit of them, so
# the golden files hold a placeholder (test_install_inputs checks what the digest depends on).
INSTALL_DIGEST = re.compile(r"(gpuctl_install_inputs: !unsafe ')[0-9a-f]{64}(')")


def check_golden(name: str, text: str) -> None:
    text = INSTALL_DIGEST.sub(r"\1<digest of the install roles and vars>\2", text)
    path = GOLDEN / name
    if os.environ.get("GPUCTL_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden file {path}; run with GPUCTL_UPDATE_GOLDEN=1 to write it"
    assert text == path.read_text(), f"{name} differs from its golden file (GPUCTL_UPDATE_GOLDEN=1 rewrites it)"


def test_inventory_matches_golden() -> None:
    check_golden("inventory.yml", inventory(spec(), outputs(), Paths(BASE), "/toolkit/topology/gather.sh"))


def test_site_playbook_matches_golden() -> None:
    check_golden("site.yml", render_playbook(outputs(), Paths(BASE)))


def test_deliver_playbook_matches_golden() -> None:
    check_golden("deliver.yml", render_playbook(outputs(), Paths(BASE), DELIVER_ROLES, template="deliver.yml.j2"))


def test_node_local_playbooks_match_golden() -> None:
    for name, text in node_local_playbooks(outputs(), Paths(BASE)).items():
        check_golden(name, text)


def test_the_finish_playbook_finds_the_hcc_bonds_before_its_mtu_check() -> None:
    outputs = CLUSTERS["tencentcloud-rdma"][1]()
    text = node_local_playbooks(outputs, Paths(cluster_base("tencentcloud-rdma")))["finish.yml"]
    check_golden("finish-tencentcloud-rdma.yml", text)
    play = yaml.safe_load(text)[0]
    assert [task["name"] for task in play["pre_tasks"]] == [
        "Find the fabric interfaces the provider could not report (the HCC RDMA bonds)"]
    assert [role["role"] for role in play["roles"]] == ["mtu", "nccl_conf"]


def test_inventory_pins_host_keys_and_carries_the_fabric() -> None:
    data = load_inventory(inventory(spec(), outputs(), Paths(BASE), ""))
    group = data["all"]["children"]["gpuctl_nodes"]
    assert "StrictHostKeyChecking=yes" in group["vars"]["ansible_ssh_common_args"]
    assert f"UserKnownHostsFile={BASE}/ssh/known_hosts" in group["vars"]["ansible_ssh_common_args"]
    # Overrides go from the spec straight into the tuner in Python; Ansible never sees them.
    assert "gpuctl_nccl_overrides" not in group["vars"]
    assert "WARN" not in inventory(spec(), outputs(), Paths(BASE), "")
    host = group["hosts"]["lab-node-1"]
    assert host["ansible_host"] == "10.213.7.12"
    assert host["gpuctl_fabric_interface"] == "fab0"
    assert host["gpuctl_fabric_ip"] == "10.214.7.12/24"
    assert host["gpuctl_lab_node"] is True
    assert host["gpuctl_replay_note"].startswith("replayed: ")


@pytest.mark.parametrize("cluster", ["alicloud-erdma", "tencentcloud-rdma"])
def test_cloud_inventory_matches_golden(cluster: str) -> None:
    make_spec, make_outputs = CLUSTERS[cluster]
    paths = Paths(cluster_base(cluster))
    check_golden(f"inventory-{cluster}.yml",
                 inventory(make_spec(), make_outputs(), paths, "/toolkit/topology/gather.sh"))


@pytest.mark.parametrize("cluster", ["alicloud-erdma", "tencentcloud-rdma"])
def test_cloud_site_playbook_matches_golden(cluster: str) -> None:
    check_golden(f"site-{cluster}.yml", render_playbook(CLUSTERS[cluster][1](), Paths(cluster_base(cluster))))


def test_playbook_keeps_ansible_expressions_and_lists_every_role() -> None:
    text = render_playbook(outputs(), Paths(BASE))
    assert "{{ inventory_hostname }}" in text  # toolkit delimiters [[ ]] never touch Ansible's
    assert "[[" not in text
    assert "[%" not in text
    plays = yaml.safe_load(text)
    assert [r["role"] for r in plays[1]["roles"]] == [*ROLES, "lifecycle", "install_record"]


@pytest.mark.parametrize("cluster", sorted(EXPECTED_ROLES))
def test_site_playbook_roles_follow_the_fabric(cluster: str) -> None:
    plays = yaml.safe_load(render_playbook(CLUSTERS[cluster][1](), Paths(cluster_base(cluster))))
    assert [r["role"] for r in plays[1]["roles"]] == EXPECTED_ROLES[cluster]
    assert [r["tags"] for r in plays[1]["roles"]] == EXPECTED_ROLES[cluster]


def test_cloud_nodes_are_not_marked_as_lab_nodes() -> None:
    for cluster in ("alicloud-erdma", "tencentcloud-rdma"):
        make_spec, make_outputs = CLUSTERS[cluster]
        data = load_inventory(inventory(make_spec(), make_outputs(), Paths(cluster_base(cluster)), ""))
        group = data["all"]["children"]["gpuctl_nodes"]
        assert group["vars"]["gpuctl_fabric"] == {"alicloud-erdma": "erdma", "tencentcloud-rdma": "rdma"}[cluster]
        assert all("gpuctl_lab_node" not in host for host in group["hosts"].values())


@pytest.mark.parametrize("cluster", sorted(CLUSTERS))
def test_rendered_files_pass_ansible_playbook_syntax_check(tmp_path: Path, cluster: str) -> None:
    make_spec, make_outputs = CLUSTERS[cluster]
    paths = Paths(tmp_path)
    paths.inventory.write_text(inventory(make_spec(), make_outputs(), paths, ""))
    paths.playbook.write_text(render_playbook(make_outputs(), paths))
    paths.deliver.write_text(render_playbook(make_outputs(), paths, DELIVER_ROLES, template="deliver.yml.j2"))
    paths.config.write_text(render_ansible_cfg(paths))
    for name, text in node_local_playbooks(make_outputs(), paths).items():
        (tmp_path / name).write_text(text)
    (tmp_path / "node_local_vars.yml").write_text("gpuctl_local_timeout: 60\n")
    for playbook in ("site.yml", "deliver.yml", "node_local_site.yml", "node_local_finish.yml", "node_local_stop.yml",
                     "finish.yml"):
        done = subprocess.run(
            [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "inventory.yml", playbook, "--syntax-check"],
            cwd=tmp_path, env={**os.environ, "ANSIBLE_CONFIG": str(paths.config)},
            capture_output=True, text=True, check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_roles_pass_ansible_lint() -> None:
    lint = Path(sys.executable).parent / "ansible-lint"
    if not lint.exists() and shutil.which("ansible-lint") is None:
        pytest.skip("ansible-lint is not installed (pip install -e '.[dev]')")
    done = subprocess.run([str(lint if lint.exists() else "ansible-lint"), "playbooks/"], cwd=REPO,
                          capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_every_string_in_the_inventory_is_unsafe() -> None:
    """Ansible evaluates a plain string that holds {{ }}; an !unsafe one it takes literally."""
    for cluster, (make_spec, make_outputs) in CLUSTERS.items():
        data = load_inventory(inventory(make_spec(), make_outputs(), Paths(cluster_base(cluster)), "/g.sh"))
        group = data["all"]["children"]["gpuctl_nodes"]
        values = [*group["vars"].values(), *(v for host in group["hosts"].values() for v in host.values())]
        strings = [v for v in values if isinstance(v, str)]
        assert len(strings) > 20
        assert all(isinstance(v, Unsafe) for v in strings), [v for v in strings if not isinstance(v, Unsafe)]


def test_non_root_login_users_become_root() -> None:
    data = load_inventory(inventory(tencent_spec(), tencent_outputs(), Paths(cluster_base("tencentcloud-rdma")), ""))
    hosts = data["all"]["children"]["gpuctl_nodes"]["hosts"]
    assert [h["ansible_user"] for h in hosts.values()] == ["ubuntu", "ubuntu"]
    assert [h.get("ansible_become") for h in hosts.values()] == [True, True]
    lab = load_inventory(inventory(spec(), outputs(), Paths(BASE), ""))["all"]["children"]["gpuctl_nodes"]["hosts"]
    assert [h.get("ansible_become") for h in lab.values()] == [None, None]


def test_pre_tasks_run_under_any_tag(tmp_path: Path) -> None:
    """`--tags cuda` must still run the GPU check the cuda role depends on (else it silently skips)."""
    paths = Paths(tmp_path)
    paths.inventory.write_text(inventory(spec(), outputs(), paths, ""))
    paths.playbook.write_text(render_playbook(outputs(), paths))
    paths.config.write_text(render_ansible_cfg(paths))
    done = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "inventory.yml", "site.yml",
         "--list-tasks", "--tags", "cuda"],
        cwd=tmp_path, env={**os.environ, "ANSIBLE_CONFIG": str(paths.config)},
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for task in ("Look for an NVIDIA GPU on the PCI bus", "Record whether this node has an NVIDIA GPU, and if not, why",
                 "Read this node's identity (boot id, machine id) for gpuctl's record",
                 "Check that every node has a fabric interface, an address on it and an MTU to set"):
        assert task in done.stdout, done.stdout
    assert "nvidia_driver :" not in done.stdout


@pytest.mark.parametrize(("base", "held"), [
    ("/tmp/a\nroles_path = /tmp/evil", "a control character U+000A"),
    ("/tmp/a\rb", "a control character U+000D"),
    ("/tmp/100%done", "'%' (Ansible's ConfigParser reads it as interpolation)"),
    ("/tmp/a ;b", "';' after a blank (Ansible's ConfigParser reads the rest as a comment)"),
])
def test_ansible_cfg_refuses_a_value_ini_cannot_hold(base: str, held: str) -> None:
    """INI has no escaping: a path that would end its line, interpolate or start a comment in
    ansible.cfg is refused by name, never written."""
    from toolkit.errors import UsageError

    with pytest.raises(UsageError) as caught:
        render_ansible_cfg(Paths(Path(base)))
    assert caught.value.message == (
        f"ansible.cfg control_path_dir: {str(Path(base) / 'cp')!r} holds {held}; gpuctl cannot write it there")


def test_ansible_cfg_keeps_plain_paths_as_they_are(tmp_path: Path) -> None:
    text = render_ansible_cfg(Paths(tmp_path / "clusters" / "c-1"))
    assert f"control_path_dir = {tmp_path}/clusters/c-1/cp\n" in text


def test_forks_follow_the_node_count_up_to_a_cap_the_operator_can_raise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolkit.configure.render import forks_for

    monkeypatch.delenv("GPUCTL_ANSIBLE_FORKS", raising=False)
    assert [forks_for(n) for n in (0, 3, 128, 1250)] == [1, 3, 128, 128]
    assert "forks = 17\n" in render_ansible_cfg(Paths(tmp_path / "c"), hosts=17)
    assert "ControlPersist=30m" in render_ansible_cfg(Paths(tmp_path / "c"), hosts=17)
    monkeypatch.setenv("GPUCTL_ANSIBLE_FORKS", "400")
    assert forks_for(1250) == 400
    monkeypatch.setenv("GPUCTL_ANSIBLE_FORKS", " 64 ")
    assert forks_for(1250) == 64
    # "²" and "٣" are digits to str.isdigit(); the first is no number to int() at all.
    for bad in ("0", "-5", "1e3", "2000", "many", "²", "٣", "6\n4"):
        monkeypatch.setenv("GPUCTL_ANSIBLE_FORKS", bad)
        with pytest.raises(UsageError) as refused:
            forks_for(1250)
        assert refused.value.message.startswith(f"GPUCTL_ANSIBLE_FORKS={bad.strip()!r} is not a whole number"), bad
