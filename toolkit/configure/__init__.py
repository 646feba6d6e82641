"""`gpuctl configure`: from ClusterOutputs to configured nodes, through rendered Ansible.

Writes into the cluster directory an inventory (from the provider's outputs), an ansible.cfg and
the site playbook rendered from templates/site.yml.j2, then runs it with ansible-runner. All three
also work with plain `ansible-playbook -i inventory.yml site.yml` from that directory.

The tuned NCCL settings are computed here, in Python (`render-nccl`, which the nccl_conf role
calls on the controller for each node's fetched bundle); Ansible only delivers and verifies them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from toolkit.ansible_run import NodeResult, Progress, RunResult, run_playbook
from toolkit.providers.base import ClusterOutputs
from toolkit.spec.models import ClusterSpec
from toolkit.state import cluster_dir
from toolkit.topology.gather import gather_script

if TYPE_CHECKING:
    from toolkit.tuning.config import NcclConfig

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = REPO / "templates"
ROLES_PATH = REPO / "playbooks" / "roles"
# The roles every cluster gets, in order (the local lab's tcp fabric gets exactly these).
ROLES = ("nvidia_driver", "cuda", "nccl", "rdma_userspace", "mtu", "topology_facts", "nccl_conf")
# The role that brings up each RDMA fabric, placed right after rdma_userspace: Alibaba's eRDMA stack
# (erdma) and the check of Tencent HCC's preinstalled RDMA driver (rdma). A tcp fabric has none.
FABRIC_ROLES = {"erdma": "erdma", "rdma": "rdma"}


@dataclass(frozen=True)
class Paths:
    """Everything configure writes or reads, so the renderers stay pure (and golden-testable)."""

    base: Path

    @property
    def inventory(self) -> Path:
        return self.base / "inventory.yml"

    @property
    def playbook(self) -> Path:
        return self.base / "site.yml"

    @property
    def config(self) -> Path:
        return self.base / "ansible.cfg"

    @property
    def bundles(self) -> Path:
        return self.base / "bundles"

    @property
    def nccl(self) -> Path:
        return self.base / "nccl"

    @property
    def runner(self) -> Path:
        return self.base / "ansible-runner"


def render_inventory(spec: ClusterSpec, outputs: ClusterOutputs, paths: Paths, gather: str) -> str:
    from toolkit.providers.lab_replay import replay_note

    hosts: dict[str, dict[str, Any]] = {}
    for node in outputs.nodes:
        fabric = node.fabric_interfaces[0] if node.fabric_interfaces else None
        host: dict[str, Any] = {
            "ansible_host": node.ssh_host, "ansible_port": node.ssh_port, "ansible_user": node.ssh_user,
            "gpuctl_pool": node.pool, "gpuctl_instance_type": node.instance_type,
            "gpuctl_fabric_interface": fabric.name if fabric else "",
            "gpuctl_fabric_ip": (fabric.ipv4 or "") if fabric else "",
        }
        if node.replay_capture:
            host.update(gpuctl_lab_node=True, gpuctl_replay_capture=node.replay_capture,
                        gpuctl_replay_note=replay_note(node.replay_capture))
        hosts[node.name] = host
    ssh_args = ["-o StrictHostKeyChecking=yes"]
    if outputs.known_hosts:
        ssh_args.append(f"-o UserKnownHostsFile={outputs.known_hosts}")
    group_vars: dict[str, Any] = {
        "ansible_ssh_common_args": " ".join(ssh_args),
        "ansible_python_interpreter": "/usr/bin/python3" if outputs.provider == "local" else "auto_silent",
        "gpuctl_cluster": outputs.cluster, "gpuctl_provider": outputs.provider,
        "gpuctl_fabric": outputs.fabric, "gpuctl_mtu": outputs.mtu,
        "gpuctl_nccl_version": spec.software.nccl,
        "gpuctl_nccl_overrides": spec.nccl_override_values(),
        "gpuctl_gather_script": gather,
        "gpuctl_bundle_dir": str(paths.bundles), "gpuctl_nccl_dir": str(paths.nccl),
        "nvidia_driver_version": spec.software.driver, "cuda_version": spec.software.cuda,
        "nccl_version": spec.software.nccl,
    }
    if outputs.ssh_private_key:
        group_vars["ansible_ssh_private_key_file"] = str(outputs.ssh_private_key)
    inventory = {"all": {"children": {"gpuctl_nodes": {"hosts": hosts, "vars": group_vars}}}}
    header = (f"# Inventory of cluster {outputs.cluster}, written by gpuctl from the {outputs.provider} "
              "provider's outputs.\n")
    return "---\n" + header + yaml.safe_dump(inventory, sort_keys=False, default_flow_style=False, width=200)


def site_roles(fabric: str) -> tuple[str, ...]:
    """The site playbook's roles for a fabric, in order: ROLES plus the fabric's own role, if any."""
    fabric_role = FABRIC_ROLES.get(fabric)
    if fabric_role is None:
        return ROLES
    after = ROLES.index("rdma_userspace") + 1
    return (*ROLES[:after], fabric_role, *ROLES[after:])


def render_playbook(outputs: ClusterOutputs, paths: Paths, roles: Sequence[str] | None = None) -> str:
    """The site playbook for this cluster; `roles` defaults to site_roles(outputs.fabric)."""
    import jinja2

    if roles is None:
        roles = site_roles(outputs.fabric)

    # Delimiters that never clash with Ansible's own {{ }} / {% %} in the rendered playbook.
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        block_start_string="[%", block_end_string="%]",
        variable_start_string="[[", variable_end_string="]]",
        comment_start_string="[#", comment_end_string="#]",
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined, autoescape=False,
    )
    return env.get_template("site.yml.j2").render(
        cluster=outputs.cluster, provider=outputs.provider, node_count=len(outputs.nodes),
        cluster_dir=str(paths.base), roles=list(roles),
    )


def render_ansible_cfg(paths: Paths) -> str:
    return "\n".join([
        "# Written by gpuctl: lets `ansible-playbook -i inventory.yml site.yml` run from this directory.",
        "[defaults]",
        f"roles_path = {ROLES_PATH}",
        "host_key_checking = True",
        "retry_files_enabled = False",
        "interpreter_python = auto_silent",
        "forks = 32",
        "",
        "[ssh_connection]",
        "pipelining = True",
        # ControlPersist keeps one connection per node across tasks: most of a re-run's speed.
        "ssh_args = -o ControlMaster=auto -o ControlPersist=120s -o ServerAliveInterval=5 -o ServerAliveCountMax=2",
        f"control_path_dir = {paths.base / 'cp'}",
        "",
    ])


def write_files(spec: ClusterSpec, outputs: ClusterOutputs) -> Paths:
    paths = Paths(cluster_dir(outputs.cluster, create=True))
    for directory in (paths.bundles, paths.nccl, paths.runner):
        directory.mkdir(parents=True, exist_ok=True)
    paths.inventory.write_text(render_inventory(spec, outputs, paths, str(gather_script())))
    paths.playbook.write_text(render_playbook(outputs, paths))
    paths.config.write_text(render_ansible_cfg(paths))
    return paths


def configure(spec: ClusterSpec, outputs: ClusterOutputs, progress: Progress, *, full: bool = False) -> RunResult:
    """Verify, then converge only what differs (see toolkit.converge); `full` runs every role on every node.

    Nodes whose recorded fingerprint still matches get one verification round trip; the rest (no
    record, changed inputs, failed verification) get the site playbook, limited to them.
    """
    from toolkit import converge

    paths = write_files(spec, outputs)
    names = [n.name for n in outputs.nodes]
    roles = site_roles(outputs.fabric)
    if full:
        reasons = dict.fromkeys(names, "--full")
        verified: list[str] = []
    else:
        to_verify, reasons = converge.plan(paths.base, names, roles)
        for name, problems in converge.verify(outputs, to_verify).items():
            if problems:
                reasons[name] = ", ".join(problems)
        verified = [name for name in names if name not in reasons]
        for name in names:
            progress(f"{name}: verified" if name in verified else f"{name}: full run ({reasons[name]})")
    run_on = [name for name in names if name in reasons]
    result = RunResult(nodes={}, rc=0)
    if run_on:
        converge.forget(paths.base, run_on)
        result = run_playbook(paths.runner, paths.playbook, paths.inventory, names, progress,
                              config=paths.config, limit=run_on)
        for name, node in result.nodes.items():
            node.reason = None if full else reasons[name]
            identity = converge.parse_keyvals(node.identity)
            # Only a node that finished every role, and whose identity the run read, is recorded.
            if node.ok and "boot_id" in identity:
                converge.write_record(paths.base, name, roles, identity=identity, packages=node.packages)
    for name in verified:
        result.nodes[name] = NodeResult(name, verified=True)
    result.nodes = {name: result.nodes[name] for name in names if name in result.nodes}
    return result


# ---------------------------------------------------------------- render-nccl (called by nccl_conf)

def tune_node(bundle: Path, *, fabric: str, mtu: int, nccl_version: str, provider: str,
              overrides: dict[str, str], fabric_interface: str | None = None) -> NcclConfig:
    """The NCCL settings for one node from its gathered bundle: what the nccl_conf role installs
    and what `gpuctl up` explains, computed in this one place so the two never differ."""
    from toolkit.topology.detect import detect_paths
    from toolkit.tuning.engine import tune

    return tune(detect_paths([bundle]), fabric=fabric, mtu=mtu, nccl_version=nccl_version, overrides=overrides,
                provider=provider if provider in ("alicloud", "tencentcloud") else None,
                fabric_interface=fabric_interface)


def render_nccl(bundle: Path, out: Path, *, fabric: str, mtu: int, nccl_version: str, provider: str,
                overrides: dict[str, str], fabric_interface: str | None = None) -> bool:
    """Tune one node from its bundle and write nccl.conf, nccl.sh and explain.json into `out`.

    Returns whether any file's content changed, so the role reports `changed` only then.
    """
    config = tune_node(bundle, fabric=fabric, mtu=mtu, nccl_version=nccl_version, provider=provider,
                       overrides=overrides, fabric_interface=fabric_interface)
    files = {
        "nccl.conf": config.render_nccl_conf(),
        "nccl.sh": config.render_env(),
        "explain.json": json.dumps(config.to_json(), indent=2, sort_keys=True) + "\n",
    }
    out.mkdir(parents=True, exist_ok=True)
    changed = False
    for name, text in files.items():
        target = out / name
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
            changed = True
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolkit.configure")
    sub = parser.add_subparsers(dest="command", required=True)
    render = sub.add_parser("render-nccl", help="tune one node from its bundle; write nccl.conf and nccl.sh")
    render.add_argument("--bundle", type=Path, required=True)
    render.add_argument("--out", type=Path, required=True)
    render.add_argument("--fabric", required=True)
    render.add_argument("--mtu", type=int, required=True)
    render.add_argument("--nccl-version", required=True)
    render.add_argument("--provider", default="local")
    render.add_argument("--overrides-json", default="{}")
    render.add_argument("--fabric-interface", default="", help="the cluster's fabric interface on this node")
    args = parser.parse_args(argv)
    overrides = {str(k): str(v) for k, v in json.loads(args.overrides_json).items()}
    changed = render_nccl(args.bundle, args.out, fabric=args.fabric, mtu=args.mtu,
                          nccl_version=args.nccl_version, provider=args.provider, overrides=overrides,
                          fabric_interface=args.fabric_interface or None)
    print("changed" if changed else "unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
