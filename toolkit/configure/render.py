"""The files configure hands to Ansible: inventory, site and deliver playbooks, ansible.cfg.

Pure functions of (spec, outputs, paths), so each is golden-tested. The inventory is data only:
every string in it is tagged `!unsafe`, so Ansible never evaluates a value that came from a spec, a
provider's outputs or a path (a `{{ lookup('pipe', ...) }}` in any of them stays literal text).
The playbooks are rendered from templates/ with `[[ ]]`/`[% %]` delimiters and get only values
gpuctl computed itself (cluster name, provider, role names). The site and deliver playbooks name
no node count, so appending a node leaves every other node's fingerprint as it was.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from toolkit.catalog.store import load_catalog
from toolkit.characters import first_control
from toolkit.comment import comment_text
from toolkit.configure.digest import sha, tree_digest
from toolkit.configure.peers import peers_of
from toolkit.configure.rdma_devices import min_rdma_devices
from toolkit.errors import UsageError
from toolkit.lifecycle.agent_config import agent_settings, agent_wanted, checkpoint_dir
from toolkit.paths import ROLES_PATH, TEMPLATES, Paths
from toolkit.providers.base import ClusterOutputs
from toolkit.spec.models import ClusterSpec

# The roles every cluster gets, in order (the local lab's tcp fabric gets exactly these). The site
# playbook runs them; gpuctl then tunes every node from its gathered bundle, and the deliver
# playbook runs DELIVER_ROLES to install what gpuctl wrote.
ROLES = ("nvidia_driver", "cuda", "nccl", "rdma_userspace", "mtu", "topology_facts")
DELIVER_ROLES = ("nccl_conf",)
# The role that brings up each RDMA fabric, placed right after rdma_userspace: Alibaba's eRDMA stack
# (erdma) and the check of Tencent HCC's preinstalled RDMA driver (rdma). A tcp fabric has none.
FABRIC_ROLES = {"erdma": "erdma", "rdma": "rdma"}
# The node-side lifecycle agent's role, near the end of the site playbook of every cluster: it installs the
# agent only for a spec that asks for it (lifecycle.idle_stop_minutes or on_interruption) and
# otherwise removes one an earlier run installed, so an agent turned off in the spec can never go
# on stopping nodes.
LIFECYCLE_ROLE = "lifecycle"
# The install record (roles/install_record): last in the site playbook, after every other role
# succeeded, it records on the node what the install roles left there; the site playbook's first
# tasks compare it, so a node that holds it (booted from a baked image) skips HELD_ROLES.
RECORD_ROLE = "install_record"
# The roles a node whose install record holds skips: they only install packages and write files
# that an image of a configured node carries. nvidia_driver always runs, skipping only its package
# steps there (it also starts and checks the driver's services, per boot), and so do the fabric
# roles (they check the node's RDMA devices).
HELD_ROLES = ("cuda", "nccl", "rdma_userspace")
# What decides those roles' work, besides their files: the inventory vars they (and nvidia_driver)
# read. A node's install record holds for the same pins, stack, fabric and instance type only.
INSTALL_ROLES = ("nvidia_driver", "cuda", "nccl", "rdma_userspace", RECORD_ROLE)
INSTALL_GROUP_VARS = ("gpuctl_provider", "gpuctl_fabric", "nvidia_driver_version", "cuda_version", "nccl_version",
                      "gpuctl_tccl")
INSTALL_HOST_VARS = ("gpuctl_gpu_stack", "gpuctl_instance_type", "gpuctl_lab_node", "gpuctl_lab_gpu_stack",
                     "nvidia_driver_proc_version_file")
# The role that mounts the spec's shared volumes, placed after mtu (the network is final then);
# only a cluster with volumes gets it, so a spec without storage renders what it always did.
STORAGE_ROLE = "storage"
# The FUSE client each provider's object storage is mounted with (nas is always the kernel's NFS):
# Alibaba's ossfs for OSS, Tencent's cosfs for COS, s3fs for the lab's S3-compatible store.
OBJECT_CLIENTS = {"alicloud": "ossfs", "tencentcloud": "cosfs", "local": "s3fs"}
# The fabrics whose role counts RDMA devices: the inventory carries each node's minimum.
RDMA_FABRICS = ("erdma", "rdma")
# The fabrics whose interfaces the site play can find on a node the provider reported none for:
# Tencent HCC's RDMA bonds (the netdevs of the mlx5_bond_* devices), found by the rdma role.
DISCOVERED_FABRICS = ("rdma",)


@dataclass(frozen=True)
class InventoryData:
    """The typed content of inventory.yml: host vars per node and the group vars they share.

    configure builds it once; the inventory file and converge's fingerprint both come from it, so
    converge never reads the inventory back.
    """

    hosts: dict[str, dict[str, Any]]
    group: dict[str, Any]

    def peers(self, node: str) -> list[str]:
        """The fabric addresses `node` pings to check the path MTU (peers.peers_of's sparse pattern)."""
        return [str(address) for address in self.hosts[node].get("gpuctl_mtu_peers", [])]


class _Unsafe(str):
    """A string Ansible must take literally: dumped with YAML's `!unsafe` tag."""


class _InventoryDumper(yaml.SafeDumper):
    pass


_InventoryDumper.add_representer(_Unsafe, lambda dumper, value: dumper.represent_scalar("!unsafe", str(value)))


def _unsafe(value: Any) -> Any:
    if isinstance(value, str):
        return _Unsafe(value)
    if isinstance(value, dict):
        return {key: _unsafe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_unsafe(item) for item in value]
    return value


def _peer_name(node: str, host: dict[str, Any], address: str) -> str:
    rail = next((r["name"] for r in host.get("gpuctl_fabric_interfaces") or []
                 if r.get("ipv4") and str(r["ipv4"]).split("/")[0] == address), None)
    return f"{node} ({rail})" if rail else node


def inventory_data(spec: ClusterSpec, outputs: ClusterOutputs, paths: Paths, gather: str,
                   known_hosts: str | None = None) -> InventoryData:
    from toolkit.providers.lab.gpu_stack import DRIVER_VERSION_FILE as STANDIN_DRIVER_VERSION_FILE
    from toolkit.providers.lab.replay import replay_note
    from toolkit.providers.registry import get_provider

    hosts: dict[str, dict[str, Any]] = {}
    stacks = {pool.name: pool.gpu_stack for pool in spec.node_pools}
    # Only a cloud has an RDMA fabric (the lab's validate refuses one), and with it a catalog.
    catalog = load_catalog(outputs.provider) if outputs.fabric in RDMA_FABRICS else None
    for node in outputs.nodes:
        fabric = node.fabric_interfaces[0] if node.fabric_interfaces else None
        host: dict[str, Any] = {
            "ansible_host": node.ssh_host, "ansible_port": node.ssh_port, "ansible_user": node.ssh_user,
            "gpuctl_pool": node.pool, "gpuctl_instance_type": node.instance_type,
            # Where the GPU stack comes from (NodePool.gpu_stack); a pool the spec no longer has: install.
            "gpuctl_gpu_stack": stacks.get(node.pool, "install"),
            # The first fabric interface: the one the peers ping and NCCL's sockets use.
            "gpuctl_fabric_interface": fabric.name if fabric else "",
            "gpuctl_fabric_ip": (fabric.ipv4 or "") if fabric else "",
            # Every rail (one per ERI on Alibaba): the mtu role sets and checks the MTU on each.
            "gpuctl_fabric_interfaces": [
                {"name": i.name, "ipv4": i.ipv4 or "", "rdma_device": i.rdma_device or ""}
                for i in node.fabric_interfaces
            ],
        }
        if catalog is not None:
            count, reason = min_rdma_devices(outputs.fabric, node.instance_type, catalog.find(node.instance_type),
                                             len(node.fabric_interfaces))
            host.update(gpuctl_rdma_min_devices=count, gpuctl_rdma_min_devices_reason=reason)
        if node.ssh_user != "root":
            # Cloud images that log in as a normal user with sudo (Tencent, Ubuntu): the roles need root.
            host["ansible_become"] = True
        if node.replay_capture:
            host.update(gpuctl_lab_node=True, gpuctl_replay_capture=node.replay_capture,
                        gpuctl_replay_note=replay_note(node.replay_capture))
        if outputs.provider == "local" and host["gpuctl_gpu_stack"] == "image":
            # The lab's stand-in of an image carrying the stack: the roles find and keep it; the
            # "loaded module" line is a file of the stand-in (a lab node's /proc is the host's).
            host.update(gpuctl_lab_gpu_stack=True, nvidia_driver_proc_version_file=STANDIN_DRIVER_VERSION_FILE)
        hosts[node.name] = host
    # The peers each node pings for the MTU check, as addresses without the prefix: computed once
    # here, used by the mtu role (gpuctl_mtu_peers) and recorded for converge's verification.
    fabric_nodes = [name for name, host in hosts.items() if host["gpuctl_fabric_ip"]]
    addresses = [str(hosts[name]["gpuctl_fabric_ip"]).split("/")[0] for name in fabric_nodes]
    for index, name in enumerate(fabric_nodes):
        peers = peers_of(index, len(fabric_nodes))
        hosts[name]["gpuctl_mtu_peers"] = [addresses[j] for j in peers]
        # Each peer address with the name the mtu role's messages give it ("node (rail)" where the
        # address is one of that node's rails): computed here, once, for this node's peers only.
        hosts[name]["gpuctl_mtu_peer_names"] = {addresses[j]: _peer_name(fabric_nodes[j], hosts[fabric_nodes[j]],
                                                                         addresses[j]) for j in peers}
    # Nodes whose fabric the provider cannot see (Tencent HCC: the RDMA bonds are not in the cloud's
    # API): the site play finds their interfaces on the node (rdma role, discover.yml), so their
    # peers are named by node; the mtu role pings every fabric address those peers found.
    discover = [name for name, host in hosts.items()
                if not host["gpuctl_fabric_interfaces"] and outputs.fabric in DISCOVERED_FABRICS]
    for index, name in enumerate(discover):
        hosts[name]["gpuctl_fabric_discover"] = True
        hosts[name]["gpuctl_mtu_peer_nodes"] = [discover[j] for j in peers_of(index, len(discover))]
    known = known_hosts if known_hosts is not None else (str(outputs.known_hosts) if outputs.known_hosts else None)
    # Ansible splits ansible_ssh_common_args with shlex: quote each path so a space cannot split it.
    ssh_args = ["-o", "StrictHostKeyChecking=yes", *(["-o", f"UserKnownHostsFile={known}"] if known else [])]
    group: dict[str, Any] = {
        "ansible_ssh_common_args": shlex.join(ssh_args),
        "ansible_python_interpreter": get_provider(outputs.provider).python_interpreter,
        "gpuctl_cluster": outputs.cluster, "gpuctl_provider": outputs.provider,
        "gpuctl_fabric": outputs.fabric, "gpuctl_mtu": outputs.mtu,
        "gpuctl_gather_script": gather,
        "gpuctl_bundle_dir": str(paths.bundles), "gpuctl_nccl_dir": str(paths.nccl),
        "nvidia_driver_version": spec.software.driver, "cuda_version": spec.software.cuda,
        "nccl_version": spec.software.nccl,
    }
    if outputs.ssh_private_key:
        group["ansible_ssh_private_key_file"] = str(outputs.ssh_private_key)
    if spec.software.tccl:  # validate allows it only on the Tencent families TCCL is documented for
        group["gpuctl_tccl"] = True
    if agent_wanted(spec):
        group["gpuctl_lifecycle"] = agent_settings(spec)
        if checkpoint_dir(spec):
            group["gpuctl_checkpoint_dir"] = checkpoint_dir(spec)
    if outputs.volumes:
        group["gpuctl_storage_volumes"] = storage_volumes(outputs)
    roles = tree_digest(ROLES_PATH / role for role in INSTALL_ROLES)
    for host in hosts.values():
        host["gpuctl_install_inputs"] = install_inputs(roles, host, group)
    return InventoryData(hosts=hosts, group=group)


def install_inputs(roles_digest: str, host: dict[str, Any], group: dict[str, Any]) -> str:
    """The digest a node's install record must hold for its install to count as done: the install
    roles' files and the vars they read. Nothing node-specific (address, name, cluster) is in it,
    so every node booted from an image of one node of the pool matches it."""
    chosen = {"roles": roles_digest,
              "group": {key: group.get(key) for key in INSTALL_GROUP_VARS},
              "host": {key: host.get(key) for key in INSTALL_HOST_VARS}}
    return sha(json.dumps(chosen, sort_keys=True).encode())


def storage_volumes(outputs: ClusterOutputs) -> list[dict[str, str]]:
    """The storage role's volumes, in the spec's order: each output volume (unset fields left out)
    and the client that mounts it."""
    return [{"client": "nfs" if volume.kind == "nas" else OBJECT_CLIENTS[outputs.provider],
             **volume.model_dump(exclude_none=True)} for volume in outputs.volumes]


def unsafe_yaml(value: Any) -> str:
    """`value` as YAML whose every string is `!unsafe`: a vars file Ansible takes literally."""
    return str(yaml.dump(_unsafe(value), Dumper=_InventoryDumper, sort_keys=False, default_flow_style=False,
                         width=200))


def render_inventory(data: InventoryData, *, cluster: str, provider: str) -> str:
    inventory = {"all": {"children": {"gpuctl_nodes": {"hosts": _unsafe(data.hosts), "vars": _unsafe(data.group)}}}}
    header = (f"# Inventory of cluster {comment_text(cluster)}, written by gpuctl from the {comment_text(provider)} "
              "provider's outputs.\n"
              "# Every string is !unsafe: Ansible takes it literally and never evaluates it as a template.\n")
    body = yaml.dump(inventory, Dumper=_InventoryDumper, sort_keys=False, default_flow_style=False, width=200)
    return "---\n" + header + body


def site_roles(fabric: str, *, storage: bool = False) -> tuple[str, ...]:
    """The site playbook's roles for a fabric, in order: ROLES plus the fabric's own role, if any,
    the storage role after mtu when the cluster has shared volumes (`storage`), then the lifecycle
    role (it installs the agent or removes an earlier one, as the spec says) and the install record."""
    tail = (LIFECYCLE_ROLE, RECORD_ROLE)
    roles: tuple[str, ...] = ROLES
    if storage:
        after = roles.index("mtu") + 1
        roles = (*roles[:after], STORAGE_ROLE, *roles[after:])
    fabric_role = FABRIC_ROLES.get(fabric)
    if fabric_role is None:
        return (*roles, *tail)
    after = roles.index("rdma_userspace") + 1
    return (*roles[:after], fabric_role, *roles[after:], *tail)


def _environment() -> Any:
    import jinja2

    # Delimiters that never clash with Ansible's own {{ }} / {% %} in the rendered playbook.
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        block_start_string="[%", block_end_string="%]",
        variable_start_string="[[", variable_end_string="]]",
        comment_start_string="[#", comment_end_string="#]",
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined, autoescape=False,
    )


def render_playbook(outputs: ClusterOutputs, paths: Paths, roles: Sequence[str] | None = None,
                    *, template: str = "site.yml.j2", phase: str = "site") -> str:
    """A playbook for this cluster: the site playbook (roles default to site_roles of its fabric and volumes),
    or with template="deliver.yml.j2" and roles=DELIVER_ROLES, the deliver playbook; node_local.yml.j2
    and finish.yml.j2 for a node-local run (node_local_playbooks)."""
    site = site_roles(outputs.fabric, storage=bool(outputs.volumes))
    if roles is None:
        roles = site
    return str(_environment().get_template(template).render(
        cluster=outputs.cluster, provider=outputs.provider, node_count=len(outputs.nodes),
        # Shown in a comment as a command to paste: quoted for the shell, and one line whatever it holds.
        cluster_dir=shlex.quote(str(paths.base)).encode("unicode_escape").decode("ascii"), roles=list(roles),
        # The rdma role finds the fabric on nodes the provider reported none for (DISCOVERED_FABRICS).
        discover=outputs.fabric in DISCOVERED_FABRICS and "rdma" in site,
        held=[role for role in HELD_ROLES if role in roles], record=RECORD_ROLE in roles, phase=phase,
    ))


def node_local_playbooks(outputs: ClusterOutputs, paths: Paths) -> dict[str, str]:
    """A node-local run's playbooks: the controller's one per phase (node_local_site.yml,
    node_local_finish.yml), the one that stops the runs after a Ctrl-C (node_local_stop.yml), and
    finish.yml, shipped in the bundle beside site.yml and run on each node."""
    return {
        paths.node_local("site").name: render_playbook(outputs, paths, template="node_local.yml.j2", phase="site"),
        paths.node_local("finish").name: render_playbook(outputs, paths, template="node_local.yml.j2",
                                                         phase="finish"),
        "finish.yml": render_playbook(outputs, paths, DELIVER_ROLES, template="finish.yml.j2"),
        paths.node_local("stop").name: render_playbook(outputs, paths, template="node_local_stop.yml.j2"),
    }


def ini_value(key: str, value: object) -> str:
    """`value` as an ansible.cfg value, or a UsageError naming `key`. INI has no escaping: a line break
    would start a line of its own, Ansible's ConfigParser reads `%` as interpolation and `;` after a
    blank as the start of a comment, so a value holding any of them is refused, never written."""
    text = str(value)
    control = first_control(text)
    problem = None if control is None else f"a control character U+{ord(control):04X}"
    if problem is None and "%" in text:
        problem = "'%' (Ansible's ConfigParser reads it as interpolation)"
    if problem is None and re.search(r"\s;", text):
        problem = "';' after a blank (Ansible's ConfigParser reads the rest as a comment)"
    if problem is not None:
        raise UsageError(f"ansible.cfg {key}: {text!r} holds {problem}; gpuctl cannot write it there",
                         hint="install gpuctl and choose GPUCTL_HOME under plain directory paths")
    return text


# Ansible runs one worker process per fork (tens of MiB each, most of it shared): 32 ran 1,250
# nodes in 40 waves of every task. 128 takes 10, and fits a controller of a few GiB; more is
# GPUCTL_ANSIBLE_FORKS's to ask for.
MAX_FORKS = 128


def forks_for(hosts: int) -> int:
    """Ansible's forks for a run on `hosts` nodes: one per node up to MAX_FORKS, or up to
    GPUCTL_ANSIBLE_FORKS where set (a whole number from 1 to 1024; anything else is refused)."""
    asked = os.environ.get("GPUCTL_ANSIBLE_FORKS", "").strip()
    cap = MAX_FORKS
    if asked:
        # ASCII digits only: str.isdigit() accepts "²", which int() refuses.
        if not (asked.isascii() and asked.isdigit() and 1 <= int(asked) <= 1024):
            raise UsageError(f"GPUCTL_ANSIBLE_FORKS={asked[:40]!r} is not a whole number from 1 to 1024",
                             hint="unset it to use one fork per node up to 128")
        cap = int(asked)
    return max(1, min(hosts, cap))


def render_ansible_cfg(paths: Paths, hosts: int = MAX_FORKS) -> str:
    return "\n".join([
        "# Written by gpuctl: lets `ansible-playbook -i inventory.yml site.yml` run from this directory.",
        "[defaults]",
        f"roles_path = {ini_value('roles_path', ROLES_PATH)}",
        "host_key_checking = True",
        "retry_files_enabled = False",
        "interpreter_python = auto_silent",
        f"forks = {forks_for(hosts)}",
        "",
        "[ssh_connection]",
        "pipelining = True",
        # ControlPersist keeps one connection per node across tasks: most of a re-run's speed. With
        # more nodes than forks, a node waits while the other waves run its task (minutes for a
        # driver install): 30 minutes keeps its connection through that instead of reconnecting.
        "ssh_args = -o ControlMaster=auto -o ControlPersist=30m -o ServerAliveInterval=5 -o ServerAliveCountMax=2",
        f"control_path_dir = {ini_value('control_path_dir', paths.base / 'cp')}",
        "",
    ])
