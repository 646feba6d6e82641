"""What configure hands to Ansible and ssh is data: proved with the real tools and planted canaries.

Each test plants a hostile value where the old code let one through (a spec value in the
inventory, a login name in the ssh command line, a credential in Ansible's environment, a tar
from a node) and checks with the real ansible-playbook, ssh or tarfile that nothing ran, nothing
leaked and nothing landed outside its folder.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from toolkit.configure.ansible_run import run_playbook
from toolkit.configure.decide import load_explained, unpack_bundle, write_node_files
from toolkit.configure.render import inventory_data, render_ansible_cfg, render_inventory
from toolkit.errors import ParseError, ProviderError
from toolkit.lock import cluster_lock
from toolkit.paths import Paths
from toolkit.providers.base import ClusterOutputs, FabricInterface, NodeOutput
from toolkit.secrets import child_env, credential_names, redact
from toolkit.spec.loader import load_spec_text
from toolkit.spec.models import Software
from toolkit.ssh import pin_host_keys, ssh_argv
from toolkit.tuning.config import NcclConfig, NcclSetting

pytestmark = pytest.mark.unit

SPEC = """\
name: safe
provider: local
node_pools:
  - {name: n, instance_type: lab, count: 1}
network: {fabric: tcp, admin_cidr: 127.0.0.0/8}
lifecycle: {ttl: 2h}
"""
SECRET = "planted-secret-value-7f3a"


def hostile(canary: Path) -> list[str]:
    """Values Ansible would evaluate if they reached it as plain strings."""
    return [
        "{{ lookup('pipe', 'touch " + str(canary) + "') }}",
        "{{ lookup('env', 'ALICLOUD_SECRET_KEY') }}",
        "{% for x in [1] %}{{ lookup('pipe', 'touch " + str(canary) + "') }}{% endfor %}",
        "{{ query('ansible.builtin.pipe', 'touch " + str(canary) + "') }}",
    ]


def test_inventory_values_stay_literal_in_a_real_ansible_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The validator refuses these in a spec; here they are planted past it (as a provider's outputs or a
    future field could carry them) to prove the inventory itself never lets Ansible evaluate one."""
    canary = tmp_path / "canary"
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", SECRET)
    values = hostile(canary)
    spec = load_spec_text(SPEC)
    spec = spec.model_copy(update={"software": Software.model_construct(
        driver=values[0], cuda=values[1], nccl=values[2], nccl_tests="2.14.1")})
    node = NodeOutput.model_construct(
        name="safe-n-0", pool="n", instance_id="i", instance_type=values[3], private_ip="127.0.0.1",
        public_ip=None, ssh_host="127.0.0.1", ssh_port=22, ssh_user="root",
        fabric_interfaces=[FabricInterface(name="fab0", ipv4="10.0.0.1/24")], replay_capture=values[0])
    outputs = ClusterOutputs.model_construct(cluster="safe", provider="local", fabric="tcp", mtu=8500, nodes=[node],
                                             ssh_private_key=None, known_hosts=None)
    paths = Paths(tmp_path)
    data = inventory_data(spec, outputs, paths, gather=values[1])
    paths.inventory.write_text(render_inventory(data, cluster="safe", provider="local"))
    paths.config.write_text(render_ansible_cfg(paths))
    playbook = tmp_path / "show.yml"
    names = ["nvidia_driver_version", "cuda_version", "nccl_version", "gpuctl_instance_type",
             "gpuctl_replay_capture", "gpuctl_gather_script", "gpuctl_replay_note"]
    playbook.write_text(
        "- hosts: gpuctl_nodes\n  gather_facts: false\n  connection: local\n  tasks:\n"
        + "".join(f"    - ansible.builtin.debug:\n        msg: \"{name}={{{{ {name} }}}}\"\n" for name in names))
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(paths.inventory),
                           str(playbook)], capture_output=True, text=True, check=False, timeout=120,
                          env={**os.environ, "ANSIBLE_CONFIG": str(paths.config)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert not canary.exists()
    assert SECRET not in done.stdout + done.stderr
    assert "lookup('pipe'" in done.stdout  # shown as the literal text it is
    assert "lookup('env', 'ALICLOUD_SECRET_KEY')" in done.stdout


def closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_login_name_or_host_is_never_an_ssh_option(tmp_path: Path) -> None:
    """`ssh.user: "-oProxyCommand=..."` once ran a local command: the old argv put it first."""
    canary = tmp_path / "canary"
    for user, host in ((f"-oProxyCommand=touch {canary}", "127.0.0.1"), ("root", f"-oProxyCommand=touch {canary}")):
        node = NodeOutput.model_construct(name="n", pool="n", instance_id="i", instance_type="t", private_ip=host,
                                          public_ip=None, ssh_host=host, ssh_port=closed_port(), ssh_user=user,
                                          fabric_interfaces=[], replay_capture=None)
        outputs = ClusterOutputs.model_construct(cluster="c", provider="local", fabric="tcp", mtu=1500, nodes=[node],
                                                 ssh_private_key=None, known_hosts=tmp_path / "known_hosts")
        argv = ssh_argv(outputs, node, ["true"], batch=True)
        assert argv[-5:] == ["-l", user, "--", host, "true"]
        subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        assert not canary.exists()


@pytest.mark.parametrize(("field", "value"), [
    ("ssh_user", "-oProxyCommand=touch /tmp/x"), ("ssh_user", "root@evil"), ("ssh_host", "-oProxyCommand=x"),
    ("ssh_host", "host name"), ("name", "../../etc"), ("ssh_port", 0),
])
def test_provider_outputs_refuse_what_ssh_could_misread(field: str, value: object) -> None:
    node = {"name": "c-n-0", "pool": "n", "instance_id": "i", "instance_type": "t", "private_ip": "10.0.0.1",
            "ssh_host": "10.0.0.1", field: value}
    with pytest.raises(ValueError, match=field):
        NodeOutput.model_validate(node)


@pytest.mark.parametrize("name", ["-oProxyCommand", "-x", "eth 1", "a" * 16, ""])
def test_fabric_interface_names_refuse_what_a_command_could_read_as_an_option(name: str) -> None:
    with pytest.raises(ValueError, match="name"):
        FabricInterface(name=name)


def test_credentials_are_named_redacted_and_kept_from_children() -> None:
    env = {"ALICLOUD_SECRET_KEY": "sk-aaaa", "TENCENTCLOUD_SECRET_ID": "AKIDbbbb", "MY_API_TOKEN": "tok-cccc",
           "PULUMI_CONFIG_PASSPHRASE": "pass-dddd", "PATH": "/usr/bin", "HOME": "/root", "SSH_AUTH_SOCK": "/s"}
    assert credential_names(env) == ["ALICLOUD_SECRET_KEY", "TENCENTCLOUD_SECRET_ID", "PULUMI_CONFIG_PASSPHRASE",
                                      "MY_API_TOKEN"]
    text = "failed with sk-aaaa and AKIDbbbb, token tok-cccc, pass pass-dddd at /usr/bin"
    assert redact(text, env) == ("failed with <ALICLOUD_SECRET_KEY> and <TENCENTCLOUD_SECRET_ID>, token "
                                 "<MY_API_TOKEN>, pass <PULUMI_CONFIG_PASSPHRASE> at /usr/bin")
    assert child_env({"ANSIBLE_CONFIG": "/c"}, env) == {"PATH": "/usr/bin", "HOME": "/root", "SSH_AUTH_SOCK": "/s",
                                                        "ANSIBLE_CONFIG": "/c"}


def test_ansible_gets_no_credential_and_leaves_no_artifact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ansible-runner once kept the whole environment, secrets included, in artifacts/*/command."""
    for name in ("ALICLOUD_SECRET_KEY", "TENCENTCLOUD_SECRET_KEY", "PULUMI_CONFIG_PASSPHRASE", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, f"{SECRET}-{name}")
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    inventory = tmp_path / "inventory.yml"
    inventory.write_text("all:\n  hosts:\n    here: {ansible_connection: local, ansible_python_interpreter: "
                         f"{sys.executable}}}\n")
    playbook = tmp_path / "env.yml"
    playbook.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n"
                        "    - ansible.builtin.command: env\n      register: seen\n"
                        "    - ansible.builtin.copy: {content: '{{ seen.stdout }}', dest: '" + str(tmp_path / "env.txt")
                        + "', mode: '0600'}\n")
    config = tmp_path / "ansible.cfg"
    config.write_text("[defaults]\nretry_files_enabled = False\n")
    result = run_playbook(playbook, inventory, ["here"], lambda _line: None, config=config)
    assert result.ok, [n.line() for n in result.nodes.values()]
    seen = (tmp_path / "env.txt").read_text()
    assert "PATH=" in seen
    assert SECRET not in seen
    assert list((tmp_path / "tmp").iterdir()) == []  # the runner's private folder is gone
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


def tar_with(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for info, data in members:
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buffer.getvalue()


def test_a_bundle_from_a_node_cannot_write_outside_its_folder(tmp_path: Path) -> None:
    ok = tarfile.TarInfo("./nvidia-smi-topo-m.txt")
    tar = tmp_path / "node.tar"
    tar.write_bytes(tar_with([(ok, b"GPU0\tX\n")]))
    dest = unpack_bundle(tar, tmp_path / "bundles" / "node")
    assert (dest / "nvidia-smi-topo-m.txt").read_bytes() == b"GPU0\tX\n"
    tar.write_bytes(tar_with([(ok, b"x"), (tarfile.TarInfo("../escaped.txt"), b"evil")]))
    with pytest.raises(ParseError, match="outside the destination"):
        unpack_bundle(tar, tmp_path / "bundles" / "node")
    assert not (tmp_path / "bundles" / "escaped.txt").exists()
    # The bundle already there is left as it was, not half-replaced.
    assert (dest / "nvidia-smi-topo-m.txt").read_bytes() == b"GPU0\tX\n"
    # An absolute name lands inside the bundle, never at that absolute path.
    tar.write_bytes(tar_with([(ok, b"x"), (tarfile.TarInfo("/absolute-escape.txt"), b"evil")]))
    unpack_bundle(tar, tmp_path / "bundles" / "node")
    assert not Path("/absolute-escape.txt").exists()
    assert (dest / "absolute-escape.txt").read_bytes() == b"evil"
    link = tarfile.TarInfo("link")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    tar.write_bytes(tar_with([(ok, b"x"), (link, b"")]))
    unpack_bundle(tar, tmp_path / "bundles" / "node")  # links and devices are dropped, files kept
    assert not (tmp_path / "bundles" / "node" / "link").exists()
    assert not (tmp_path / "bundles" / "node" / "link").is_symlink()
    assert (dest / "nvidia-smi-topo-m.txt").read_bytes() == b"x"
    tar.write_bytes(b"not a tar at all")
    with pytest.raises(ParseError, match="cannot be unpacked"):
        unpack_bundle(tar, tmp_path / "bundles" / "other")


def test_explain_json_reads_back_what_was_written(tmp_path: Path) -> None:
    config = NcclConfig(hostname="h", nccl_version="2.26.2", fabric="tcp", notes=["a note"])
    config.set(NcclSetting("NCCL_SOCKET_IFNAME", "=fab0", "topology-rule", "the fabric interface", "provider"))
    config.set(NcclSetting("NCCL_SOCKET_IFNAME", "=eth1", "user-override", "spec.nccl_overrides", "spec"))
    assert write_node_files(config, tmp_path) is True
    assert write_node_files(config, tmp_path) is False  # unchanged content: not rewritten
    back = load_explained(tmp_path)
    assert back is not None
    assert back.render_nccl_conf() == (tmp_path / "nccl.conf").read_text()
    assert back.value("NCCL_SOCKET_IFNAME") == "=eth1"
    assert [r.value for r in back.settings["NCCL_SOCKET_IFNAME"].replaced] == ["=fab0"]
    assert back.notes == ["a note"]
    (tmp_path / "explain.json").write_text(json.dumps({"settings": {"X": {}}}))
    assert load_explained(tmp_path) is None


def test_host_keys_are_learned_once_and_shown(tmp_path: Path) -> None:
    key = "AAAAC3NzaC1lZDI1NTE5AAAAIHb3cJ4cLrmeUzYQ3sNYQnQ1b7k5CdrwPfM2mNN1+8Zl"
    nodes = [NodeOutput(name=f"c-n-{i}", pool="n", instance_id=f"i-{i}", instance_type="t", private_ip=f"10.0.0.{i}",
                        ssh_host=f"203.0.113.{i + 1}") for i in range(2)]
    outputs = ClusterOutputs(cluster="c", provider="alicloud", fabric="erdma", mtu=8500, nodes=nodes)
    scanned: list[str] = []

    def scan(node: NodeOutput) -> str:
        scanned.append(node.ssh_host)
        return f"# {node.ssh_host}:22 SSH-2.0-OpenSSH_8.9\n{node.ssh_host} ssh-ed25519 {key}\n"

    known = tmp_path / "ssh" / "known_hosts"
    pinned = pin_host_keys(outputs, known, lambda _line: None, scan=scan)
    assert sorted(scanned) == ["203.0.113.1", "203.0.113.2"]
    # Written in node order, whatever order the parallel scans finished in.
    assert known.read_text() == f"203.0.113.1 ssh-ed25519 {key}\n203.0.113.2 ssh-ed25519 {key}\n"
    assert pinned.shown[0].startswith("c-n-0: ssh-ed25519 SHA256:")
    assert "trusted on first use" in pinned.shown[0]
    assert pinned.failed == {}
    # A second configure never re-learns a pinned key (a changed key must fail in ssh, not be accepted).
    again = pin_host_keys(outputs, known, lambda _line: None, scan=scan)
    assert (again.shown, again.failed) == ([], {})
    assert len(scanned) == 2


def test_a_node_that_offers_no_key_is_retried_then_failed_alone(tmp_path: Path) -> None:
    key = "AAAAC3NzaC1lZDI1NTE5AAAAIHb3cJ4cLrmeUzYQ3sNYQnQ1b7k5CdrwPfM2mNN1+8Zl"
    nodes = [NodeOutput(name=f"c-n-{i}", pool="n", instance_id=f"i-{i}", instance_type="t", private_ip=f"10.0.0.{i}",
                        ssh_host=f"203.0.113.{i + 1}") for i in range(3)]
    outputs = ClusterOutputs(cluster="c", provider="alicloud", fabric="erdma", mtu=8500, nodes=nodes)
    tries: dict[str, int] = {}

    def scan(node: NodeOutput) -> str:
        tries[node.name] = tries.get(node.name, 0) + 1
        if node.name == "c-n-1":
            return ""  # still booting: sshd not up yet
        if node.name == "c-n-2" and tries[node.name] < 3:
            return ""  # up on the third try
        # A line naming another host is not this node's key and is never pinned.
        return f"203.0.113.99 ssh-ed25519 {key}\n{node.ssh_host} ssh-ed25519 {key}\n"

    known = tmp_path / "known_hosts"
    lines: list[str] = []
    pinned = pin_host_keys(outputs, known, lines.append, scan=scan, tries=4, wait_s=0.01)
    assert tries == {"c-n-0": 1, "c-n-1": 4, "c-n-2": 3}
    assert known.read_text() == f"203.0.113.1 ssh-ed25519 {key}\n203.0.113.3 ssh-ed25519 {key}\n"
    assert list(pinned.failed) == ["c-n-1"]
    assert pinned.failed["c-n-1"].startswith("203.0.113.2 offered no host key in 4 tries")
    assert "c-n-1: not reached (203.0.113.2 offered no host key in 4 tries" in lines[-1]


def test_a_second_gpuctl_on_the_same_cluster_is_refused_and_told_who_holds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path))
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time\nfrom toolkit.lock import cluster_lock\n"
         "with cluster_lock('busy', 'up'):\n    print('held', flush=True)\n    time.sleep(30)\n"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "GPUCTL_HOME": str(tmp_path)})
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ProviderError, match=rf"gpuctl up \(pid {holder.pid}\) has held it since"), \
                cluster_lock("busy", "down"):
            pass
        with cluster_lock("other", "down"):  # another cluster is not blocked
            pass
    finally:
        holder.kill()
        holder.wait()
    deadline = time.monotonic() + 5
    while True:  # a holder that died releases the lock by itself
        try:
            with cluster_lock("busy", "down"):
                break
        except ProviderError:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def _tasks(node: object) -> list[dict[str, object]]:
    """Every task mapping in a role's task file, blocks included."""
    found: list[dict[str, object]] = []
    if isinstance(node, list):
        for item in node:
            found += _tasks(item)
    elif isinstance(node, dict):
        found.append(node)
        for key in ("block", "rescue", "always"):
            found += _tasks(node.get(key))
    return found


def test_no_shell_or_command_task_interpolates_a_variable() -> None:
    """A variable inside a shell line is re-parsed by the shell (an unquoted `rm -rf {{ dir }}` once
    took a sibling directory along when the path held a space); arguments go as argv lists."""
    import yaml

    from toolkit.paths import REPO, ROLES_PATH

    offenders = []
    files = [*ROLES_PATH.glob("*/tasks/*.yml"), REPO / "templates" / "site.yml.j2"]
    for path in files:
        text = path.read_text()
        if path.suffix == ".j2":
            text = text.replace("[[", "").replace("]]", "").replace("[%", "#").replace("%]", "")
        for task in _tasks(yaml.safe_load(text)):
            for module in ("ansible.builtin.shell", "ansible.builtin.command", "shell", "command"):
                value = task.get(module)
                line = value.get("cmd") if isinstance(value, dict) else value
                if isinstance(line, str) and "{{" in line:
                    offenders.append(f"{path.relative_to(REPO)}: {task.get('name')}")
    assert len(files) > 15
    assert offenders == []


def test_one_node_whose_bundle_trips_a_reader_fails_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader error that is no GpuctlError (RecursionError from a bundle nested past Python's depth)
    fails the node that sent the bundle, named with its reason; the other nodes are still tuned."""
    import toolkit.configure as configure
    from toolkit.configure.ansible_run import NodeResult, RunResult
    from toolkit.spec.loader import load_spec

    spec = load_spec(Path(__file__).parents[2] / "examples" / "local-lab.yaml")
    names = ["lab-gpu-0", "lab-gpu-1", "lab-gpu-2"]
    outputs = ClusterOutputs(cluster="lab", provider="local", fabric="tcp", mtu=8500, nodes=[
        NodeOutput(name=n, pool="gpu", instance_id=n, instance_type="lab", private_ip=f"10.0.0.{i}",
                   ssh_host=f"10.0.0.{i}") for i, n in enumerate(names, 1)])
    result = RunResult(nodes={n: NodeResult(n) for n in names}, rc=0)

    def tune(spec: object, bundle: Path, fabric: object, **_: object) -> str:
        if bundle.name == "lab-gpu-1":
            raise RecursionError("maximum recursion depth exceeded")
        return bundle.name

    monkeypatch.setattr(configure, "unpack_bundle", lambda tar, dest: dest)
    monkeypatch.setattr(configure, "tune_spec_node", tune)
    monkeypatch.setattr(configure, "write_node_files", lambda config, dest: True)
    lines: list[str] = []
    tuned = configure._decide(spec, outputs, Paths(tmp_path), result, lines.append)
    assert tuned == ["lab-gpu-0", "lab-gpu-2"]
    failed = result.nodes["lab-gpu-1"]
    assert (failed.ok, failed.failed_task) == (False, "gpuctl: tune from the gathered topology")
    assert failed.message == ("its gathered files could not be read (RecursionError: maximum recursion depth "
                              "exceeded)")
    assert result.failed == ["lab-gpu-1"]
