"""The fast path's fingerprint and verdicts, without a lab: what changes the fingerprint, what
does not, how a probe's output is judged, and whom a failed ping is held against."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from toolkit.configure import converge
from toolkit.configure.render import InventoryData
from toolkit.paths import ROLES_PATH
from toolkit.providers.base import ClusterOutputs

ROLES = ("mtu", "nccl_conf")
NODES = ("c-n-0", "c-n-1")


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cluster directory as configure leaves it, with a private copy of two roles."""
    roles = tmp_path / "roles"
    for role in ROLES:
        shutil.copytree(ROLES_PATH / role, roles / role)
    monkeypatch.setattr(converge, "ROLES_PATH", roles)
    cluster = tmp_path / "cluster"
    cluster.mkdir()
    (cluster / "site.yml").write_text("---\n- hosts: gpuctl_nodes\n")
    for name in NODES:
        (cluster / "nccl" / name).mkdir(parents=True)
        (cluster / "nccl" / name / "nccl.conf").write_text("NCCL_IB_DISABLE=1\n")
    return cluster


def inventory() -> InventoryData:
    """The typed inventory configure hands to converge (never read back from inventory.yml)."""
    hosts = {name: {"ansible_host": f"10.0.0.{i}", "gpuctl_fabric_interface": "fab0",
                    "gpuctl_fabric_ip": f"10.1.0.{i}/24", "gpuctl_mtu_peers": [f"10.1.0.{1 - i}"],
                    # Two rails, as an Alibaba node with two ERIs: the second has no address known.
                    "gpuctl_fabric_interfaces": [{"name": "fab0", "ipv4": f"10.1.0.{i}/24", "rdma_device": ""},
                                                 {"name": "fab1", "ipv4": "", "rdma_device": ""}]}
             for i, name in enumerate(NODES)}
    return InventoryData(hosts=hosts, group={"gpuctl_mtu": 8500, "gpuctl_gather_script": ""})


DATA = inventory()


def print_of(base: Path, node: str = NODES[0], data: InventoryData = DATA) -> str:
    return converge.fingerprint(converge.fingerprint_parts(base, node, ROLES, data))


def test_fingerprint_is_stable_when_nothing_changes(base: Path) -> None:
    before = print_of(base)
    assert re.fullmatch(r"[0-9a-f]{64}", before)
    # Files configure writes that do not decide the configuration leave it unchanged.
    (base / "bundles" / NODES[0]).mkdir(parents=True)
    (base / "bundles" / NODES[0] / "ibv_devinfo.txt").write_text("hca_id: mlx5_0\n")
    (base / "nccl" / NODES[0] / "explain.json").write_text("{}\n")
    # A stale nccl.sh from an older gpuctl decides nothing: nodes get only nccl.conf.
    (base / "nccl" / NODES[0] / "nccl.sh").write_text("export NCCL_IB_DISABLE=0\n")
    assert print_of(base) == before
    # ... and an input that does decide it changes it (so the comparison above can fail).
    (base / "nccl" / NODES[0] / "nccl.conf").write_text("NCCL_IB_DISABLE=0\n")
    assert print_of(base) != before


def test_fingerprint_changes_with_a_role_file(base: Path) -> None:
    before = converge.fingerprint_parts(base, NODES[0], ROLES, DATA)
    tasks = converge.ROLES_PATH / "mtu" / "tasks" / "main.yml"
    tasks.write_text(tasks.read_text() + "\n# edited\n")
    after = converge.fingerprint_parts(base, NODES[0], ROLES, DATA)
    assert converge.fingerprint(after) != converge.fingerprint(before)
    assert [k for k in after if after[k] != before[k]] == ["roles"]


def test_fingerprint_changes_with_a_new_role_file(base: Path) -> None:
    before = print_of(base)
    (converge.ROLES_PATH / "nccl_conf" / "tasks" / "extra.yml").write_text("---\n")
    assert print_of(base) != before


def test_fingerprint_changes_with_a_host_var_of_that_node_only(base: Path) -> None:
    before = {n: print_of(base, n) for n in NODES}
    changed = inventory()
    changed.hosts[NODES[1]]["gpuctl_fabric_interface"] = "eth9"
    assert print_of(base, NODES[1], changed) != before[NODES[1]]
    assert print_of(base, NODES[0], changed) == before[NODES[0]]


def test_fingerprint_changes_with_a_group_var_rendered_files_and_site(base: Path) -> None:
    seen = {print_of(base)}
    seen.add(print_of(base, data=InventoryData(hosts=DATA.hosts, group={**DATA.group, "gpuctl_mtu": 9000})))
    (base / "nccl" / NODES[0] / "nccl.conf").write_text("NCCL_IB_DISABLE=0\n")
    seen.add(print_of(base))
    (base / "site.yml").write_text("---\n- hosts: all\n")
    seen.add(print_of(base))
    assert len(seen) == 4


def test_plan_says_why_each_node_needs_the_playbook(base: Path) -> None:
    converge.write_record(base, NODES[0], ROLES, DATA, identity={"boot_id": "b", "machine_id": "m"},
                          packages={"dpkg": ["perftest"]})
    converge.write_record(base, NODES[1], ROLES, DATA, identity={"boot_id": "b", "machine_id": "m"}, packages={})
    split = converge.plan(base, NODES, ROLES, DATA)
    assert sorted(split.verify) == list(NODES)
    assert (split.reasons, split.repeer) == ({}, {})
    tasks = converge.ROLES_PATH / "mtu" / "tasks" / "main.yml"
    tasks.write_text(tasks.read_text() + "\n# edited\n")
    converge.forget(base, [NODES[1]])
    split = converge.plan(base, NODES, ROLES, DATA)
    assert split.verify == {}
    assert split.reasons == {NODES[0]: "roles changed", NODES[1]: "no record of a successful run"}


def test_a_node_whose_peers_alone_changed_is_pinged_again_not_rerun(base: Path) -> None:
    for name in NODES:
        converge.write_record(base, name, ROLES, DATA, identity={"boot_id": "b", "machine_id": "m"}, packages={})
    # A third node was appended: c-n-1 (the old last node) now pings it, and its names map says who it is.
    grown = inventory()
    grown.hosts[NODES[1]]["gpuctl_mtu_peers"] = ["10.1.0.2"]
    grown.hosts[NODES[1]]["gpuctl_mtu_peer_names"] = {"10.1.0.2": "c-n-2"}
    split = converge.plan(base, NODES, ROLES, grown)
    # c-n-1 is probed before the run on the peers its record holds (so drift of its own sends it
    # through the playbook), and again after it on its new peer.
    assert sorted(split.verify) == list(NODES)
    assert split.verify[NODES[1]]["expect"]["peers"] == ["10.1.0.0"]
    assert split.reasons == {}
    assert list(split.repeer) == [NODES[1]]
    assert split.repeer[NODES[1]]["expect"]["peers"] == ["10.1.0.2"]
    assert split.added == {NODES[1]: ["10.1.0.2"]}
    assert "10.1.0.2" in converge.probe_script(split.repeer[NODES[1]])
    # The record on disk is untouched until the probe passed ...
    assert converge.load_record(base, NODES[1])["expect"]["peers"] == ["10.1.0.0"]  # type: ignore[index]
    converge.rebase_record(base, NODES[1], ROLES, grown, split.repeer[NODES[1]])
    again = converge.plan(base, NODES, ROLES, grown)
    assert sorted(again.verify) == list(NODES)
    assert again.verify[NODES[1]]["identity"] == {"boot_id": "b", "machine_id": "m"}
    # ... and a change to any other var of the node still sends it through the playbook.
    grown.hosts[NODES[1]]["gpuctl_fabric_interface"] = "eth9"
    assert converge.plan(base, NODES, ROLES, grown).reasons == {NODES[1]: "inventory vars changed"}


def record(base: Path) -> dict[str, Any]:
    return converge.write_record(base, NODES[0], ROLES, DATA, identity={"boot_id": "b1", "machine_id": "m1"},
                                 packages={"dpkg": ["perftest", "libnccl2=2.26.2-1+cuda12.4"]})


def probe_output(rec: dict[str, Any], *, boot_id: str = "b1", mtus: tuple[str, ...] = ("8500", "8500"),
                 files: tuple[str, ...] | None = None, extra: tuple[str, ...] = ()) -> str:
    """What the probe script prints on a node in the given state (by default: as recorded)."""
    recorded = [rec["expect"]["files"][p] for p in sorted(rec["expect"]["files"])]
    hashes = files if files is not None else recorded
    return "\n".join([f"boot_id={boot_id}", "machine_id=m1", *(f"mtu{i}={m}" for i, m in enumerate(mtus)),
                      *(f"file{i}={h}" for i, h in enumerate(hashes)), *extra, "done=1"])


def test_probe_script_checks_everything_the_record_expects(base: Path) -> None:
    script = converge.probe_script(record(base))
    # The mtu role's own peer check, on the recorded peers: 8472 bytes, 3 tries 0.5 s apart, 1 s each.
    assert shlex.quote((converge.ROLES_PATH / "mtu" / "files" / "peer_ping.sh").read_text()) in script
    assert "peer_ping 8472 3 0.5 1 10.1.0.1\n" in script
    # Every rail's MTU, not only the first one's.
    assert 'echo "mtu0=$(cat /sys/class/net/fab0/mtu 2>/dev/null)"\n' in script
    assert 'echo "mtu1=$(cat /sys/class/net/fab1/mtu 2>/dev/null)"\n' in script
    assert "sha256sum < /etc/nccl.conf" in script
    # gpuctl's former profile.d copy of the settings must stay gone (it overrode nccl.conf).
    assert "sha256sum < /etc/profile.d/nccl.sh" not in script
    assert '[ ! -e /etc/profile.d/nccl.sh ] || echo "present=/etc/profile.d/nccl.sh"\n' in script
    assert "dpkg-query" in script
    assert "'installed 2.26.2-1+cuda12.4'" in script  # an apt pin is checked with its version


def test_judge_names_each_drift(base: Path) -> None:
    rec = record(base)
    assert converge.judge(NODES[0], rec, 0, probe_output(rec, extra=("ping_ok=10.1.0.1",)), "").problems == []
    drifted = probe_output(rec, boot_id="b2", mtus=("8500", "1500"), files=("0" * 64,),
                           extra=("missing=perftest", "present=/etc/profile.d/nccl.sh", "ping_mtu=10.1.0.1",
                                  "ping_down=10.1.0.9"))
    probe = converge.judge(NODES[0], rec, 0, drifted, "")
    # The second rail's MTU drifted while the first held: it is named.
    assert probe.problems == ["rebooted", "fab1: MTU 1500 != 8500", "nccl.conf differs",
                              "package perftest not installed",
                              "/etc/profile.d/nccl.sh present again (it overrides /etc/nccl.conf)"]
    gone = converge.judge(NODES[0], rec, 0, probe_output(rec, mtus=("8500", "")), "")
    assert gone.problems == ["no fabric interface fab1"]
    missing_file = converge.judge(NODES[0], rec, 0, probe_output(rec, files=("",)), "")
    assert missing_file.problems == ["nccl.conf missing"]
    assert probe.ping_failed == ["10.1.0.1"]
    assert probe.ping_unreachable == ["10.1.0.9"]
    lost = converge.judge(NODES[0], rec, 255, "", "ssh: connect to host 10.0.0.0 port 22: Connection refused")
    assert not lost.reachable
    assert "Connection refused" in lost.problems[0]


def test_a_failed_ping_is_held_against_the_sender_only_when_the_peer_looks_healthy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outputs = ClusterOutputs.model_validate({
        "cluster": "c", "provider": "local", "fabric": "tcp", "mtu": 8500,
        "nodes": [{"name": n, "pool": "n", "instance_id": n, "instance_type": "lab", "private_ip": f"10.0.0.{i}",
                   "ssh_host": f"10.0.0.{i}", "fabric_interfaces": [{"name": "fab0", "ipv4": f"10.1.0.{i}/24"}]}
                  for i, n in enumerate(NODES)],
    })
    rec = {"expect": {"mtu": 8500}}
    # Node 1's MTU drifted: node 0's ping to it fails, but the blame is node 1's alone.
    probes = {NODES[0]: converge.Probe(NODES[0], ping_failed=["10.1.0.1"]),
              NODES[1]: converge.Probe(NODES[1], problems=["MTU 1500 != 8500"], ping_failed=["10.1.0.0"])}
    monkeypatch.setattr(converge, "_run_probe", lambda _o, node, _r: probes[node])
    assert converge.verify(outputs, dict.fromkeys(NODES, rec)) == {NODES[0]: [], NODES[1]: ["MTU 1500 != 8500"]}
    # Both look healthy yet cannot reach each other: the path is broken, both get the playbook.
    probes[NODES[1]] = converge.Probe(NODES[1], ping_failed=["10.1.0.0"])
    found = converge.verify(outputs, dict.fromkeys(NODES, rec))
    assert found == {
        NODES[0]: ["ping -M do -s 8472 to 10.1.0.1 failed 3 times, 56-byte ping ok: path MTU below 8500"],
        NODES[1]: ["ping -M do -s 8472 to 10.1.0.0 failed 3 times, 56-byte ping ok: path MTU below 8500"]}
    # A healthy peer that does not answer 56-byte pings either is unreachable, not an MTU problem.
    probes[NODES[0]] = converge.Probe(NODES[0])
    probes[NODES[1]] = converge.Probe(NODES[1], ping_unreachable=["10.1.0.0"])
    found = converge.verify(outputs, dict.fromkeys(NODES, rec))
    assert found == {NODES[0]: [], NODES[1]: ["10.1.0.0 unreachable over the fabric (56-byte ping failed too)"]}


def test_peer_ping_retries_and_tells_unreachable_from_mtu_too_small(tmp_path: Path) -> None:
    """The shared peer check against a stand-in `ping`: a lost full-size reply is retried, a peer
    that answers only small pings has too small an MTU, one that answers nothing is unreachable."""
    import os
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "log"
    # Peer .1 answers everything; .2 answers full-size pings from the 2nd try on; .3 only small
    # pings; .4 nothing.
    (bin_dir / "ping").write_text(f"""#!/bin/sh
for a; do peer=$a; done
case "$*" in *"-M do"*) big=1;; *) big=0;; esac
echo "$peer $big" >> {log}
case "$peer" in
  10.1.0.1) exit 0;;
  10.1.0.2) [ "$big" = 1 ] && [ "$(grep -c '^10.1.0.2 1' {log})" -ge 2 ] && exit 0; exit 1;;
  10.1.0.3) [ "$big" = 0 ] && exit 0; exit 1;;
esac
exit 1
""")
    (bin_dir / "ping").chmod(0o755)
    script = (ROLES_PATH / "mtu" / "files" / "peer_ping.sh").read_text()
    done = subprocess.run(["sh", "-c", script, "peer_ping", "8472", "3", "0", "1",
                           "10.1.0.1", "10.1.0.2", "10.1.0.3", "10.1.0.4"],
                          capture_output=True, text=True, timeout=30, check=True,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert sorted(done.stdout.split()) == ["ping_down=10.1.0.4", "ping_mtu=10.1.0.3", "ping_ok=10.1.0.1",
                                           "ping_ok=10.1.0.2"]
    calls = log.read_text().splitlines()
    assert calls.count("10.1.0.1 1") == 1  # no retry once a full-size reply came
    assert calls.count("10.1.0.2 1") == 2  # retried, then answered
    assert calls.count("10.1.0.3 1") == 3
    assert calls.count("10.1.0.3 0") == 1
    assert calls.count("10.1.0.4 1") == 3
    assert calls.count("10.1.0.4 0") == 1
