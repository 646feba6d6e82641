"""`gpuctl configure`: from ClusterOutputs to configured nodes. Python decides, Ansible delivers.

1. Write the cluster's inventory (data only, every string `!unsafe`), ansible.cfg, and the site and
   deliver playbooks rendered from templates/ (render.py).
2. Verify nodes whose inputs are unchanged since their last successful run, in one ssh round trip
   each (converge.py); only the others go on.
3. The site playbook installs the stack, sets the MTU and gathers each node's topology, fetched
   back as a tar.
4. gpuctl unpacks each bundle, detects and tunes in this process, and writes the node's nccl.conf
   and explain.json (decide.py).
5. The deliver playbook installs those files on each node and checks them.

Both playbooks also run by hand from the cluster directory with `ansible-playbook -i inventory.yml`.
"""

from __future__ import annotations

import os
from pathlib import Path

from toolkit.configure import converge
from toolkit.configure.ansible_run import NodeResult, Progress, RunResult, run_playbook
from toolkit.configure.decide import tune_spec_node, unpack_bundle, write_node_files
from toolkit.configure.discovered import addresses, discovered_interfaces, peer_addresses
from toolkit.configure.render import (
    DELIVER_ROLES,
    InventoryData,
    inventory_data,
    render_ansible_cfg,
    render_inventory,
    render_playbook,
    site_roles,
)
from toolkit.errors import GpuctlError
from toolkit.files import write_atomic
from toolkit.paths import Paths
from toolkit.providers.base import ClusterOutputs
from toolkit.spec.models import ClusterSpec
from toolkit.ssh import pin_host_keys
from toolkit.state import own_dir
from toolkit.topology.gather import gather_script

__all__ = ["configure", "write_files"]


def write_files(spec: ClusterSpec, outputs: ClusterOutputs, paths: Paths) -> InventoryData:
    for directory in (paths.bundles, paths.nccl):
        own_dir(directory)
    data = inventory_data(spec, outputs, paths, str(gather_script()))
    write_atomic(paths.inventory, render_inventory(data, cluster=outputs.cluster, provider=outputs.provider))
    roles = site_roles(outputs.fabric, storage=bool(outputs.volumes))
    write_atomic(paths.playbook, render_playbook(outputs, paths, roles))
    write_atomic(paths.deliver, render_playbook(outputs, paths, DELIVER_ROLES, template="deliver.yml.j2"))
    write_atomic(paths.config, render_ansible_cfg(paths))
    return data


def pinned_outputs(outputs: ClusterOutputs, paths: Paths, progress: Progress) -> ClusterOutputs:
    """Outputs whose nodes' host keys are pinned: the provider's own file (the lab writes one at
    creation), else the cluster's known_hosts, filled at first contact and shown to the operator."""
    if outputs.known_hosts is not None:
        return outputs
    pin_host_keys(outputs, paths.known_hosts, progress)
    return outputs.model_copy(update={"known_hosts": paths.known_hosts})


def configure(spec: ClusterSpec, outputs: ClusterOutputs, progress: Progress, *, full: bool = False) -> RunResult:
    """Verify, then converge only what differs; `full` runs every role on every node."""
    paths = Paths.of(outputs.cluster, create=True)
    outputs = pinned_outputs(outputs, paths, progress)
    data = write_files(spec, outputs, paths)
    names = [n.name for n in outputs.nodes]
    roles = (*site_roles(outputs.fabric, storage=bool(outputs.volumes)), *DELIVER_ROLES)
    if full:
        reasons = dict.fromkeys(names, "--full")
        verified: list[str] = []
    else:
        to_verify, reasons = converge.plan(paths.base, names, roles, data)
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
        result = run_playbook(paths.playbook, paths.inventory, names, progress, config=paths.config, limit=run_on)
        tuned = _decide(spec, outputs, paths, result, progress)
        if tuned:
            delivered = run_playbook(paths.deliver, paths.inventory, names, progress, config=paths.config,
                                     limit=tuned)
            result.rc = result.rc or delivered.rc
            for name, node in delivered.nodes.items():
                result.nodes[name].absorb(node)
        found = {name: discovered_interfaces(node.fabric) for name, node in result.nodes.items() if node.fabric}
        known = _found_addresses(paths.base, names, found)
        for name, node in result.nodes.items():
            node.reason = None if full else reasons[name]
            identity = converge.parse_keyvals(node.identity)
            # Only a node that finished every role, and whose identity the run read, is recorded.
            if node.ok and "boot_id" in identity and name in tuned:
                converge.write_record(
                    paths.base, name, roles, data, identity=identity, packages=node.packages,
                    found=found.get(name),
                    found_peers=peer_addresses(data.hosts[name].get("gpuctl_mtu_peer_nodes", []), known))
    for name in verified:
        result.nodes[name] = NodeResult(name, verified=True)
    result.nodes = {name: result.nodes[name] for name in names if name in result.nodes}
    return result


def _found_addresses(base: Path, names: list[str], found: dict[str, list[dict[str, str]]]) -> dict[str, list[str]]:
    """Every node's fabric addresses found on the node: from this run, else from its record (a
    verified node's bonds were found by an earlier run); nodes with neither are left out."""
    known: dict[str, list[str]] = {}
    for name in names:
        if name in found:
            known[name] = addresses(found[name])
            continue
        record = converge.load_record(base, name)
        if record is not None and record["expect"].get("addresses"):
            known[name] = [str(a) for a in record["expect"]["addresses"]]
    return known


def _decide(spec: ClusterSpec, outputs: ClusterOutputs, paths: Paths, result: RunResult,
            progress: Progress) -> list[str]:
    """Unpack and tune every node the site playbook finished; return the nodes that have files."""
    tuned: list[str] = []
    image_pools = {pool.name for pool in spec.node_pools if pool.gpu_stack == "image"}
    for node in outputs.nodes:
        run = result.nodes.get(node.name)
        if run is None or not run.ok:
            continue
        tar = paths.bundles / f"{node.name}.tar"
        try:
            bundle = unpack_bundle(tar, paths.bundles / node.name)
            # The first fabric interface carries NCCL's sockets (bootstrap, and the data on tcp);
            # the RDMA rails come from the gathered topology, every one of them.
            fabric = node.fabric_interfaces[0].name if node.fabric_interfaces else None
            config = tune_spec_node(spec, bundle, fabric, image_stack=node.pool in image_pools)
            changed = write_node_files(config, paths.nccl / node.name)
        except GpuctlError as exc:
            run.ok = False
            run.failed_task = "gpuctl: tune from the gathered topology"
            run.message = exc.message
            continue
        except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:
            # The bundle is what the node sent: whatever in it a reader trips on fails this node alone.
            run.ok = False
            run.failed_task = "gpuctl: tune from the gathered topology"
            run.message = f"its gathered files could not be read ({type(exc).__name__}: {str(exc)[:200]})"
            continue
        progress(f"{node.name} tuned: {'changed' if changed else 'unchanged'} ({_short(paths.nccl / node.name)})")
        tuned.append(node.name)
    return tuned


def _short(path: Path) -> str:
    home = os.path.expanduser("~")  # never raises: a home that cannot be found is left as it is
    return str(path).replace(home, "~", 1) if home != "~" else str(path)
