"""What `gpuctl configure` costs on the controller, per phase, at 1,250 nodes (10,000 GPUs).

The real code path with fake node bundles: gpuctl's own functions, in the order configure calls
them, on outputs of N nodes with two fabric interfaces each, and each node's gathered bundle a tar of
real captures (the H100 RoCE node the project ships in examples/captures/h100-roce-node). Nothing
connects anywhere. Phases:

  render    inventory data (peer sets and their names), inventory.yml, site/deliver playbooks, ansible.cfg
  plan      every node's fingerprint, no record yet (a first configure)
  decide    unpack each node's bundle, detect, tune, write nccl.conf and explain.json (configure's _decide)
  local     what `configure --node-local` adds: the shipped bundle (built once), each node's two
            inventories and the tar of its tuned files (node_local.prepare and prepare_finish)
  record    write each node's converge record
  replan    every node's fingerprint against its record (the bookkeeping of a re-run)
  ansible   ansible-playbook parses the N-host inventory and runs the site playbook's first play
            (the inventory check: an action that runs on the controller, no connection) on every host

Prints each phase's seconds at each size, the slope per 100 nodes, and peak RSS.

    .venv/bin/python bench/controller_bench.py [--nodes 250 1250] [--no-ansible]

Target (issue 25): the controller's work for 1,250 nodes <= 5 minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
CAPTURE = REPO / "examples" / "captures" / "h100-roce-node"
PHASES = ("render", "plan", "decide", "local", "record", "replan", "ansible")
TARGET_S = 300.0


POOL = 250  # nodes per pool (a spec's pool holds at most 512)


def spec_text(nodes: int) -> str:
    counts = [min(POOL, nodes - k * POOL) for k in range((nodes + POOL - 1) // POOL)]
    pools = "".join(f"  - {{name: p{k}, instance_type: lab, count: {count}, capture: {CAPTURE}}}\n"
                    for k, count in enumerate(counts))
    return f"""\
name: ctl{nodes}
provider: local
node_pools:
{pools}network: {{fabric: tcp, mtu: 8500, admin_cidr: 127.0.0.0/8}}
lifecycle: {{ttl: 2h}}
"""


def fake_outputs(cluster: str, nodes: int):  # type: ignore[no-untyped-def]
    from toolkit.providers.base import ClusterOutputs, FabricInterface, NodeOutput

    listed = []
    for i in range(nodes):
        a, b = divmod(i, 250)
        listed.append(NodeOutput(
            name=f"{cluster}-p{a}-{b}", pool=f"p{a}", instance_id=f"i-{i:06d}", instance_type="lab",
            private_ip=f"10.0.{a}.{b + 1}", ssh_host=f"10.0.{a}.{b + 1}",
            fabric_interfaces=[FabricInterface(name="eth1", ipv4=f"10.1.{a}.{b + 1}/16"),
                               FabricInterface(name="eth2", ipv4=f"10.2.{a}.{b + 1}/16")]))
    return ClusterOutputs(cluster=cluster, provider="local", fabric="tcp", mtu=8500, nodes=listed)


def run(nodes: int, *, ansible: bool) -> dict[str, float]:
    from toolkit.configure import _decide, converge, node_local, write_files
    from toolkit.configure.ansible_run import NodeResult, RunResult
    from toolkit.configure.render import DELIVER_ROLES, node_local_playbooks, site_roles
    from toolkit.paths import Paths
    from toolkit.spec.loader import load_spec_text

    spec = load_spec_text(spec_text(nodes))
    outputs = fake_outputs(spec.name, nodes)
    paths = Paths.of(spec.name, create=True)
    names = [n.name for n in outputs.nodes]
    roles = (*site_roles(outputs.fabric, storage=False), *DELIVER_ROLES)
    # Every node sends back the same real captures, as its gather would: one tar each.
    paths.bundles.mkdir(parents=True, exist_ok=True)
    sample = paths.base / "sample.tar"
    with tarfile.open(sample, "w") as archive:
        for source in sorted(CAPTURE.glob("*.txt")):
            archive.add(source, arcname=source.name)
    for name in names:
        shutil.copyfile(sample, paths.bundles / f"{name}.tar")
    seconds: dict[str, float] = {}

    start = time.perf_counter()
    data = write_files(spec, outputs, paths)
    seconds["render"] = time.perf_counter() - start

    start = time.perf_counter()
    split = converge.plan(paths.base, names, roles, data)
    seconds["plan"] = time.perf_counter() - start
    assert len(split.reasons) == nodes, "a first configure has no records"

    result = RunResult(nodes={name: NodeResult(name) for name in names}, rc=0)
    start = time.perf_counter()
    tuned = _decide(spec, outputs, paths, result, lambda _line: None)
    seconds["decide"] = time.perf_counter() - start
    assert len(tuned) == nodes, [n.line() for n in result.nodes.values() if not n.ok][:3]

    start = time.perf_counter()
    shipped = {"site.yml": paths.playbook.read_text(),
               "finish.yml": node_local_playbooks(outputs, paths)["finish.yml"]}
    local = node_local.prepare(paths.base, data, names, playbooks=shipped, roles=roles, cluster=outputs.cluster,
                               provider=outputs.provider)
    node_local.prepare_finish(local, data, names, paths.nccl, unjudged=[], known={}, cluster=outputs.cluster,
                              provider=outputs.provider)
    seconds["local"] = time.perf_counter() - start

    start = time.perf_counter()
    shared = converge.shared_parts(roles, data)  # once per run, as configure does
    for name in names:
        converge.write_record(paths.base, name, roles, data, identity={"boot_id": "b", "machine_id": "m"},
                              packages={"dpkg": ["perftest", "rdma-core"]}, shared=shared)
    seconds["record"] = time.perf_counter() - start

    start = time.perf_counter()
    again = converge.plan(paths.base, names, roles, data)
    seconds["replan"] = time.perf_counter() - start
    assert len(again.verify) == nodes, list(again.reasons.items())[:3]

    if ansible:
        seconds["ansible"] = first_play(paths, nodes)
    return seconds


def first_play(paths, nodes: int) -> float:  # type: ignore[no-untyped-def]
    """The rendered site playbook's first play alone (the inventory check), on every host."""
    import yaml

    plays = yaml.safe_load(paths.playbook.read_text())
    check = paths.base / "check.yml"
    check.write_text(yaml.safe_dump([plays[0]], sort_keys=False))
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(paths.inventory), str(check),
            "--forks", str(min(nodes, 32))]
    env = {**os.environ, "ANSIBLE_CONFIG": str(paths.config)}
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0 or "ok=1" not in done.stdout:
        raise SystemExit(f"ansible-playbook failed ({done.returncode}): {done.stdout[-800:]}{done.stderr[-800:]}")
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[250, 1250])
    parser.add_argument("--no-ansible", action="store_true", help="leave out the ansible-playbook phase")
    args = parser.parse_args()
    phases = [p for p in PHASES if p != "ansible" or not args.no_ansible]
    figures: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="gpuctl-ctl-bench-") as tmp:
        os.environ["GPUCTL_HOME"] = tmp
        print(f"{'nodes':>6}  " + "  ".join(f"{p:>8}" for p in phases) + f"  {'total':>8}")
        for count in args.nodes:
            seconds = run(count, ansible=not args.no_ansible)
            figures[count] = seconds
            print(f"{count:>6}  " + "  ".join(f"{seconds[p]:>7.2f}s" for p in phases)
                  + f"  {sum(seconds.values()):>7.2f}s", flush=True)
    sizes = sorted(figures)
    if len(sizes) >= 2:
        low, high = sizes[0], sizes[-1]
        slope = {p: (figures[high][p] - figures[low][p]) / (high - low) * 100 for p in phases}
        print(f"{'slope':>6}  " + "  ".join(f"{slope[p]:>7.2f}s" for p in phases)
              + f"  {sum(slope.values()):>7.2f}s  per 100 nodes ({low} -> {high})")
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process: {peak_mib:.0f} MiB (ansible-playbook is a child, not counted)")
    largest = sum(figures[sizes[-1]].values())
    verdict = "met" if sizes[-1] < 1250 or largest <= TARGET_S else "MISSED"
    print(f"target: controller work for 1,250 nodes <= {TARGET_S:.0f} s: {verdict} ({largest:.1f} s at {sizes[-1]})")
    return 0 if verdict == "met" else 1


if __name__ == "__main__":
    raise SystemExit(main())
