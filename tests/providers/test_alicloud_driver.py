"""The Automation API driver: a missing CLI, outputs mapping, error mapping, progress lines.

Nothing here runs Pulumi: the CLI is absent on purpose, and the pieces the driver is made of are
fed the shapes the Automation API hands them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pulumi.automation import CommandError, Deployment, EngineEvent, OpType, OutputValue, StackNotFoundError
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
    check_backend_url,
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


# ------------------------------------------------- down against the cloud, Automation faked


class FakeWorkspace:
    def __init__(self, log: list[tuple[str, Any]]) -> None:
        self.log = log

    def remove_stack(self, name: str, force: bool | None = None) -> None:
        self.log.append(("remove_stack", (name, bool(force))))


class FakeStack:
    """What the driver calls on a Stack; records the calls, answers from the test's values."""

    def __init__(self, name: str, opts: Any, program: Any, log: list[tuple[str, Any]],
                 *, outputs: dict[str, Any] | None = None, fail_up: Exception | None = None,
                 state: list[dict[str, Any]] | None = None) -> None:
        self.name, self.opts, self.program, self.log = name, opts, program, log
        self.workspace = FakeWorkspace(log)
        self._outputs = outputs or {}
        self._fail_up = fail_up
        self._state = state or []

    def destroy(self, **kwargs: Any) -> None:
        self.log.append(("destroy", self.name))

    def export_stack(self) -> Deployment:
        return Deployment(version=3, deployment={"resources": self._state})

    def set_config(self, key: str, value: Any) -> None:
        self.log.append(("set_config", (self.name, key, value.value)))

    def up(self, **kwargs: Any) -> Any:
        self.log.append(("up", self.name))
        if self._fail_up is not None:
            raise self._fail_up
        return type("UpResult", (), {"outputs": {k: OutputValue(v, False) for k, v in self._outputs.items()}})()

    def outputs(self) -> dict[str, OutputValue]:
        return {}


NOTHING_LEFT: dict[str, Any] = {
    "instances": [], "networkInterfaces": [], "securityGroups": [], "vswitches": [], "vpcs": [], "keyPairs": []
}


class FakeAutomation:
    """Stands in for pulumi.automation's stack functions; `cluster_exists` decides select_stack."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, cluster_exists: bool = True,
                 cloud: dict[str, Any] | None = None, fail_up: Exception | None = None) -> None:
        self.log: list[tuple[str, Any]] = []
        self.opened: list[FakeStack] = []
        self.cluster_exists = cluster_exists
        self.cloud = NOTHING_LEFT if cloud is None else cloud
        self.fail_up = fail_up
        monkeypatch.setattr("pulumi.automation.select_stack", self.select_stack)
        monkeypatch.setattr("pulumi.automation.create_or_select_stack", self.create_or_select_stack)

    def select_stack(self, name: str, *, project_name: str, program: Any, opts: Any) -> FakeStack:
        self.log.append(("select_stack", name))
        if not self.cluster_exists:
            raise StackNotFoundError(CommandResult(stdout="", stderr=f"no stack named '{name}' found", code=255))
        return self._stack(name, program, opts)

    def create_or_select_stack(self, name: str, *, project_name: str, program: Any, opts: Any) -> FakeStack:
        self.log.append(("create_or_select_stack", name))
        return self._stack(name, program, opts)

    def _stack(self, name: str, program: Any, opts: Any) -> FakeStack:
        check = name.endswith("_leftovers")
        stack = FakeStack(name, opts, program, self.log, outputs=self.cloud if check else None,
                          fail_up=self.fail_up if check else None)
        self.opened.append(stack)
        return stack

    def steps(self) -> list[tuple[str, Any]]:
        return self.log


@pytest.fixture
def fake_pulumi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `pulumi` on PATH (never run: the Automation layer is faked), credentials, a private home."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli_path = bin_dir / "pulumi"
    cli_path.write_text("#!/bin/sh\necho 'the fake pulumi must not run' >&2\nexit 99\n")
    cli_path.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
    monkeypatch.setenv("ALICLOUD_ACCESS_KEY", "LTAI-test-access")
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", "test-secret-value")
    monkeypatch.delenv(GPUCTL_BACKEND, raising=False)


CHECK_STACK = "t-erdma-spot_leftovers"


def test_down_asks_the_cloud_by_tag_on_a_throwaway_stack_then_removes_both(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = FakeAutomation(monkeypatch)
    lines: list[str] = []
    AlicloudDriver().down(spec, lines.append)
    assert automation.steps() == [
        ("select_stack", "t-erdma-spot"),
        ("destroy", "t-erdma-spot"),
        ("create_or_select_stack", CHECK_STACK),
        ("set_config", (CHECK_STACK, "alicloud:region", "cn-wulanchabu")),
        ("up", CHECK_STACK),
        ("remove_stack", (CHECK_STACK, True)),  # force: only its root and provider are in its state
        ("remove_stack", ("t-erdma-spot", False)),  # the cluster's stack: never forced
    ]
    cluster, check = automation.opened
    # Same backend, same project and workspace settings: the check runs where the cluster ran.
    assert check.opts.project_settings.backend.url == cluster.opts.project_settings.backend.url
    assert check.opts.project_settings.name == cluster.opts.project_settings.name == "gpuctl-alicloud"
    # The check stack runs the tag-query program for this cluster (its invokes are tested under
    # mocks in test_alicloud_leftovers.py).
    asked: list[str] = []
    monkeypatch.setattr("toolkit.providers.alicloud_driver.leftovers_program", asked.append)
    check.program()
    assert asked == ["t-erdma-spot"]
    assert lines[-1] == "verified: no resource of t-erdma-spot in the stack or tagged in cn-wulanchabu; stack removed"
    assert "checking cn-wulanchabu for resources tagged gpuctl:cluster=t-erdma-spot" in lines


def test_down_lists_every_leftover_with_type_id_and_removal_command(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    cloud = {**NOTHING_LEFT, "instances": ["i-0jl4left0001"], "securityGroups": ["sg-0jl4left0002"]}
    automation = FakeAutomation(monkeypatch, cloud=cloud)
    with pytest.raises(ProviderError) as caught:
        AlicloudDriver().down(spec, lambda line: None)
    text = str(caught.value)
    assert text.startswith("2 resource(s) tagged gpuctl:cluster=t-erdma-spot are still in cn-wulanchabu:")
    assert (
        "ECS instance i-0jl4left0001: aliyun ecs DeleteInstance --RegionId cn-wulanchabu "
        "--InstanceId i-0jl4left0001 --Force true" in text
    )
    assert (
        "security group sg-0jl4left0002: aliyun ecs DeleteSecurityGroup --RegionId cn-wulanchabu "
        "--SecurityGroupId sg-0jl4left0002" in text
    )
    assert "then run `gpuctl down` again" in text
    # The throwaway stack goes; the cluster's stack stays until the cloud is verified empty.
    assert ("remove_stack", (CHECK_STACK, True)) in automation.steps()
    assert ("remove_stack", ("t-erdma-spot", False)) not in automation.steps()


def test_down_without_a_stack_still_checks_the_cloud(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = FakeAutomation(monkeypatch, cluster_exists=False, cloud={**NOTHING_LEFT, "vpcs": ["vpc-x1"]})
    with pytest.raises(ProviderError, match=r"1 resource\(s\) tagged .*\n    VPC vpc-x1: aliyun vpc DeleteVpc"):
        AlicloudDriver().down(spec, lambda line: None)
    assert ("destroy", "t-erdma-spot") not in automation.steps()
    automation.cloud = NOTHING_LEFT
    lines: list[str] = []
    AlicloudDriver().down(spec, lines.append)
    assert lines[-1] == "verified: no resource tagged gpuctl:cluster=t-erdma-spot in cn-wulanchabu"


def test_down_refuses_when_the_stack_state_still_lists_a_resource(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = FakeAutomation(monkeypatch)
    state = [{"type": "alicloud:ecs/instance:Instance", "urn": "urn:...::t-erdma-spot-gpu-0", "custom": True}]
    monkeypatch.setattr(FakeStack, "export_stack", lambda self: Deployment(deployment={"resources": state}))
    with pytest.raises(ProviderError, match="remain in the stack: alicloud:ecs/instance:Instance t-erdma-spot-gpu-0"):
        AlicloudDriver().down(spec, lambda line: None)
    assert not any(step == "create_or_select_stack" for step, _ in automation.steps())


def test_a_failing_check_is_a_provider_error_and_the_check_stack_is_still_removed(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    failure = _command_error("", "error: Forbidden.RAM: User not authorized to operate on the specified resource\n")
    automation = FakeAutomation(monkeypatch, fail_up=failure)
    with pytest.raises(ProviderError, match=r"pulumi: Forbidden\.RAM"):
        AlicloudDriver().down(spec, lambda line: None)
    assert ("remove_stack", (CHECK_STACK, True)) in automation.steps()
    assert ("remove_stack", ("t-erdma-spot", False)) not in automation.steps()


def test_a_check_without_the_expected_outputs_is_refused(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    FakeAutomation(monkeypatch, cloud={"instances": []})
    with pytest.raises(ProviderError, match="no usable answer: the leftovers check did not export networkInterfaces"):
        AlicloudDriver().down(spec, lambda line: None)


# ------------------------------------------------------------------------ --backend option


@pytest.mark.parametrize("command", ["up", "down", "status", "outputs", "configure"])
def test_backend_option_reaches_the_driver_and_carries_no_credential(
    fake_pulumi: None, command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[Any] = []

    def capture(name: str, *, project_name: str, program: Any, opts: Any) -> Any:
        seen.append(opts)
        raise ProviderError("stop here")  # the driver got this far with these options

    monkeypatch.setattr("pulumi.automation.select_stack", capture)
    monkeypatch.setattr("pulumi.automation.create_or_select_stack", capture)
    monkeypatch.setenv(GPUCTL_BACKEND, "s3://env-bucket")  # the option wins over the environment
    code = cli.main([command, str(SPEC), "--backend", "s3://bucket/path"])
    captured = capsys.readouterr()
    assert code == 6, captured.err
    assert "stop here" in captured.err
    (opts,) = seen
    assert opts.project_settings.backend.url == "s3://bucket/path"
    # Credentials stay in the environment the CLI inherits: not in workspace settings, env or output.
    assert opts.env_vars == {"PULUMI_SKIP_UPDATE_CHECK": "true"}
    settings = repr(vars(opts.project_settings)) + repr(vars(opts))
    for secret in ("LTAI-test-access", "test-secret-value", "test-passphrase"):
        assert secret not in settings
        assert secret not in captured.out + captured.err


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("s3://LTAIexample:top-secret-1@bucket/path", "top-secret-1"),
        ("s3://bucket/path?endpoint=oss-cn-beijing.aliyuncs.com&secret_key=top-secret-2", "top-secret-2"),
        ("https://api.pulumi.com?accessToken=top-secret-3", "top-secret-3"),
    ],
)
def test_a_backend_url_with_a_credential_is_refused_without_echoing_it(
    fake_pulumi: None, url: str, secret: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    automation = FakeAutomation(monkeypatch)
    code = cli.main(["status", str(SPEC), "--backend", url])
    captured = capsys.readouterr()
    assert code == 2
    assert "carries a credential" in captured.err
    assert secret not in captured.out + captured.err
    assert "LTAIexample" not in captured.err  # nor the key id beside it
    assert automation.steps() == []  # refused before any stack is touched
    monkeypatch.setenv(GPUCTL_BACKEND, url)  # the same rule for the environment variable
    assert cli.main(["status", str(SPEC)]) == 2
    assert secret not in capsys.readouterr().err


def test_not_a_url_is_refused() -> None:
    with pytest.raises(UsageError, match="is not a Pulumi backend URL"):
        check_backend_url("my-bucket/path")
    assert check_backend_url("s3://b?endpoint=oss-cn-beijing.aliyuncs.com&region=cn-beijing").startswith("s3://b")


def test_the_local_lab_takes_no_backend_and_is_otherwise_unchanged() -> None:
    from toolkit.providers.local import LocalLabDriver

    assert isinstance(get_driver("local"), LocalLabDriver)
    with pytest.raises(UsageError, match="--backend is for clusters kept in a Pulumi backend"):
        get_driver("local", backend_url="s3://bucket/path")
    assert get_driver("alicloud", backend_url="s3://bucket/path")._backend_override == "s3://bucket/path"  # type: ignore[attr-defined]
