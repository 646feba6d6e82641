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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolkit.configure import converge, node_local
from toolkit.configure.ansible_run import NodeResult, Progress, RunResult, run_playbook
from toolkit.configure.decide import tune_spec_node, unpack_bundle, write_node_files
from toolkit.configure.discovered import addresses, discovered_interfaces, peer_addresses
from toolkit.configure.render import (
    DELIVER_ROLES,
    InventoryData,
    inventory_data,
    node_local_playbooks,
    render_ansible_cfg,
    render_inventory,
    render_playbook,
    site_roles,
)
from toolkit.errors import GpuctlError
from toolkit.files import write_atomic
from toolkit.listing import first
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
    write_atomic(paths.config, render_ansible_cfg(paths, hosts=len(outputs.nodes)))
    return data


def pinned_outputs(outputs: ClusterOutputs, paths: Paths, progress: Progress,
                   only: Sequence[str] | None = None) -> tuple[ClusterOutputs, dict[str, str]]:
    """Outputs whose nodes' host keys are pinned: the provider's own file (the lab writes one at
    creation), else the cluster's known_hosts, filled at first contact and shown to the operator.
    Also the nodes that offered no key, with the reason: they sit this run out, the others go on.
    `only`: pin just these nodes (`configure --nodes`)."""
    if outputs.known_hosts is not None:
        return outputs, {}
    pinned = pin_host_keys(outputs, paths.known_hosts, progress, only=only)
    return outputs.model_copy(update={"known_hosts": paths.known_hosts}), pinned.failed


def configure(spec: ClusterSpec, outputs: ClusterOutputs, progress: Progress, *, full: bool = False,
              nodes: Sequence[str] | None = None, node_local: bool = False) -> RunResult:
    """Verify, then converge only what differs; `full` runs every role on every node.
    `node_local`: the site playbook runs on each node itself (node_local.py), the same playbook.

    `nodes`: only these are verified and run (`configure --nodes`); the others are neither touched
    nor reported, and their records stay as they are. A node that cannot be reached, fails a role
    or fails tuning is failed with its reason; every other node finishes.
    """
    paths = Paths.of(outputs.cluster, create=True)
    outputs, unreachable = pinned_outputs(outputs, paths, progress, only=nodes)
    data = write_files(spec, outputs, paths)
    names = [n.name for n in outputs.nodes if nodes is None or n.name in nodes]
    roles = (*site_roles(outputs.fabric, storage=bool(outputs.volumes)), *DELIVER_ROLES)
    shared = converge.shared_parts(roles, data)
    reachable = [name for name in names if name not in unreachable]
    split = converge.Plan()
    if full:
        reasons = dict.fromkeys(reachable, "--full")
        verified: list[str] = []
    else:
        split = converge.plan(paths.base, reachable, roles, data, shared)
        reasons = split.reasons
        for name, problems in converge.verify(outputs, split.verify).items():
            if problems:
                reasons[name] = ", ".join(problems)
                split.repeer.pop(name, None)  # drifted on its own: the site playbook heals it
        verified = [name for name in reachable if name not in reasons and name not in split.repeer]
        for name in reachable:
            progress(f"{name}: verified" if name in verified else
                     f"{name}: peers changed, pinged after the run" if name in split.repeer else
                     f"{name}: full run ({reasons[name]})")
    run_on = [name for name in reachable if name in reasons]
    result = RunResult(nodes={}, rc=0)
    if run_on:
        everyone = [n.name for n in outputs.nodes]
        converge.forget(paths.base, run_on)
        # The nodes that offered no host key go in the play too: they fail at once there, so the mtu
        # role counts them among the failed hosts and no node that pings one is failed for it.
        in_play = [name for name in names if name in reasons or name in unreachable]
        # --full: the install roles run even where the node's install record holds.
        extravars = {"gpuctl_full": True} if full else None
        local = _NodeLocal(outputs, paths, data, everyone, progress) if node_local else None
        if local is not None:
            result = local.site(in_play, extravars)
        else:
            result = run_playbook(paths.playbook, paths.inventory, everyone, progress, config=paths.config,
                                  limit=in_play, extravars=extravars)
        tuned = _decide(spec, outputs, paths, result, progress)
        found = {name: discovered_interfaces(node.fabric) for name, node in result.nodes.items() if node.fabric}
        known = _found_addresses(paths.base, everyone, found)
        if tuned:
            if local is not None:
                # The peers not to judge: every node this run could not finish (failed, no host key).
                failed = [name for name in in_play if name not in tuned]
                delivered = local.finish(tuned, _addresses_of(data, failed, known), known)
            else:
                delivered = run_playbook(paths.deliver, paths.inventory, everyone, progress, config=paths.config,
                                         limit=tuned)
            result.rc = result.rc or delivered.rc
            for name, node in delivered.nodes.items():
                result.nodes[name].absorb(node)
        for name, node in result.nodes.items():
            if name not in reasons:
                continue
            node.reason = None if full else reasons[name]
            identity = converge.parse_keyvals(node.identity)
            # Only a node that finished every role, and whose identity the run read, is recorded.
            if node.ok and "boot_id" in identity and name in tuned:
                converge.write_record(
                    paths.base, name, roles, data, identity=identity, packages=node.packages,
                    found=found.get(name), shared=shared,
                    found_peers=peer_addresses(data.hosts[name].get("gpuctl_mtu_peer_nodes", []), known))
    for name in verified:
        result.nodes[name] = NodeResult(name, verified=True)
    if split.repeer:
        # Nodes configured or verified now, and the repeer nodes themselves (they passed their
        # checks before the run), each with its record: a verified node's is the one the plan read.
        good = {name: split.verify[name] if name in split.verify and name not in reasons
                else converge.load_record(paths.base, name) for name, node in result.nodes.items() if node.ok}
        good.update((name, split.verify[name]) for name in split.repeer)
        good.update(_outside_peers(outputs, paths, roles, data, split, names, shared))
        result.nodes.update(_repeer(outputs, paths, roles, data, split, good, shared))
    for name in names:
        if name in unreachable:
            converge.forget(paths.base, [name])
            result.nodes[name] = NodeResult(name, ok=False, failed_task="gpuctl: pin the host key",
                                            message=unreachable[name])
    result.nodes = {name: result.nodes[name] for name in names if name in result.nodes}
    return result


# The mtu role's task that fails a node whose fabric peers did not answer its pings.
PING_CHECK = "mtu: Fail if a peer that is still up did not answer the full-size do-not-fragment ping"


class _NodeLocal:
    """configure --node-local: its two phases (node_local.py), each a controller playbook that ships
    files to the nodes, runs a playbook on each of them at once and fetches their reports."""

    def __init__(self, outputs: ClusterOutputs, paths: Paths, data: InventoryData, everyone: list[str],
                 progress: Progress) -> None:
        self.outputs, self.paths, self.data, self.everyone, self.progress = outputs, paths, data, everyone, progress
        self.playbooks = node_local_playbooks(outputs, paths)
        self.run: node_local.LocalRun | None = None

    def site(self, in_play: list[str], extravars: dict[str, bool] | None) -> RunResult:
        """The site playbook on every node of `in_play`, each node's result from its own events."""
        for name, text in self.playbooks.items():
            if name != "finish.yml":
                write_atomic(self.paths.base / name, text)
        shipped = {"site.yml": self.paths.playbook.read_text(), "finish.yml": self.playbooks["finish.yml"]}
        self.run = node_local.prepare(self.paths.base, self.data, in_play, playbooks=shipped,
                                      roles=(*site_roles(self.outputs.fabric, storage=bool(self.outputs.volumes)),
                                             *DELIVER_ROLES),
                                      cluster=self.outputs.cluster, provider=self.outputs.provider)
        return self._phase("site", in_play, extravars)

    def finish(self, tuned: list[str], unjudged: list[str], known: dict[str, list[str]]) -> RunResult:
        """finish.yml on every node of `tuned`: the MTU peers pinged (none of `unjudged`), the MTU
        kept, the NCCL settings installed; `known`: every node's fabric addresses found on the nodes."""
        assert self.run is not None, "the site phase runs first"
        node_local.prepare_finish(self.run, self.data, tuned, self.paths.nccl, unjudged=unjudged, known=known,
                                  cluster=self.outputs.cluster, provider=self.outputs.provider)
        result = self._phase("finish", tuned, None)
        # Each node is alone in its finish play, so a peer that dropped out of this phase (SSH lost,
        # a launch or role failed) was still pinged, and its peers failed for it. Those peers run
        # finish once more with the dropped nodes unjudged; a peer that fails again fails for real.
        failed = [name for name, node in result.nodes.items() if not node.ok]
        pingers = [name for name in failed if result.nodes[name].failed_task == PING_CHECK]
        dropped = [name for name in failed if name not in pingers]
        if pingers and dropped:
            self.progress(f"finish: {len(pingers)} node(s) failed the MTU check while {len(dropped)} peer(s) "
                          f"dropped out ({first(dropped, 4)}): checking them again without those")
            node_local.prepare_finish(self.run, self.data, pingers, self.paths.nccl,
                                      unjudged=sorted({*unjudged, *_addresses_of(self.data, dropped, known)}),
                                      known=known, cluster=self.outputs.cluster, provider=self.outputs.provider)
            again = self._phase("finish", pingers, None)
            result.nodes.update(again.nodes)
            if all(node.ok for node in result.nodes.values()):
                result.rc = 0
        return result

    def _phase(self, phase: str, names: list[str], extravars: dict[str, bool] | None) -> RunResult:
        assert self.run is not None
        try:
            controller = run_playbook(self.paths.node_local(phase), self.paths.inventory, self.everyone,
                                      self.progress, config=self.paths.config, limit=names, extravars=extravars)
        except KeyboardInterrupt:
            # The runs on the nodes go on without the controller: stop them (a second Ctrl-C leaves
            # them, and the next launch on each node stops its run then).
            self.progress(f"stopping the {phase} runs on {len(names)} node(s); Ctrl-C again leaves them to the "
                          "next configure")
            run_playbook(self.paths.node_local("stop"), self.paths.inventory, self.everyone, self.progress,
                         config=self.paths.config, limit=names)
            raise
        for name, seen in controller.nodes.items():
            local = node_local.read_report(self.run.results / f"{name}.{phase}.tar", name, self.progress,
                                           self.paths.bundles)
            if local is not None:
                own = dict(local.roles)
                local.absorb(seen)
                local.roles = {**seen.roles, **own}  # each role's status is the node's own
                controller.nodes[name] = local
        return controller


def _addresses_of(data: InventoryData, names: list[str], known: dict[str, list[str]]) -> list[str]:
    """Every fabric address of these nodes: the provider's (each rail) and those found on them."""
    found: list[str] = []
    for name in names:
        host = data.hosts.get(name, {})
        found += [str(host.get("gpuctl_fabric_ip") or "").split("/")[0],
                  *(str(rail.get("ipv4") or "").split("/")[0] for rail in host.get("gpuctl_fabric_interfaces") or []),
                  *known.get(name, [])]
    return sorted({address for address in found if address})


def _outside_peers(outputs: ClusterOutputs, paths: Paths, roles: Sequence[str], data: InventoryData,
                   split: converge.Plan, names: Sequence[str], shared: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Under --nodes: the nodes outside the selection that a repeer node pings anew, with a record
    for today's inputs, probed now (read-only) and healthy, with their records; only those are
    judged. The run does not touch them otherwise, and reports none of them."""
    added = {address for peers in split.added.values() for address in peers}
    if not added:
        return {}
    selected = set(names)
    records: dict[str, dict[str, Any]] = {}
    for name in (n.name for n in outputs.nodes):
        if name in selected:
            continue
        record = converge.load_record(paths.base, name)
        # The address first (a dict lookup), the fingerprint (files read) only for a new peer.
        if record is not None and added & set(record["expect"].get("addresses") or []) \
                and converge.is_current(paths.base, name, record, roles, data, shared):
            records[name] = record
    return {name: records[name] for name, problems in converge.verify(outputs, records).items() if not problems}


def _repeer(outputs: ClusterOutputs, paths: Paths, roles: Sequence[str], data: InventoryData,
            split: converge.Plan, good: dict[str, dict[str, Any] | None],
            shared: dict[str, str]) -> dict[str, NodeResult]:
    """Probe the nodes whose peer set alone changed, now that the nodes this run configured (the
    appended ones among them) are up; `good`: the nodes judged healthy this run (configured or
    verified) with their records, whose addresses a failed ping counts against the pinger. A node that reaches its new
    peers keeps its configuration and gets a record for today's inputs; one that does not is failed
    with what its pings saw, and its record dropped, so the next configure runs its mtu role. A
    node with a new peer that nobody could judge (it failed this run) keeps its old record: it is
    verified, says which peers were not pinged, and the next configure pings them."""
    healthy = {address for record in good.values() if record is not None
               for address in record["expect"].get("addresses") or []}
    results: dict[str, NodeResult] = {}
    for name, problems in converge.verify(outputs, split.repeer, healthy=healthy).items():
        if problems:
            converge.forget(paths.base, [name])
            results[name] = NodeResult(name, ok=False, failed_task="gpuctl: ping the new MTU peers",
                                       message=", ".join(problems), reason="peers changed")
            continue
        unjudged = [peer for peer in split.added.get(name, []) if peer not in healthy]
        if unjudged:
            results[name] = NodeResult(name, verified=True, notes=[
                f"mtu: Note: new peers {', '.join(unjudged[:8])} not judged (they are not ready): "
                "the next configure pings them"])
            continue
        converge.rebase_record(paths.base, name, roles, data, split.repeer[name], shared)
        results[name] = NodeResult(name, verified=True, notes=["mtu: Note: new peers pinged at full size"])
    return results


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
