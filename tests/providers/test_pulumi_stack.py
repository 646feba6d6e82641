"""The shared Pulumi plumbing as a second cloud's driver sees it: plugins named by their SDK's
`pulumi-plugin.json`, and a subclass that brings only its own credentials and plugin.

(The plumbing's behaviour under Alibaba's driver is tested in test_alicloud_driver.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit.errors import MissingToolError
from toolkit.providers.pulumi.driver import PulumiStackDriver
from toolkit.providers.pulumi.failure import pulumi_failure
from toolkit.providers.pulumi.plugins import ProviderPlugin
from toolkit.spec.loader import load_spec

pytestmark = pytest.mark.unit

SPEC = Path(__file__).resolve().parent / "specs" / "erdma-spot.yaml"
TENCENT_PLUGIN = ProviderPlugin(package="tencentcloud_iac_pulumi", label="Tencent Cloud")


def test_a_plugin_is_named_by_its_sdks_manifest() -> None:
    # pulumi_alicloud/pulumi-plugin.json: {"name": "alicloud", "version": "4.0.0"}
    alicloud = ProviderPlugin(package="pulumi_alicloud", label="Alibaba Cloud")
    assert (alicloud.name, alicloud.version) == ("alicloud", "4.0.0")
    assert alicloud.install_command() == "pulumi plugin install resource alicloud 4.0.0"
    # tencentcloud_iac_pulumi/pulumi-plugin.json names a server and no version: the package's own.
    assert (TENCENT_PLUGIN.name, TENCENT_PLUGIN.version) == ("tencentcloud", "0.2.3")
    assert TENCENT_PLUGIN.install_command() == (
        "pulumi plugin install resource tencentcloud 0.2.3 --server github://api.github.com/tencentcloudstack"
    )


def test_a_plugin_whose_sdk_is_missing_says_so(tmp_path: Path) -> None:
    missing = ProviderPlugin(package="pulumi_nosuchcloud", label="No Such Cloud")
    assert missing.version is None
    assert missing.problem({"PULUMI_HOME": str(tmp_path)}) == (
        "the pulumi_nosuchcloud Python package is not installed: pip install -e . (part of gpuctl's dependencies)"
    )


def test_a_plugin_in_the_cache_is_found_and_one_missing_is_named(tmp_path: Path) -> None:
    env = {"PULUMI_HOME": str(tmp_path)}
    assert TENCENT_PLUGIN.problem(env) == (
        f"the Pulumi provider plugin for Tencent Cloud 0.2.3 is not in {tmp_path / 'plugins'}: install it with "
        "`pulumi plugin install resource tencentcloud 0.2.3 --server github://api.github.com/tencentcloudstack` "
        "(needs network once)"
    )
    (tmp_path / "plugins" / "resource-tencentcloud-v0.2.3").mkdir(parents=True)
    assert TENCENT_PLUGIN.problem(env) is None


class ToyCloudDriver(PulumiStackDriver):
    """A second cloud as the lead would start one: credentials and a plugin, nothing else yet."""

    name = "tencentcloud"
    cloud = "Tencent Cloud"
    project = "gpuctl-tencentcloud"
    region_config_key = "tencentcloud:region"
    plugins = (TENCENT_PLUGIN,)
    credential_pairs = (("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY"),)
    profile_envs = ("TENCENTCLOUD_PROFILE",)


def test_a_subclass_preflight_names_its_own_credentials_and_plugin(tmp_path: Path) -> None:
    spec = load_spec(SPEC)
    with pytest.raises(MissingToolError) as caught:
        ToyCloudDriver().preflight(spec, "s3://team-state", env={"PULUMI_HOME": str(tmp_path)},
                                   which=lambda _name: None, home=tmp_path)
    lines = str(caught.value).splitlines()
    assert lines[0] == "t-erdma-spot: 4 thing(s) missing before gpuctl can reach Tencent Cloud:"
    assert lines[3] == ("  - no Tencent Cloud credentials in the environment: export TENCENTCLOUD_SECRET_ID and "
                        "TENCENTCLOUD_SECRET_KEY, or TENCENTCLOUD_PROFILE=<name>")
    assert "pulumi plugin install resource tencentcloud 0.2.3" in lines[2]
    env = {"TENCENTCLOUD_SECRET_ID": "AKIDtest", "TENCENTCLOUD_SECRET_KEY": "test-secret", "PULUMI_HOME": str(tmp_path)}
    assert ToyCloudDriver.credentials_problem(env) is None


def test_a_missing_plugin_error_names_the_subclass_plugin() -> None:
    error = pulumi_failure(RuntimeError("error: no resource plugin 'pulumi-resource-tencentcloud' found"),
                           {}, cloud="Tencent Cloud", plugins=(TENCENT_PLUGIN,))
    assert isinstance(error, MissingToolError)
    assert error.message == "the Pulumi provider plugin for Tencent Cloud is not installed"
    assert ToyCloudDriver().failure(FileNotFoundError("pulumi")).message == (
        "the Pulumi CLI is not installed (no `pulumi` on PATH); gpuctl drives Tencent Cloud through it"
    )
