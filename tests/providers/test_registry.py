"""One `Provider` object per provider: the registry, its lazy imports, and what happens to a provider
gpuctl cannot drive yet (tencentcloud made undrivable for the test): validate warns, plan marks it,
`up` refuses."""

from __future__ import annotations

import json
import subprocess
import sys
from fnmatch import fnmatchcase
from pathlib import Path
from typing import get_args

import pytest

from toolkit import hints, vocabulary
from toolkit.catalog.checks import check_spec
from toolkit.cli import main
from toolkit.errors import UsageError
from toolkit.providers.registry import PROVIDERS, get_driver, get_provider
from toolkit.spec.loader import load_spec

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
TENCENT = "examples/tencentcloud-hcc-2x8.yaml"


@pytest.fixture
def undrivable_tencent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tencent as it was before its driver: the mechanism stays for the next cloud."""
    from toolkit.providers.tencentcloud.provider import TencentcloudProvider

    monkeypatch.setattr(TencentcloudProvider, "drivable", False)


def test_every_provider_word_has_a_provider_object_and_no_other() -> None:
    from toolkit.spec.models import Provider

    assert tuple(PROVIDERS) == vocabulary.PROVIDERS == get_args(Provider) == ("alicloud", "tencentcloud", "local")
    assert [get_provider(name).name for name in PROVIDERS] == list(PROVIDERS)


def test_what_each_provider_says_of_itself() -> None:
    facts = {name: (p.drivable, p.pulumi_backed, p.paid) for name in PROVIDERS for p in [get_provider(name)]}
    assert facts == {
        "alicloud": (True, True, True),
        "tencentcloud": (True, True, True),
        "local": (True, False, False),
    }


def test_checking_and_planning_a_cloud_spec_imports_no_cloud_sdk_or_pulumi() -> None:
    """The provider objects import their SDKs only when driving: validate and plan stay light."""
    code = (
        "import sys\n"
        "from toolkit.cli import main\n"
        "for spec in ('examples/alicloud-erdma-2x8.yaml', 'examples/tencentcloud-hcc-2x8.yaml'):\n"
        "    assert main(['plan', '--json', spec]) == 0\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pulumi', 'pulumi_alicloud', 'tencentcloud',"
        " 'tencentcloud_iac_pulumi'))\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert "HEAVY []" in run.stderr


@pytest.mark.usefixtures("undrivable_tencent")
def test_a_provider_gpuctl_cannot_drive_is_refused_by_the_registry() -> None:
    with pytest.raises(UsageError) as caught:
        get_driver("tencentcloud")
    assert str(caught.value) == "provider 'tencentcloud' cannot be driven by gpuctl yet (drivers: alicloud, local)"


@pytest.mark.usefixtures("undrivable_tencent")
def test_validate_warns_that_tencentcloud_cannot_be_driven_yet(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    assert main(["validate", TENCENT]) == 0
    err = capsys.readouterr().err
    assert (f"warning: {TENCENT}: provider: gpuctl cannot create tencentcloud resources yet: validate and plan "
            "work, `up` refuses") in err.splitlines()


def test_a_drivable_provider_gets_no_such_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    warnings = check_spec(load_spec("examples/alicloud-erdma-2x8.yaml")).warnings
    assert not [w for w in warnings if "cannot create" in w]


@pytest.mark.usefixtures("undrivable_tencent")
def test_plan_marks_a_provider_gpuctl_cannot_drive_yet(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    assert main(["plan", "--json", TENCENT]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["drivable"] is False
    assert plan["resources"] == []
    assert main(["plan", TENCENT]) == 0
    text = capsys.readouterr().out
    up = hints.command("up")  # as this process would be run again
    assert f"Will create:\n  nothing yet: gpuctl cannot create tencentcloud resources yet (`{up}` refuses)\n" in text
    assert main(["plan", "--json", "examples/alicloud-erdma-2x8.yaml"]) == 0
    assert json.loads(capsys.readouterr().out)["drivable"] is True


@pytest.mark.usefixtures("undrivable_tencent")
def test_up_of_a_provider_gpuctl_cannot_drive_exits_2_before_anything(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path))
    assert main(["up", TENCENT]) == 2
    err = capsys.readouterr().err
    assert "provider 'tencentcloud' cannot be driven by gpuctl yet" in err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_only_pulumi_backed_providers_take_a_backend() -> None:
    from toolkit.providers.alicloud.driver import AlicloudDriver
    from toolkit.providers.lab.driver import LocalLabDriver

    assert isinstance(get_driver("local"), LocalLabDriver)
    with pytest.raises(UsageError, match=r"--backend is for clusters kept in a Pulumi backend \(alicloud, "
                       r"tencentcloud\); provider 'local' keeps its state in the gpuctl directory"):
        get_driver("local", backend_url="s3://bucket/path")
    driver = get_driver("alicloud", backend_url="s3://bucket/path")
    assert isinstance(driver, AlicloudDriver)
    assert driver._backend_override == "s3://bucket/path"


def test_every_driver_revives_through_the_interface() -> None:
    """`revive` is part of ProviderDriver: the lab restarts dead sshds (tests/lab), a cloud revives nothing."""
    spec = load_spec(REPO / "tests" / "providers" / "specs" / "erdma-spot.yaml")
    assert get_driver("alicloud").revive(spec, lambda _line: None) == []


def test_the_inventory_interpreter_comes_from_the_provider() -> None:
    assert get_provider("local").python_interpreter == "/usr/bin/python3"
    clouds = {get_provider(name).python_interpreter for name in ("alicloud", "tencentcloud")}
    assert clouds == {"auto_silent"}


def test_lab_plan_lists_what_the_lab_driver_builds() -> None:
    """The lab is not Pulumi: its list follows lab_state.plan, the record `up` builds from."""
    from toolkit.providers.lab import state as lab_state

    spec = load_spec(REPO / "examples" / "local-lab.yaml")
    state = lab_state.plan(spec)
    planned = get_provider("local").planned_resources(spec, check_spec(spec))
    assert [(r.type, r.name, r.count) for r in planned] == [
        ("lab:rootfs", "debian-12-base", 1),
        ("lab:bridge", "lab management", 1),
        ("lab:bridge", "lab fabric", 1),
        ("lab:node", "lab-*", 3),
    ]
    assert len(state.nodes) == 3
    assert all(fnmatchcase(node.name, "lab-*") for node in state.nodes)


def test_tencentcloud_is_driven_through_its_pulumi_driver() -> None:
    from toolkit.providers.tencentcloud.driver import TencentcloudDriver

    driver = get_driver("tencentcloud", backend_url="s3://bucket/path")
    assert isinstance(driver, TencentcloudDriver)
    assert (driver.project, driver.region_config_key) == ("gpuctl-tencentcloud", "tencentcloud:region")


def test_up_of_tencentcloud_without_the_pulumi_cli_exits_7_with_both_install_commands(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("GPUCTL_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", "AKIDexample")
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", "example-secret-not-real")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "x")
    assert main(["up", TENCENT, "--yes"]) == 7  # --yes: its cost is unknown, and this test is about the CLI
    err = capsys.readouterr().err
    assert "gpuctl up: error: the Pulumi CLI is not installed (no `pulumi` on PATH); gpuctl drives Tencent Cloud " \
           "through it" in err
    assert "install it with `curl -fsSL https://get.pulumi.com | sh`" in err
    assert "pulumi plugin install resource tencentcloud 0.2.3 --server github://api.github.com/tencentcloudstack" in err
    assert "example-secret-not-real" not in err
    assert "Traceback" not in err


def test_tencentcloud_credentials_come_from_the_environment_or_a_tccli_profile(tmp_path: Path) -> None:
    from toolkit.providers.tencentcloud.driver import TencentcloudDriver

    assert TencentcloudDriver.credentials_problem({"TENCENTCLOUD_SECRET_ID": "a", "TENCENTCLOUD_SECRET_KEY": "b"},
                                                  tmp_path) is None
    problem = TencentcloudDriver.credentials_problem({}, tmp_path)
    assert problem is not None
    assert problem.startswith("no Tencent Cloud credentials: TENCENTCLOUD_SECRET_ID is not set")
    (tmp_path / ".tccli").mkdir()
    (tmp_path / ".tccli" / "default.credential").write_text('{"secretId": "a", "secretKey": "b"}')
    assert TencentcloudDriver.credentials_problem({}, tmp_path) is None
