"""The Automation API driver: a missing CLI, outputs mapping, error mapping, progress lines.

Nothing here runs Pulumi: the CLI is absent on purpose, and the pieces the driver is made of are
fed the shapes the Automation API hands them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pulumi.automation import (
    CommandError,
    ConfigValue,
    Deployment,
    EngineEvent,
    OpType,
    OutputValue,
    StackNotFoundError,
)
from pulumi.automation._cmd import CommandResult
from pulumi.automation.events import (
    DiagnosticEvent,
    ResourcePreEvent,
    ResOutputsEvent,
    StepEventMetadata,
)

from tests.providers.pulumi_cli import write_fake_cli
from toolkit import cli, hints
from toolkit.errors import EXIT_MISSING_TOOL, MissingToolError, ProviderError, UsageError
from toolkit.providers.alicloud.args import GpuClusterArgs
from toolkit.providers.alicloud.driver import (
    AlicloudDriver,
    preflight,
    pulumi_failure,
    require_credentials,
    require_pulumi_cli,
)
from toolkit.providers.base import ProviderDriver
from toolkit.providers.pulumi.backend import backend_url, check_backend_url, require_passphrase
from toolkit.providers.pulumi.outputs import outputs_from_stack
from toolkit.providers.pulumi.progress import ProgressReporter
from toolkit.providers.pulumi.stack_state import leftover_resources
from toolkit.providers.pulumi.workspace import workspace_env
from toolkit.providers.registry import get_driver
from toolkit.providers.tags import new_cluster_id
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
    plugin_installed(tmp_path, monkeypatch)
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
    monkeypatch.setenv("ALICLOUD_ACCESS_KEY", "LTAI-test-access")
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", "test-secret-value")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCOUNT_TYPE", "Domestic")  # the site the spot ceiling is priced on
    monkeypatch.delenv(GPUCTL_BACKEND, raising=False)


GPUCTL_BACKEND = "GPUCTL_PULUMI_BACKEND"


def plugin_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Pulumi home whose plugin cache holds the alicloud plugin of the installed SDK's version."""
    from importlib import metadata

    home = tmp_path / "pulumi-home"
    (home / "plugins" / f"resource-alicloud-v{metadata.version('pulumi_alicloud')}").mkdir(parents=True)
    monkeypatch.setenv("PULUMI_HOME", str(home))
    return home


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


def test_credentials_only_from_the_environment(tmp_path: Path) -> None:
    require_credentials({"ALICLOUD_ACCESS_KEY": "a", "ALICLOUD_SECRET_KEY": "b"})
    (tmp_path / ".aliyun").mkdir()
    (tmp_path / ".aliyun" / "config.json").write_text('{"profiles": [{"name": "team"}, {"name": "ops"}]}')
    require_credentials({"ALICLOUD_PROFILE": "team"}, home=tmp_path)
    with pytest.raises(MissingToolError, match="no Alibaba Cloud credentials"):
        require_credentials({"ALICLOUD_ACCESS_KEY": "a"})
    with pytest.raises(MissingToolError, match=r"has no such profile \(it has: team, ops\)"):
        require_credentials({"ALICLOUD_PROFILE": "tema"}, home=tmp_path)


def test_passphrase_needed_off_pulumi_cloud() -> None:
    require_passphrase("https://api.pulumi.com", {})
    require_passphrase("file:///x", {"PULUMI_CONFIG_PASSPHRASE": ""})  # empty is a choice
    with pytest.raises(MissingToolError, match="passphrase is not set"):
        require_passphrase("s3://bucket", {})


def test_preflight_reports_every_missing_thing_at_once_with_exit_7(spec: ClusterSpec, tmp_path: Path) -> None:
    """A new user with nothing set up learns everything in one message, before any call."""
    env = {"PULUMI_HOME": str(tmp_path / "pulumi"), "ALICLOUD_PROFILE": "team"}
    with pytest.raises(MissingToolError) as caught:
        preflight(spec, "s3://team-state", env=env, which=lambda _name: None, home=tmp_path)
    assert caught.value.exit_code == 7
    lines = caught.value.message.splitlines()
    assert lines[0] == "t-erdma-spot: 5 thing(s) missing before gpuctl can reach Alibaba Cloud:"
    assert lines[1].startswith("  - the Pulumi CLI is not installed")
    assert lines[2].startswith("  - the Pulumi provider plugin for Alibaba Cloud 4.0.0 is not in ")
    assert lines[3].startswith("  - ALICLOUD_PROFILE=team, but ")
    assert "aliyun configure --profile team" in lines[3]
    assert lines[4].startswith("  - the Pulumi state passphrase is not set")
    # The spec's spot ceiling needs the account's site (toolkit/providers/alicloud/site.py).
    assert lines[5].startswith("  - billing.spot_max_price_per_hour is 61.25 CNY, but ALIBABA_CLOUD_ACCOUNT_TYPE is")
    # With everything in place it says nothing.
    (tmp_path / "pulumi" / "plugins" / "resource-alicloud-v4.0.0").mkdir(parents=True)
    (tmp_path / ".aliyun").mkdir()
    (tmp_path / ".aliyun" / "config.json").write_text('{"profiles": [{"name": "team"}]}')
    cli = str(write_fake_cli(tmp_path / "bin"))
    preflight(spec, "s3://team-state", env={**env, "PULUMI_CONFIG_PASSPHRASE": "p",
                                            "ALIBABA_CLOUD_ACCOUNT_TYPE": "Domestic"},
              which=lambda _name: cli, home=tmp_path)


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
        spec, {"cluster": "t-erdma-spot", "fabric": "erdma", "mtu": 1400, "nodes": [NODE_0, NODE_1]}
    )
    assert outputs.provider == "alicloud"
    assert outputs.fabric == "erdma"
    assert outputs.mtu == 1400
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


# ------------------------------------------------- up/down against the cloud, Automation faked


CLUSTER = "t-erdma-spot"
CHECK_STACK = "t-erdma-spot_leftovers"
REGION = "cn-wulanchabu"
# Fixed times: NOW = 2026-11-29 09:15:42 UTC; ttl 8h -> released 17:15:42, rounded up to 17:16:00.
NOW = datetime(2026, 11, 29, 9, 15, 42, 512000, tzinfo=UTC)
OUR_ID = "5e1f0c2a9b3d"
OTHER_ID = "0123456789ab"
NOTHING_LEFT: dict[str, Any] = {
    "instances": [], "networkInterfaces": [], "mountTargets": [], "accessGroups": [], "securityGroups": [],
    "vswitches": [], "vpcs": [], "keyPairs": [], "ramPolicies": [], "ramRoles": [],
}


def _tags(cluster_id: str | None, owner: str = "tester@example.com") -> dict[str, str]:
    tags = {"gpuctl:cluster": CLUSTER, "gpuctl:owner": owner, "gpuctl:managed-by": "gpuctl"}
    if cluster_id is not None:
        tags["gpuctl:cluster-id"] = cluster_id
    return tags


# Another team's cluster of the same name, made through another backend.
THEIRS = [
    {"kind": "instances", "id": "i-2ze0theirs001", "tags": _tags(OTHER_ID, "other-team@example.com")},
    {"kind": "vpcs", "id": "vpc-2zetheirs002", "tags": _tags(OTHER_ID, "other-team@example.com")},
]


@dataclass
class StackRecord:
    """What a backend keeps of one stack: its config, its state's resources, its outputs."""

    config: dict[str, str] = field(default_factory=dict)
    state: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)


class FakeWorkspace:
    def __init__(self, automation: FakeAutomation) -> None:
        self.automation = automation

    def remove_stack(self, name: str, force: bool | None = None) -> None:
        self.automation.log.append(("remove_stack", (name, bool(force))))
        self.automation.stacks.pop(name, None)


class FakeStack:
    """What the driver calls on a Stack; records the calls, keeps config and state in the backend."""

    def __init__(self, name: str, opts: Any, program: Any, automation: FakeAutomation) -> None:
        self.name, self.opts, self.program, self.automation = name, opts, program, automation
        self.workspace = FakeWorkspace(automation)

    @property
    def record(self) -> StackRecord:
        return self.automation.stacks[self.name]

    def get_all_config(self) -> dict[str, ConfigValue]:
        return {key: ConfigValue(value) for key, value in self.record.config.items()}

    def set_config(self, key: str, value: ConfigValue) -> None:
        self.automation.log.append(("set_config", (self.name, key, value.value)))
        self.record.config[key] = value.value

    def destroy(self, **kwargs: Any) -> None:
        self.automation.log.append(("destroy", self.name))
        self.record.state = []

    def refresh(self, **kwargs: Any) -> None:
        """`pulumi refresh`: the state follows the cloud (`reclaimed`: instances the cloud removed)."""
        self.automation.log.append(("refresh", self.name))
        gone = self.automation.reclaimed
        self.record.state = [r for r in self.record.state if r.get("id") not in gone]

    def export_stack(self) -> Deployment:
        return Deployment(version=3, deployment={"resources": self.record.state})

    def outputs(self) -> dict[str, OutputValue]:
        return {key: OutputValue(value, False) for key, value in self.record.outputs.items()}

    def up(self, **kwargs: Any) -> Any:
        self.automation.log.append(("up", self.name))
        if self.name == CHECK_STACK:
            outputs = self.automation.answer_check(self.program)
        else:
            outputs = self.automation.run_cluster(self.record, kwargs["program"])
        return type("UpResult", (), {"outputs": {k: OutputValue(v, False) for k, v in outputs.items()}})()


class FakeAutomation:
    """Stands in for pulumi.automation's stack functions and for the two programs the driver runs.

    The tag query answers from `cloud` (resources with their tags) as the API does: every tag of the
    filter must match. The cluster program records the GpuClusterArgs it was given.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, cluster_exists: bool = True,
                 config: dict[str, str] | None = None, cloud: list[dict[str, Any]] | None = None,
                 check_outputs: dict[str, Any] | None = None, fail_check: Exception | None = None,
                 fail_up: Exception | None = None) -> None:
        self.log: list[tuple[str, Any]] = []
        self.opened: list[FakeStack] = []
        self.stacks: dict[str, StackRecord] = {}
        if cluster_exists:
            self.stacks[CLUSTER] = StackRecord(config=dict(config or {}))
        self.cloud = cloud or []
        self.check_outputs = check_outputs
        self.fail_check = fail_check
        self.fail_up = fail_up
        self.queries: list[tuple[str, str | None]] = []
        self.built: list[GpuClusterArgs] = []
        self.reclaimed: set[str] = set()  # instance ids the cloud took back (spot)
        monkeypatch.setattr("pulumi.automation.select_stack", self.select_stack)
        monkeypatch.setattr("pulumi.automation.create_or_select_stack", self.create_or_select_stack)
        monkeypatch.setattr("toolkit.providers.alicloud.driver.leftovers_program", self._query)
        monkeypatch.setattr("toolkit.providers.alicloud.driver.storage_leftovers_program", self._storage_query)
        self.storage_queries: list[tuple[str, str | None, bool]] = []
        monkeypatch.setattr("toolkit.providers.alicloud.component.cluster_program", self._build)

    def select_stack(self, name: str, *, project_name: str, program: Any, opts: Any) -> FakeStack:
        self.log.append(("select_stack", name))
        if name not in self.stacks:
            raise StackNotFoundError(CommandResult(stdout="", stderr=f"no stack named '{name}' found", code=255))
        return self._stack(name, program, opts)

    def create_or_select_stack(self, name: str, *, project_name: str, program: Any, opts: Any) -> FakeStack:
        self.log.append(("create_or_select_stack", name))
        self.stacks.setdefault(name, StackRecord())
        return self._stack(name, program, opts)

    def _stack(self, name: str, program: Any, opts: Any) -> FakeStack:
        stack = FakeStack(name, opts, program, self)
        self.opened.append(stack)
        return stack

    # ------------------------------------------------------------------ the two programs

    def _query(self, cluster: str, cluster_id: str | None = None) -> None:
        self.queries.append((cluster, cluster_id))
        self.last_query = "cluster"

    def _storage_query(self, cluster: str, cluster_id: str | None = None, *, kept_too: bool = False) -> None:
        self.storage_queries.append((cluster, cluster_id, kept_too))
        self.last_query = "storage"

    def answer_check(self, program: Any) -> dict[str, Any]:
        program()  # records the query in self.queries or self.storage_queries
        if self.fail_check is not None:
            raise self.fail_check
        if self.last_query == "storage":
            # The cloud's buckets of the cluster (leftovers.py): kind "buckets" in self.cloud, kept ones
            # left out unless the storage is being deleted.
            cluster, cluster_id, kept_too = self.storage_queries[-1]
            found = [r for r in self.cloud if r["kind"] == "buckets"
                     and r["tags"].get("gpuctl:cluster") == cluster and r["tags"].get("gpuctl:cluster-id") == cluster_id
                     and (kept_too or r["tags"].get("gpuctl:keep-on-down") != "true")]
            return {"search": "storage", "buckets": [r["id"] for r in found], "tags": {"buckets": {}}}
        if self.check_outputs is not None:
            return self.check_outputs
        cluster, cluster_id = self.queries[-1]
        wanted = {"gpuctl:cluster": cluster} | ({"gpuctl:cluster-id": cluster_id} if cluster_id else {})
        found = [r for r in self.cloud if all(r["tags"].get(k) == v for k, v in wanted.items())]
        outputs: dict[str, Any] = {kind: [r["id"] for r in found if r["kind"] == kind] for kind in NOTHING_LEFT}
        outputs["tags"] = {
            kind: {r["id"]: {k: v for k, v in r["tags"].items() if k in ("gpuctl:owner", "gpuctl:cluster-id")}
                   for r in found if r["kind"] == kind}
            for kind in NOTHING_LEFT
        }
        return outputs

    def _build(self, spec: ClusterSpec, args: GpuClusterArgs, storage: Any = None) -> None:
        self.built.append(args)

    def run_cluster(self, record: StackRecord, program: Any) -> dict[str, Any]:
        program()  # records the GpuClusterArgs in self.built
        if self.fail_up is not None:
            raise self.fail_up
        args = self.built[-1]
        record.state = [{"type": "alicloud:ecs/instance:Instance", "urn": f"urn:...::{CLUSTER}-gpu-0",
                         "custom": True, "id": "i-2ze0example0", "outputs": {"tags": args.tags}}]
        record.outputs = {"cluster": CLUSTER, "clusterId": args.cluster_id, "createdAt": args.created_at,
                          "expiresAt": args.expires_at, "fabric": "erdma", "mtu": 1400, "nodes": [NODE_0]}
        return record.outputs

    def steps(self) -> list[tuple[str, Any]]:
        return self.log


@pytest.fixture
def fake_pulumi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `pulumi` on PATH (asked only its version: the Automation layer is faked), credentials, a private home."""
    bin_dir = tmp_path / "bin"
    write_fake_cli(bin_dir)  # answers `pulumi version` only: the Automation layer is faked
    monkeypatch.setenv("PATH", str(bin_dir))
    plugin_installed(tmp_path, monkeypatch)
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "test-passphrase")
    monkeypatch.setenv("ALICLOUD_ACCESS_KEY", "LTAI-test-access")
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", "test-secret-value")
    monkeypatch.setenv("ALIBABA_CLOUD_ACCOUNT_TYPE", "Domestic")  # the site the spot ceiling is priced on
    monkeypatch.delenv(GPUCTL_BACKEND, raising=False)


CHECK_STEPS = [
    ("create_or_select_stack", CHECK_STACK),
    ("set_config", (CHECK_STACK, "alicloud:region", REGION)),
    ("up", CHECK_STACK),
    ("remove_stack", (CHECK_STACK, True)),  # force: only its root and provider are in its state
]


def test_down_asks_the_cloud_by_name_and_id_on_a_throwaway_stack_then_removes_both(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another team's cluster of the same name is live: it carries another cluster id.
    automation = FakeAutomation(monkeypatch, config={"gpuctl:clusterId": OUR_ID}, cloud=THEIRS)
    lines: list[str] = []
    AlicloudDriver().down(spec, lines.append)
    assert automation.steps() == [
        ("select_stack", CLUSTER),
        ("refresh", CLUSTER),  # what the cloud already released leaves the state first
        ("destroy", CLUSTER),
        *CHECK_STEPS,
        ("remove_stack", (CLUSTER, False)),  # the cluster's stack: never forced
    ]
    cluster, check = automation.opened
    # Same backend, same project and workspace settings: the check runs where the cluster ran.
    assert check.opts.project_settings.backend.url == cluster.opts.project_settings.backend.url
    assert check.opts.project_settings.name == cluster.opts.project_settings.name == "gpuctl-alicloud"
    # The tag query asks by this cluster's name and id (its invokes are tested under mocks in
    # test_alicloud_leftovers.py), so the other team's resources are not touched or reported.
    assert automation.queries == [("t-erdma-spot", "5e1f0c2a9b3d")]
    assert "checking cn-wulanchabu for resources tagged gpuctl:cluster=t-erdma-spot and " \
           "gpuctl:cluster-id=5e1f0c2a9b3d" in lines
    assert lines[-1] == "verified: no resource of t-erdma-spot in the stack or tagged in cn-wulanchabu; stack removed"


def test_down_lists_every_leftover_of_this_cluster_with_type_id_and_removal_command(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = [{"kind": "instances", "id": "i-0jl4left0001", "tags": _tags(OUR_ID)},
            {"kind": "securityGroups", "id": "sg-0jl4left0002", "tags": _tags(OUR_ID)}]
    automation = FakeAutomation(monkeypatch, config={"gpuctl:clusterId": OUR_ID}, cloud=ours + THEIRS)
    with pytest.raises(ProviderError) as caught:
        AlicloudDriver().down(spec, lambda line: None)
    text = str(caught.value)
    assert text.startswith(
        "2 resource(s) tagged gpuctl:cluster=t-erdma-spot and gpuctl:cluster-id=5e1f0c2a9b3d are still in "
        "cn-wulanchabu:\n"
        "    ECS instance i-0jl4left0001: aliyun ecs DeleteInstance --RegionId cn-wulanchabu "
        "--InstanceId i-0jl4left0001 --Force true\n"
        "    security group sg-0jl4left0002: aliyun ecs DeleteSecurityGroup --RegionId cn-wulanchabu "
        "--SecurityGroupId sg-0jl4left0002\n"
    )
    assert f"then run `{hints.spec_command(spec.name, 'down')}` again" in text
    assert "theirs" not in text
    # The throwaway stack goes; the cluster's stack stays until the cloud is verified empty.
    assert ("remove_stack", (CHECK_STACK, True)) in automation.steps()
    assert ("remove_stack", (CLUSTER, False)) not in automation.steps()


def test_down_without_a_stack_searches_by_name_and_proves_nothing(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # State lost: the id is unknown. What carries the name may be another team's: it is reported
    # with its owner and cluster-id tags, never taken for this cluster's.
    automation = FakeAutomation(monkeypatch, cluster_exists=False, cloud=THEIRS)
    lines: list[str] = []
    with pytest.raises(ProviderError) as caught:
        AlicloudDriver().down(spec, lines.append)
    assert caught.value.exit_code == 6
    assert automation.queries == [("t-erdma-spot", None)]
    message = caught.value.message
    assert message.startswith(
        "2 resource(s) in cn-wulanchabu are tagged with this cluster's name (gpuctl:cluster=t-erdma-spot) "
        "but not provably this cluster, since there is no stack for t-erdma-spot at file://"
    )
    assert message.endswith(
        "to hold its cluster id:\n"
        "    ECS instance i-2ze0theirs001 (owner other-team@example.com, cluster-id 0123456789ab): "
        "aliyun ecs DeleteInstance --RegionId cn-wulanchabu --InstanceId i-2ze0theirs001 --Force true\n"
        "    VPC vpc-2zetheirs002 (owner other-team@example.com, cluster-id 0123456789ab): "
        "aliyun vpc DeleteVpc --RegionId cn-wulanchabu --VpcId vpc-2zetheirs002"
    )
    hint = caught.value.hint or ""
    assert "gpuctl removes none of them" in hint
    assert "aliyun ecs DescribeInstances --RegionId cn-wulanchabu --Tag.1.Key gpuctl:cluster " \
           "--Tag.1.Value t-erdma-spot" in hint
    assert "--backend or GPUCTL_PULUMI_BACKEND" in hint
    assert ("destroy", CLUSTER) not in automation.steps()
    assert lines[-1] == ("checking cn-wulanchabu for resources tagged gpuctl:cluster=t-erdma-spot "
                         "(the cluster id is unknown: no stack holds it)")
    automation.cloud = []
    AlicloudDriver().down(spec, lines.append)
    assert lines[-1] == "verified: no resource tagged gpuctl:cluster=t-erdma-spot in cn-wulanchabu"


def test_down_of_a_stack_without_cluster_id_proves_nothing_either(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stack made by a gpuctl without cluster ids: destroyed, but what the name finds is not proven.
    automation = FakeAutomation(monkeypatch, config={"alicloud:region": REGION},
                                cloud=[{"kind": "vpcs", "id": "vpc-x1", "tags": _tags(None)}])
    with pytest.raises(ProviderError) as caught:
        AlicloudDriver().down(spec, lambda line: None)
    assert "since its stack holds no cluster id (made by an older gpuctl):\n    VPC vpc-x1 " \
           "(owner tester@example.com, cluster-id not tagged): aliyun vpc DeleteVpc" in caught.value.message
    assert ("destroy", CLUSTER) in automation.steps()
    assert ("remove_stack", (CLUSTER, False)) not in automation.steps()


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
    automation = FakeAutomation(monkeypatch, fail_check=failure)
    with pytest.raises(ProviderError, match=r"pulumi: Forbidden\.RAM"):
        AlicloudDriver().down(spec, lambda line: None)
    assert ("remove_stack", (CHECK_STACK, True)) in automation.steps()
    assert ("remove_stack", (CLUSTER, False)) not in automation.steps()


def test_a_check_without_the_expected_outputs_is_refused(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    FakeAutomation(monkeypatch, check_outputs={"instances": []})
    with pytest.raises(ProviderError, match="no usable answer: the leftovers check did not export networkInterfaces"):
        AlicloudDriver().down(spec, lambda line: None)


# ------------------------------------------------------------------ up: cluster id, no second copy


def test_first_up_makes_a_cluster_id_and_pins_it_with_the_creation_time_before_pulumi_runs(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = FakeAutomation(monkeypatch, cluster_exists=False)
    monkeypatch.setattr("toolkit.providers.pulumi.driver.new_cluster_id", lambda: OUR_ID)
    lines: list[str] = []
    outputs = AlicloudDriver(clock=lambda: NOW).up(spec, lines.append)
    assert outputs.nodes[0].name == "t-erdma-spot-gpu-0"
    assert automation.steps() == [
        ("create_or_select_stack", CLUSTER),
        *CHECK_STEPS,  # nothing of this name anywhere yet (see the refusal below)
        ("set_config", (CLUSTER, "gpuctl:clusterId", "5e1f0c2a9b3d")),
        ("set_config", (CLUSTER, "gpuctl:createdAt", "2026-11-29T09:15:42Z")),
        ("set_config", (CLUSTER, "gpuctl:owner", "tester@example.com")),
        ("set_config", (CLUSTER, "alicloud:region", "cn-wulanchabu")),
        ("up", CLUSTER),  # nothing to refresh: the stack held nothing
    ]
    assert automation.queries == [("t-erdma-spot", None)]  # before the first create: by name only
    (args,) = automation.built
    assert args.cluster_id == "5e1f0c2a9b3d"
    assert args.tags == {
        "project": "gpuctl-tests",
        "gpuctl:cluster": "t-erdma-spot",
        "gpuctl:cluster-id": "5e1f0c2a9b3d",
        "gpuctl:owner": "tester@example.com",
        "gpuctl:expires": "2026-11-29T17:16:00Z",
        "gpuctl:managed-by": "gpuctl",
    }
    assert (args.created_at, args.expires_at) == ("2026-11-29T09:15:42Z", "2026-11-29T17:16:00Z")
    assert "pulumi up: stack t-erdma-spot (cluster id 5e1f0c2a9b3d) at file://" in lines[-1]


def test_a_later_up_reads_the_cluster_id_and_creation_time_back_and_changes_neither(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = FakeAutomation(monkeypatch, cluster_exists=False)
    monkeypatch.setattr("toolkit.providers.pulumi.driver.new_cluster_id", lambda: OUR_ID)
    AlicloudDriver(clock=lambda: NOW).up(spec, lambda line: None)
    automation.log.clear()
    monkeypatch.setattr("toolkit.providers.pulumi.driver.new_cluster_id", lambda: "ffffffffffff")
    AlicloudDriver(clock=lambda: NOW + timedelta(hours=3)).up(spec, lambda line: None)
    # The stack holds the cluster now: no tag query, no new id, the release time where it was;
    # the state is refreshed from the cloud before the update.
    assert automation.steps() == [
        ("create_or_select_stack", CLUSTER),
        ("set_config", (CLUSTER, "alicloud:region", "cn-wulanchabu")),
        ("refresh", CLUSTER),
        ("up", CLUSTER),
    ]
    first, second = automation.built
    assert second.cluster_id == first.cluster_id == "5e1f0c2a9b3d"
    assert second.tags == first.tags
    assert (second.created_at, second.expires_at) == ("2026-11-29T09:15:42Z", "2026-11-29T17:16:00Z")


def test_a_retry_after_a_failed_first_up_keeps_the_release_time(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first `up` fails before any output exists (quota, stock ...); the retry two hours later
    # must release the nodes at the time the first promised, not two hours later.
    quota = _command_error("", "error: QuotaExceed.ElasticQuota: The quota of ecs.ebmgn7ex.32xlarge is exceeded\n")
    automation = FakeAutomation(monkeypatch, cluster_exists=False, fail_up=quota)
    with pytest.raises(ProviderError, match="QuotaExceed"):
        AlicloudDriver(clock=lambda: NOW).up(spec, lambda line: None)
    assert automation.stacks[CLUSTER].config["gpuctl:createdAt"] == "2026-11-29T09:15:42Z"
    assert automation.stacks[CLUSTER].outputs == {}
    automation.fail_up = None
    automation.log.clear()
    AlicloudDriver(clock=lambda: NOW + timedelta(hours=2)).up(spec, lambda line: None)
    first, retry = automation.built
    assert (retry.created_at, retry.expires_at) == ("2026-11-29T09:15:42Z", "2026-11-29T17:16:00Z")
    assert retry.cluster_id == first.cluster_id == automation.stacks[CLUSTER].config["gpuctl:clusterId"]
    # The stack still holds nothing, so the tag query runs again; nothing pinned is written again.
    assert automation.steps() == [
        ("create_or_select_stack", CLUSTER),
        *CHECK_STEPS,
        ("set_config", (CLUSTER, "alicloud:region", "cn-wulanchabu")),
        ("up", CLUSTER),
    ]


def test_another_operators_up_keeps_the_owner_pinned_at_the_first_create(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The spec names no owner: the first `up` pins its runner's name; a colleague's later `up` keeps it.
    spec = spec.model_copy(update={"owner": None})
    automation = FakeAutomation(monkeypatch, cluster_exists=False)
    monkeypatch.setattr("toolkit.providers.tags._local_user", lambda: "alice")
    AlicloudDriver(clock=lambda: NOW).up(spec, lambda line: None)
    assert automation.stacks[CLUSTER].config["gpuctl:owner"] == "alice"
    automation.log.clear()
    monkeypatch.setattr("toolkit.providers.tags._local_user", lambda: "bob")
    AlicloudDriver(clock=lambda: NOW + timedelta(hours=1)).up(spec, lambda line: None)
    first, second = automation.built
    assert first.tags["gpuctl:owner"] == second.tags["gpuctl:owner"] == "alice"
    assert not [step for step in automation.steps() if step[0] == "set_config" and step[1][1] == "gpuctl:owner"]


def test_a_later_up_refreshes_first_so_a_reclaimed_spot_node_is_seen_gone(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = FakeAutomation(monkeypatch, cluster_exists=False)
    AlicloudDriver(clock=lambda: NOW).up(spec, lambda line: None)
    assert [r["id"] for r in automation.stacks[CLUSTER].state] == ["i-2ze0example0"]
    automation.reclaimed = {"i-2ze0example0"}  # the cloud took the spot node back
    automation.log.clear()
    states_at_up: list[list[str]] = []
    run_cluster = automation.run_cluster

    def up_sees(record: StackRecord, program: Any) -> dict[str, Any]:
        states_at_up.append([r["id"] for r in record.state])
        return run_cluster(record, program)

    monkeypatch.setattr(automation, "run_cluster", up_sees)
    lines: list[str] = []
    AlicloudDriver(clock=lambda: NOW).up(spec, lines.append)
    steps = [step for step in automation.steps() if step[0] in ("refresh", "up")]
    assert steps == [("refresh", CLUSTER), ("up", CLUSTER)]
    # `up` starts from the refreshed state: the node is missing, so Pulumi creates it again.
    assert states_at_up == [[]]
    assert "pulumi refresh: stack t-erdma-spot" in lines


def test_a_stack_made_before_cluster_ids_keeps_its_creation_time_and_takes_an_id(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    automation = FakeAutomation(monkeypatch, config={"alicloud:region": REGION})
    record = automation.stacks[CLUSTER]
    record.state = [{"type": "alicloud:ecs/instance:Instance", "urn": "urn:...::t-erdma-spot-gpu-0", "custom": True,
                     "id": "i-2ze0example0"}]
    record.outputs = {"createdAt": "2026-11-29T08:00:00Z", "nodes": [NODE_0]}
    monkeypatch.setattr("toolkit.providers.pulumi.driver.new_cluster_id", lambda: OUR_ID)
    AlicloudDriver(clock=lambda: NOW).up(spec, lambda line: None)
    assert automation.steps() == [
        ("create_or_select_stack", CLUSTER),
        ("set_config", (CLUSTER, "gpuctl:clusterId", "5e1f0c2a9b3d")),
        ("set_config", (CLUSTER, "gpuctl:createdAt", "2026-11-29T08:00:00Z")),
        ("set_config", (CLUSTER, "gpuctl:owner", "tester@example.com")),
        ("set_config", (CLUSTER, "alicloud:region", "cn-wulanchabu")),
        ("refresh", CLUSTER),
        ("up", CLUSTER),
    ]
    assert automation.built[0].expires_at == "2026-11-29T16:00:00Z"


def test_up_refuses_to_build_a_second_copy_beside_a_live_one(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A lost or different backend: this stack is new, but a cluster of this name is live.
    automation = FakeAutomation(monkeypatch, cluster_exists=False, cloud=THEIRS)
    with pytest.raises(ProviderError) as caught:
        AlicloudDriver(clock=lambda: NOW).up(spec, lambda line: None)
    error = caught.value
    assert error.exit_code == 6
    assert error.message.startswith(
        "cluster t-erdma-spot already exists in cn-wulanchabu: 2 live resource(s) tagged "
        "gpuctl:cluster=t-erdma-spot that the stack t-erdma-spot at file://"
    )
    assert error.message.endswith(
        "/home/clusters/t-erdma-spot/pulumi does not hold:\n"
        "    ECS instance i-2ze0theirs001 (owner other-team@example.com, cluster-id 0123456789ab): "
        "aliyun ecs DeleteInstance --RegionId cn-wulanchabu --InstanceId i-2ze0theirs001 --Force true\n"
        "    VPC vpc-2zetheirs002 (owner other-team@example.com, cluster-id 0123456789ab): "
        "aliyun vpc DeleteVpc --RegionId cn-wulanchabu --VpcId vpc-2zetheirs002"
    )
    hint = error.hint or ""
    assert "will not build a second copy" in hint
    assert "--backend (or GPUCTL_PULUMI_BACKEND) pointing at the Pulumi state that created it" in hint
    assert "`pulumi import`" in hint
    # Nothing was built, nothing pinned, and the empty stack this run made is not left behind.
    assert automation.built == []
    assert automation.steps() == [("create_or_select_stack", CLUSTER), *CHECK_STEPS, ("remove_stack", (CLUSTER, False))]
    # Through the command line: exit 6, the same text.
    FakeAutomation(monkeypatch, cluster_exists=False, cloud=THEIRS)
    # --yes: the cluster costs more than the default threshold, which this test is not about.
    assert cli.main(["up", str(SPEC), "--no-configure", "--yes"]) == 6
    err = capsys.readouterr().err
    assert "already exists in cn-wulanchabu" in err
    assert "i-2ze0theirs001" in err


def test_a_retry_that_finds_what_an_interrupted_first_up_left_refuses_too(
    fake_pulumi: None, spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first `up` was killed after the VPC was made but before Pulumi recorded it: the stack
    # holds an id but no resource. Building on would leave that VPC billing beside a new one.
    orphan = [{"kind": "vpcs", "id": "vpc-2zeorphan01", "tags": _tags(OUR_ID)}]
    automation = FakeAutomation(monkeypatch, config={"gpuctl:clusterId": OUR_ID,
                                                     "gpuctl:createdAt": "2026-11-29T09:15:42Z"}, cloud=orphan)
    with pytest.raises(ProviderError, match=r"VPC vpc-2zeorphan01 \(owner tester@example.com, cluster-id "
                                            r"5e1f0c2a9b3d\): aliyun vpc DeleteVpc"):
        AlicloudDriver(clock=lambda: NOW).up(spec, lambda line: None)
    # The stack keeps its pinned id and time (it is not new), and nothing ran.
    assert automation.stacks[CLUSTER].config["gpuctl:clusterId"] == OUR_ID
    assert ("up", CLUSTER) not in automation.steps()


def test_cluster_ids_are_fresh_12_hex_digits() -> None:
    made = {new_cluster_id() for _ in range(50)}
    assert len(made) == 50
    assert all(re.fullmatch(r"[0-9a-f]{12}", value) for value in made)


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
    # `up` asks before creating a cluster that costs more than the threshold; --yes confirms in advance.
    confirm = ["--yes"] if command == "up" else []
    code = cli.main([command, str(SPEC), "--backend", "s3://bucket/path", *confirm])
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


AWS = "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"
PULUMI_TOKEN = "PULUMI_ACCESS_TOKEN"
AZURE = "AZURE_STORAGE_KEY"


# url, the secret parts (none may appear in the message), where the message says the credential
# belongs (None: accepted), and the URL as the message shows it.
BACKEND_URLS: list[tuple[str, tuple[str, ...], str | None, str | None]] = [
    # refused: anything in the user-info part
    ("https://pul-TOKEN0001@api.pulumi.com", ("pul-TOKEN0001",), PULUMI_TOKEN, "https://***@api.pulumi.com"),
    ("s3://AKIAKEYID0002@bucket/path", ("AKIAKEYID0002",), AWS, "s3://***@bucket/path"),
    ("s3://AKIAKEYID0003:wJalrSECRET0003@bucket", ("AKIAKEYID0003", "wJalrSECRET0003"), AWS, "s3://***@bucket"),
    ("https://:onlyPASSWORD0004@api.pulumi.com", ("onlyPASSWORD0004",), PULUMI_TOKEN, "https://***@api.pulumi.com"),
    ("azblob://acct0005:AZKEY0005==@container", ("acct0005", "AZKEY0005"), AZURE, "azblob://***@container"),
    # refused: query parameters that carry a signature or a key, any case
    ("s3://bucket?sig=SIGVALUE0006", ("SIGVALUE0006",), AWS, "s3://bucket?sig=***"),
    ("azblob://container?sv=2022-11-02&se=2026-12-01T00%3A00Z&sp=rwdl&sr=c&sig=AZSASSIG0007%3D",
     ("AZSASSIG0007", "rwdl", "2022-11-02"), AZURE, "azblob://container?sv=***&se=***&sp=***&sr=***&sig=***"),
    ("s3://bucket/p?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIACRED0008%2F20261129"
     "&X-Amz-Signature=AMZSIG0008", ("AKIACRED0008", "AMZSIG0008"), AWS,
     "s3://bucket/p?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=***&X-Amz-Signature=***"),
    ("s3://bucket?x-amz-security-token=STSTOKEN0009", ("STSTOKEN0009",), AWS, "s3://bucket?x-amz-security-token=***"),
    ("s3://bucket?endpoint=oss-cn-beijing.aliyuncs.com&OSSAccessKeyId=LTAIOSS0010&Signature=OSSSIG0010",
     ("LTAIOSS0010", "OSSSIG0010"), AWS,
     "s3://bucket?endpoint=oss-cn-beijing.aliyuncs.com&OSSAccessKeyId=***&Signature=***"),
    ("s3://bucket?AccessKeyId=LTAISTS0011&Security-Token=STSSEC0011", ("LTAISTS0011", "STSSEC0011"), AWS,
     "s3://bucket?AccessKeyId=***&Security-Token=***"),
    ("https://api.pulumi.com?TOKEN=PULTOKEN0012", ("PULTOKEN0012",), PULUMI_TOKEN, "https://api.pulumi.com?TOKEN=***"),
    ("s3://bucket?Key=PLAINKEY0013", ("PLAINKEY0013",), AWS, "s3://bucket?Key=***"),
    ("s3://bucket?secret=PLAINSECRET0014&region=cn-beijing", ("PLAINSECRET0014",), AWS,
     "s3://bucket?secret=***&region=cn-beijing"),
    ("s3://bucket?password=PASSWORD0015", ("PASSWORD0015",), AWS, "s3://bucket?password=***"),
    ("azblob://container?credential=CRED0016", ("CRED0016",), AZURE, "azblob://container?credential=***"),
    ("azblob://container?SAS=SASTOKEN0017", ("SASTOKEN0017",), AZURE, "azblob://container?SAS=***"),
    ("s3://bucket?endpoint=oss-cn-beijing.aliyuncs.com&secret_access_key=LOOKALIKE0018", ("LOOKALIKE0018",), AWS,
     "s3://bucket?endpoint=oss-cn-beijing.aliyuncs.com&secret_access_key=***"),
    # accepted: no credential in them
    ("s3://bucket/path", (), None, None),
    ("s3://bucket?endpoint=oss-cn-beijing.aliyuncs.com&region=cn-beijing&s3ForcePathStyle=true", (), None, None),
    ("https://api.pulumi.com", (), None, None),
    ("file:///home/me/.gpuctl/state", (), None, None),
    ("file:///srv/state/team@example/gpuctl", (), None, None),  # an @ in the path is no user
    ("azblob://container?storage_account=teamstate", (), None, None),
    ("azblob://container?sv=2022-11-02&sp=r", (), None, None),  # SAS fields without a signature
    ("s3://bucket?kmskeyid=alias/gpuctl-state", (), None, None),  # a key's id, not a key
    ("gs://bucket/prefix", (), None, None),
]


@pytest.mark.parametrize(("url", "secrets", "home", "shown"), BACKEND_URLS, ids=[row[0][:48] for row in BACKEND_URLS])
def test_backend_urls_with_any_credential_are_refused_and_never_echoed(
    url: str, secrets: tuple[str, ...], home: str | None, shown: str | None
) -> None:
    if home is None:
        assert check_backend_url(url) == url
        return
    with pytest.raises(UsageError) as caught:
        check_backend_url(url)
    text = str(caught.value)  # message and hint
    for secret in secrets:
        assert secret not in text
    assert caught.value.message.startswith(f"the backend URL {shown} carries a credential (")
    assert f"export it instead: {home}" in text


def test_a_refused_url_names_what_carried_the_credential() -> None:
    with pytest.raises(UsageError) as caught:
        check_backend_url("s3://AKIA1:SECRET1@bucket?sig=SIG1&region=cn-beijing")
    assert caught.value.message == (
        "the backend URL s3://***@bucket?sig=***&region=cn-beijing carries a credential (a user name or "
        "password and the parameter(s) sig); gpuctl keeps credentials out of URLs, files and logs"
    )
    assert caught.value.hint == (
        "remove it from the URL and export it instead: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (for s3:// "
        "and for OSS through its S3 endpoint)"
    )


def test_not_a_url_is_refused_without_echoing_a_key_pair() -> None:
    with pytest.raises(UsageError) as caught:
        check_backend_url("AKIAKEY:wJalrSECRET@bucket/path")
    assert str(caught.value).startswith("'***@bucket/path' is not a Pulumi backend URL")


# ------------------------------------------------------------- credentials in errors, files, env


PLANTED = {
    "ALICLOUD_SECRET_KEY": "planted-alicloud-secret-0001",
    "TENCENTCLOUD_SECRET_KEY": "planted-tencent-secret-0002",
    "PULUMI_CONFIG_PASSPHRASE": "planted-passphrase-0003",
    "AWS_SECRET_ACCESS_KEY": "planted-aws-secret-0004",
}


@pytest.fixture
def planted(fake_pulumi: None, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    return PLANTED


def _leaky_error() -> CommandError:
    """A CommandError whose error lines and stderr tail both quote every planted credential."""
    said = " ".join(PLANTED.values())
    stdout = "Updating (t-erdma-spot):\n" + "".join(
        f"    error: [ERROR] provider echoed {name}={value}\n" for name, value in PLANTED.items()
    )
    return _command_error(stdout, f"error: update failed\nthe end of stderr: {said}\n")


def _assert_clean(text: str) -> None:
    for name, value in PLANTED.items():
        assert value not in text, name
        assert value[:-1] not in text, name  # not even a prefix of it


@pytest.mark.parametrize("where", ["cluster-up", "open", "check", "no-error-lines", "passphrase"])
def test_planted_credentials_never_reach_a_pulumi_error(
    planted: dict[str, str], spec: ClusterSpec, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    failure = _leaky_error()
    if where == "no-error-lines":  # only the stderr tail is kept
        failure = _command_error("", f"panic: {' '.join(PLANTED.values())}\n", code=2)
    if where == "passphrase":  # the wrong-passphrase branch has a hint of its own
        failure = _command_error("", f"error: incorrect passphrase {PLANTED['PULUMI_CONFIG_PASSPHRASE']}\n")
    automation = FakeAutomation(monkeypatch, cluster_exists=False, fail_up=failure,
                                fail_check=failure if where == "check" else None)

    def fail_open(*args: Any, **kwargs: Any) -> Any:
        raise failure

    if where == "open":
        monkeypatch.setattr("pulumi.automation.create_or_select_stack", fail_open)
    with pytest.raises(ProviderError) as caught:
        AlicloudDriver(clock=lambda: NOW).up(spec, lambda line: None)
    text = str(caught.value)
    _assert_clean(text)
    assert "<PULUMI_CONFIG_PASSPHRASE>" in text  # replaced by <NAME>, not dropped
    assert automation.stacks.get(CLUSTER, StackRecord()).outputs == {}


def test_planted_credentials_never_reach_progress_lines_or_the_command_line(
    planted: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines: list[str] = []
    said = " ".join(PLANTED.values())
    diagnostic = DiagnosticEvent(message=f"denied: {said}\n", color="never", severity="error")
    ProgressReporter(lines.append)(EngineEvent(1, 0, diagnostic_event=diagnostic))
    _assert_clean("\n".join(lines))
    assert lines == ["error: denied: <ALICLOUD_SECRET_KEY> <TENCENTCLOUD_SECRET_KEY> <PULUMI_CONFIG_PASSPHRASE> "
                     "<AWS_SECRET_ACCESS_KEY>"]
    FakeAutomation(monkeypatch, fail_check=_leaky_error())
    assert cli.main(["down", str(SPEC)]) == 6
    captured = capsys.readouterr()
    _assert_clean(captured.out + captured.err)


def test_the_workspace_gets_no_credential_in_env_vars() -> None:
    assert workspace_env() == {"PULUMI_SKIP_UPDATE_CHECK": "true"}
    # Even a credential handed to it by mistake is dropped: the CLI inherits those from the environment.
    assert workspace_env({"AWS_SECRET_ACCESS_KEY": "x" * 8, "PULUMI_CONFIG_PASSPHRASE": "y" * 8, "TZ": "UTC"}) == {
        "PULUMI_SKIP_UPDATE_CHECK": "true", "TZ": "UTC",
    }


FAKE_CLI = """#!{python}
# A stand-in for the Pulumi CLI: logs its arguments, keeps `config set` in Pulumi.<stack>.yaml
# (JSON, which is YAML) in the workspace as the real one does (and drops it on `stack rm`), and
# answers the reads the driver makes.
import json, sys
from pathlib import Path

with open({log!r}, "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
args = [arg for arg in sys.argv[1:] if arg != "--non-interactive"]
stack = args[args.index("--stack") + 1] if "--stack" in args else None
settings = Path.cwd() / f"Pulumi.{{stack}}.yaml"
data = json.loads(settings.read_text()) if settings.exists() else {{}}
if args[:1] == ["version"]:
    print("v3.272.0")
elif args[:2] == ["config", "set"]:
    data.setdefault("config", {{}})[args[2]] = args[args.index("--") + 1]
    settings.write_text(json.dumps(data))
elif args[:1] == ["config"]:
    print(json.dumps({{k: {{"value": v, "secret": False}} for k, v in data.get("config", {{}}).items()}}))
elif args[:2] == ["stack", "export"]:
    print(json.dumps({{"version": 3, "deployment": {{"resources": []}}}}))
elif args[:2] == ["stack", "output"]:
    print("{{}}")
elif args[:2] == ["stack", "rm"]:
    (Path.cwd() / f"Pulumi.{{args[-1]}}.yaml").unlink(missing_ok=True)
"""


def test_up_through_the_real_workspace_writes_no_credential_anywhere(
    planted: dict[str, str], spec: ClusterSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real Automation API and LocalWorkspace, a fake CLI: Pulumi.yaml, Pulumi.<stack>.yaml, the
    CLI's arguments and the workspace's env_vars carry none of the planted credentials."""
    import sys

    from pulumi.automation import Stack

    log = tmp_path / "pulumi-argv.log"
    cli_path = tmp_path / "bin" / "pulumi"
    cli_path.write_text(FAKE_CLI.format(python=sys.executable, log=str(log)))
    cli_path.chmod(0o755)
    built: list[GpuClusterArgs] = []
    env_vars: list[dict[str, str]] = []
    monkeypatch.setattr("toolkit.providers.alicloud.component.cluster_program",
                        lambda spec, args, storage=None: built.append(args))

    def up(self: Stack, **kwargs: Any) -> Any:  # the engine run itself is not faked by the CLI
        env_vars.append(dict(self.workspace.env_vars))
        if self.name == CHECK_STACK:
            outputs = NOTHING_LEFT
        else:
            kwargs["program"]()
            outputs = {"cluster": CLUSTER, "nodes": [NODE_0]}
        return type("UpResult", (), {"outputs": {k: OutputValue(v, False) for k, v in outputs.items()}})()

    monkeypatch.setattr(Stack, "up", up)
    AlicloudDriver(clock=lambda: NOW).up(spec, lambda line: None)
    (args,) = built
    work_dir = tmp_path / "home" / "clusters" / "t-erdma-spot" / "pulumi-project"
    written = {path.name: path.read_text() for path in work_dir.iterdir()}
    assert sorted(written) == ["Pulumi.t-erdma-spot.yaml", "Pulumi.yaml"]
    assert json.loads(written["Pulumi.t-erdma-spot.yaml"]) == {"config": {
        "gpuctl:clusterId": args.cluster_id, "gpuctl:createdAt": "2026-11-29T09:15:42Z",
        "gpuctl:owner": "tester@example.com", "alicloud:region": "cn-wulanchabu",
    }}
    everything = "\n".join(written.values()) + log.read_text() + json.dumps(env_vars)
    _assert_clean(everything)
    for name in [*PLANTED, "ALICLOUD_ACCESS_KEY", "LTAI-test-access"]:
        assert name not in everything
    assert env_vars == [{"PULUMI_SKIP_UPDATE_CHECK": "true"}] * 2


def test_the_local_lab_takes_no_backend_and_is_otherwise_unchanged() -> None:
    from toolkit.providers.lab.driver import LocalLabDriver

    assert isinstance(get_driver("local"), LocalLabDriver)
    with pytest.raises(UsageError, match="--backend is for clusters kept in a Pulumi backend"):
        get_driver("local", backend_url="s3://bucket/path")
    assert get_driver("alicloud", backend_url="s3://bucket/path")._backend_override == "s3://bucket/path"  # type: ignore[attr-defined]
