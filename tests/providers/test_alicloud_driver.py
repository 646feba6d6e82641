"""The Automation API driver: a missing CLI, outputs mapping, error mapping, progress lines.

Nothing here runs Pulumi: the CLI is absent on purpose, and the pieces the driver is made of are
fed the shapes the Automation API hands them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pulumi.automation import CommandError, EngineEvent, OpType
from pulumi.automation._cmd import CommandResult
from pulumi.automation.events import (
    DiagnosticEvent,
    ResourcePreEvent,
    ResOutputsEvent,
    StepEventMetadata,
)

from toolkit import cli
from toolkit.errors import EXIT_MISSING_TOOL, MissingToolError, ProviderError, UsageError
from toolkit.providers.alicloud_driver import (
    AlicloudDriver,
    ProgressReporter,
    backend_url,
    leftover_resources,
    outputs_from_stack,
    pulumi_failure,
    require_credentials,
    require_passphrase,
    require_pulumi_cli,
)
from toolkit.providers.base import ProviderDriver
from toolkit.providers.registry import get_driver
from toolkit.spec.loader import load_spec
from toolkit.spec.models import ClusterSpec

SPEC = Path(__file__).resolve().parent / "specs" / "erdma-spot.yaml"


@pytest.fixture
def spec() -> ClusterSpec:
    return load_spec(SPEC)


@pytest.fixture
def no_pulumi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH with nothing on it, a private gpuctl home, and the other prerequisites present."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
    monkeypatch.setenv("ALICLOUD_ACCESS_KEY", "LTAI-test-access")
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", "test-secret-value")
    monkeypatch.delenv(GPUCTL_BACKEND, raising=False)


GPUCTL_BACKEND = "GPUCTL_PULUMI_BACKEND"


# ------------------------------------------------------------------------------ missing CLI


def test_registry_gives_the_alicloud_driver_and_it_fits_the_protocol() -> None:
    driver: ProviderDriver = get_driver("alicloud")
    assert isinstance(driver, AlicloudDriver)
    assert driver.name == "alicloud"


def test_missing_cli_is_one_message_with_the_install_commands(no_pulumi: None) -> None:
    with pytest.raises(MissingToolError) as caught:
        require_pulumi_cli()
    text = str(caught.value)
    assert "the Pulumi CLI is not installed" in text
    assert "curl -fsSL https://get.pulumi.com | sh" in text
    assert "pulumi plugin install resource alicloud 4.0.0" in text


@pytest.mark.parametrize("action", ["up", "down", "outputs", "status"])
def test_every_driver_call_refuses_without_the_cli(no_pulumi: None, spec: ClusterSpec, action: str) -> None:
    driver = AlicloudDriver()
    call = getattr(driver, action)
    extra = [lambda line: None] if action in ("up", "down") else []
    with pytest.raises(MissingToolError):
        call(spec, *extra)
    assert not (Path(str(driver._backend(spec)).removeprefix("file://"))).exists()  # nothing created


def test_gpuctl_outputs_without_cli_exits_7_without_traceback(
    no_pulumi: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["outputs", str(SPEC)])
    captured = capsys.readouterr()
    assert code == EXIT_MISSING_TOOL == 7
    assert "Traceback" not in captured.err
    assert captured.err.startswith("gpuctl outputs: error: the Pulumi CLI is not installed")
    assert "https://get.pulumi.com" in captured.err


def test_file_not_found_from_the_automation_api_means_missing_cli() -> None:
    error = pulumi_failure(FileNotFoundError(2, "No such file or directory", "pulumi"))
    assert isinstance(error, MissingToolError)


# ---------------------------------------------------------------------------- prerequisites


def test_backend_default_env_and_override(spec: ClusterSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path))
    assert backend_url(spec, env={}) == f"file://{tmp_path}/clusters/t-erdma-spot/pulumi"
    assert backend_url(spec, env={GPUCTL_BACKEND: "s3://team-state"}) == "s3://team-state"
    assert backend_url(spec, "https://api.pulumi.com", env={GPUCTL_BACKEND: "s3://x"}) == "https://api.pulumi.com"


def test_credentials_only_from_the_environment() -> None:
    require_credentials({"ALICLOUD_ACCESS_KEY": "a", "ALICLOUD_SECRET_KEY": "b"})
    require_credentials({"ALICLOUD_PROFILE": "team"})
    with pytest.raises(UsageError, match="no Alibaba Cloud credentials"):
        require_credentials({"ALICLOUD_ACCESS_KEY": "a"})


def test_passphrase_needed_off_pulumi_cloud() -> None:
    require_passphrase("https://api.pulumi.com", {})
    require_passphrase("file:///x", {"PULUMI_CONFIG_PASSPHRASE": ""})  # empty is a choice
    with pytest.raises(UsageError, match="passphrase is not set"):
        require_passphrase("s3://bucket", {})


# ---------------------------------------------------------------------------- error mapping


def _command_error(stdout: str, stderr: str, code: int = 255) -> CommandError:
    return CommandError(CommandResult(stdout=stdout, stderr=stderr, code=code))


def test_pulumi_errors_keep_the_useful_lines() -> None:
    stdout = (
        "Updating (t-erdma-spot):\n"
        " +  alicloud:ecs:Instance t-erdma-spot-gpu-0 creating (2s) error: [ERROR] "
        "InvalidInstanceType.ValueNotSupported: The specified InstanceType does not exist.\n"
        "Diagnostics:\n"
        "  alicloud:ecs:Instance (t-erdma-spot-gpu-0):\n"
        "    error: [ERROR] InvalidInstanceType.ValueNotSupported: The specified InstanceType does not exist.\n"
    )
    stderr = "error: update failed\n"
    error = pulumi_failure(_command_error(stdout, stderr))
    assert isinstance(error, ProviderError)
    assert str(error) == (
        "pulumi: [ERROR] InvalidInstanceType.ValueNotSupported: The specified InstanceType does not exist."
    )


def test_missing_plugin_is_a_missing_tool() -> None:
    stderr = "error: could not load plugin for alicloud provider 'default_4_0_0': no resource plugin " \
             "'pulumi-resource-alicloud' found in the workspace at version v4.0.0\n"
    error = pulumi_failure(_command_error("", stderr))
    assert isinstance(error, MissingToolError)
    assert "pulumi plugin install resource alicloud 4.0.0" in str(error)


def test_secrets_never_reach_the_message() -> None:
    env = {"ALICLOUD_SECRET_KEY": "s3cr3t-value-xyz", "ALICLOUD_ACCESS_KEY": "LTAI5tExampleKey"}
    stderr = (
        "error: InvalidAccessKeyId.NotFound: Specified access key LTAI5tExampleKey (s3cr3t-value-xyz) is not found\n"
    )
    text = str(pulumi_failure(_command_error("", stderr), env))
    assert "LTAI5tExampleKey" not in text
    assert "s3cr3t-value-xyz" not in text
    assert "<ALICLOUD_ACCESS_KEY>" in text


def test_an_error_without_error_lines_keeps_the_tail() -> None:
    text = str(pulumi_failure(_command_error("", "something odd happened\nand then this\n", code=1)))
    assert text == "pulumi: something odd happened; and then this"


# --------------------------------------------------------------------------- outputs mapping


NODE_0: dict[str, Any] = {
    "name": "t-erdma-spot-gpu-0", "pool": "gpu", "instance_id": "i-2ze0example0",
    "instance_type": "ecs.ebmgn7ex.32xlarge", "private_ip": "10.42.0.21", "public_ip": "47.93.10.1",
    "fabric_interfaces": [
        {"name": "eth0", "ipv4": "10.42.0.21/24", "rdma_device": None},
        {"name": "eth1", "ipv4": "10.42.0.22/24", "rdma_device": None},
    ],
}
NODE_1: dict[str, Any] = {**NODE_0, "name": "t-erdma-spot-gpu-1", "instance_id": "i-2ze0example1",
                          "private_ip": "10.42.0.31", "public_ip": None, "fabric_interfaces": []}


def test_stack_outputs_become_cluster_outputs(spec: ClusterSpec) -> None:
    outputs = outputs_from_stack(
        spec, {"cluster": "t-erdma-spot", "fabric": "erdma", "mtu": 8500, "nodes": [NODE_0, NODE_1]}
    )
    assert outputs.provider == "alicloud"
    assert outputs.fabric == "erdma"
    assert outputs.mtu == 8500
    first, second = outputs.nodes
    assert first.ssh_host == "47.93.10.1"  # public address where there is one
    assert second.ssh_host == "10.42.0.31"  # else the private one (a bastion or VPN reaches it)
    assert first.ssh_user == "root"
    assert [i.ipv4 for i in first.fabric_interfaces] == ["10.42.0.21/24", "10.42.0.22/24"]
    assert first.instance_id == "i-2ze0example0"


def test_empty_or_foreign_stack_outputs_are_refused(spec: ClusterSpec) -> None:
    with pytest.raises(ProviderError, match="has no node outputs"):
        outputs_from_stack(spec, {})
    with pytest.raises(ProviderError, match="holds cluster other"):
        outputs_from_stack(spec, {"cluster": "other", "nodes": [NODE_0]})


# ------------------------------------------------------------------------------- progress


def _meta(op: OpType, type_: str, name: str) -> StepEventMetadata:
    urn = f"urn:pulumi:t::gpuctl-alicloud::gpuctl:alicloud:GpuCluster${type_}::{name}"
    return StepEventMetadata(op=op, urn=urn, type=type_, provider="")


def test_progress_lines_from_engine_events() -> None:
    lines: list[str] = []
    report = ProgressReporter(lines.append)
    instance = "alicloud:ecs/instance:Instance"
    report(EngineEvent(1, 0, resource_pre_event=ResourcePreEvent(_meta(OpType.CREATE, instance, "gpu-0"))))
    report(EngineEvent(2, 0, res_outputs_event=ResOutputsEvent(_meta(OpType.CREATE, instance, "gpu-0"))))
    report(EngineEvent(3, 0, resource_pre_event=ResourcePreEvent(_meta(OpType.SAME, instance, "gpu-1"))))
    report(EngineEvent(4, 0, resource_pre_event=ResourcePreEvent(_meta(OpType.DELETE, "pulumi:pulumi:Stack", "s"))))
    report(EngineEvent(5, 0, diagnostic_event=DiagnosticEvent(message="quota exceeded\n", color="never",
                                                               severity="error")))
    assert lines == [
        "creating alicloud:ecs/instance:Instance gpu-0 ...",
        "creating alicloud:ecs/instance:Instance gpu-0 ... done",
        "error: quota exceeded",
    ]


# ------------------------------------------------------------------------------------ down


def test_leftovers_after_destroy_list_cloud_resources_only() -> None:
    deployment = {
        "resources": [
            {"type": "pulumi:pulumi:Stack", "urn": "urn:pulumi:t::p::pulumi:pulumi:Stack::p-t", "custom": False},
            {"type": "pulumi:providers:alicloud", "urn": "urn:...::default", "custom": True},
            {"type": "gpuctl:alicloud:GpuCluster", "urn": "urn:...::t-erdma-spot", "custom": False},
            {"type": "alicloud:ecs/instance:Instance", "urn": "urn:...::t-erdma-spot-gpu-0", "custom": True,
             "outputs": {"tags": {"gpuctl:cluster": "t-erdma-spot"}}},
        ]
    }
    assert leftover_resources(deployment, "t-erdma-spot") == [
        "alicloud:ecs/instance:Instance t-erdma-spot-gpu-0 (tagged gpuctl:cluster)"
    ]
    assert leftover_resources({"resources": deployment["resources"][:3]}, "t-erdma-spot") == []
    assert leftover_resources(None, "t-erdma-spot") == []
