"""The spec's lifecycle agent settings: idle_action, idle_signals, on_interruption; the hostile-value
corpus planted in on_interruption (refused with its field, or accepted literally, never evaluated);
and what reaches the inventory and the site playbook."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.spec.test_hostile_values import ENV_CANARY, ENV_CANARY_VALUE, hostile_values, quoted
from toolkit.configure.render import inventory_data, render_inventory, site_roles
from toolkit.errors import SpecError
from toolkit.lifecycle.agent_config import agent_settings, agent_wanted
from toolkit.paths import Paths
from toolkit.providers.base import ClusterOutputs
from toolkit.spec import load_spec_text

pytestmark = pytest.mark.unit

SPEC = """\
name: lab
provider: local
node_pools:
  - name: node
    instance_type: lab
    count: 1
network:
  fabric: tcp
  admin_cidr: 127.0.0.0/8
lifecycle:
  ttl: 8h
"""


def load(lifecycle: str) -> object:
    return load_spec_text(SPEC + lifecycle, source="c.yaml")


def test_defaults_install_no_agent() -> None:
    spec = load_spec_text(SPEC, source="c.yaml")
    assert spec.lifecycle.idle_action == "stop"
    assert spec.lifecycle.idle_signals == ["gpu"]
    assert spec.lifecycle.on_interruption is None
    assert not agent_wanted(spec)


def test_idle_settings_reach_the_agent_in_seconds() -> None:
    spec = load_spec_text(SPEC + "  idle_stop_minutes: 30\n  idle_action: release\n  idle_signals: [ssh_sessions]\n",
                          source="c.yaml")
    assert agent_wanted(spec)
    assert agent_settings(spec) == {"cloud": "alicloud", "idle_seconds": 1800, "idle_action": "release",
                                    "idle_signals": ["gpu", "ssh_sessions"], "on_interruption": ""}


def test_on_interruption_alone_installs_the_agent_without_idle_stop() -> None:
    spec = load_spec_text(SPEC + '  on_interruption: "/opt/train/ckpt.sh --now"\n', source="c.yaml")
    assert agent_wanted(spec)
    assert agent_settings(spec)["idle_seconds"] == 0
    assert agent_settings(spec)["on_interruption"] == "/opt/train/ckpt.sh --now"


@pytest.mark.parametrize(("lifecycle", "message"), [
    ("  idle_action: release\n", "idle_action only applies with idle_stop_minutes"),
    ("  idle_signals: [processes]\n", "idle_signals only applies with idle_stop_minutes"),
    ("  idle_stop_minutes: 30\n  idle_action: hibernate\n", "lifecycle.idle_action"),
    ("  idle_stop_minutes: 30\n  idle_signals: [network]\n", "lifecycle.idle_signals"),
    ("  idle_stop_minutes: 30\n  idle_signals: [processes, processes]\n", "lists processes more than once"),
    ("  idle_stop_minutes: 5\n", "lifecycle.idle_stop_minutes"),
    ('  on_interruption: "   "\n', "on_interruption is blank"),
    ("  on_interruption: 42\n", "lifecycle.on_interruption"),
])
def test_bad_lifecycle_values_are_refused_naming_the_field(lifecycle: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        load(lifecycle)
    assert message in str(caught.value)


def test_every_hostile_value_in_on_interruption_is_refused_or_kept_literally(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    canary = tmp_path / "CANARY"
    monkeypatch.setenv(ENV_CANARY, ENV_CANARY_VALUE)
    refused = accepted = 0
    for value in hostile_values(canary):
        problem = ""
        try:
            spec = load(f"  on_interruption: {quoted(value)}\n")
        except SpecError as exc:
            problem = str(exc)
        if problem:
            refused += 1
            assert "lifecycle.on_interruption" in problem, (value, problem)
            continue
        accepted += 1
        assert spec.lifecycle.on_interruption == value  # type: ignore[attr-defined]
    assert not canary.exists()
    # Template markers, control characters, leading '-', blank and over-long values are refused;
    # shell text such as "$(touch x)" is accepted: it is a command by the user's own choice.
    assert refused > 100
    assert accepted > 100


def outputs() -> ClusterOutputs:
    return ClusterOutputs.model_validate({
        "cluster": "lab", "provider": "local", "fabric": "tcp", "mtu": 8500,
        "nodes": [{"name": "lab-node-0", "pool": "node", "instance_type": "lab", "ssh_host": "10.213.1.11",
                   "instance_id": "lab-node-0", "private_ip": "10.213.1.11",
                   "ssh_port": 22, "ssh_user": "root",
                   "fabric_interfaces": [{"name": "fab0", "ipv4": "10.214.1.11/24"}]}],
    })


def test_the_inventory_carries_the_settings_as_unsafe_data_and_the_site_play_gets_the_role() -> None:
    command = "{{ lookup('pipe', 'id') }}"  # refused by the spec; here planted after validation
    spec = load_spec_text(SPEC + "  idle_stop_minutes: 10\n", source="c.yaml")
    spec = spec.model_copy(update={"lifecycle": spec.lifecycle.model_copy(update={"on_interruption": command})})
    data = inventory_data(spec, outputs(), Paths(Path("/tmp/gpuctl-test")), "/g.sh")
    assert data.group["gpuctl_lifecycle"]["on_interruption"] == command
    text = render_inventory(data, cluster="lab", provider="local")
    assert "on_interruption: !unsafe '{{ lookup(''pipe'', ''id'') }}'" in text
    assert yaml.safe_load(text.replace("!unsafe ", ""))  # still YAML
    # Every cluster runs the role, after every role but the install record: it installs the agent
    # only when asked, and otherwise removes one an earlier run installed (an agent turned off must
    # stop stopping nodes).
    assert site_roles("tcp")[-2:] == ("lifecycle", "install_record")
    assert site_roles("erdma")[-2:] == ("lifecycle", "install_record")


def test_no_agent_no_inventory_variable() -> None:
    spec = load_spec_text(SPEC, source="c.yaml")
    data = inventory_data(spec, outputs(), Paths(Path("/tmp/gpuctl-test")), "/g.sh")
    assert "gpuctl_lifecycle" not in data.group


CHECKPOINTS = (Path(__file__).resolve().parents[2] / "examples" / "local-lab-checkpoints.yaml").read_text()


def test_the_hook_gets_the_checkpoint_volumes_mount_path() -> None:
    from toolkit.errors import SpecError
    from toolkit.lifecycle.agent_config import checkpoint_dir

    only = load_spec_text(CHECKPOINTS, source="c.yaml")
    assert checkpoint_dir(only) == "/mnt/ckpt"  # the only volume
    named = load_spec_text(CHECKPOINTS.replace("  ttl: 8h\n", "  ttl: 8h\n  checkpoint_volume: ckpt\n"),
                           source="c.yaml")
    assert checkpoint_dir(named) == "/mnt/ckpt"
    assert checkpoint_dir(load_spec_text(SPEC, source="c.yaml")) == ""  # no storage: unset
    with pytest.raises(SpecError, match=r"lifecycle\.checkpoint_volume data is not a volume of storage"):
        load_spec_text(CHECKPOINTS.replace("  ttl: 8h\n", "  ttl: 8h\n  checkpoint_volume: data\n"), source="c.yaml")
