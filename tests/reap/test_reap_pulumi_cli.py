"""`gpuctl reap --yes` goes through each cluster's `down`, so it meets the minimum Pulumi CLI too: a
CLI too old to destroy is named as a missing tool (exit 7), not as missing credentials, and nothing
is destroyed (toolkit/providers/pulumi/cli.py MIN_CLI; tests/providers/test_pulumi_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fake_cloud import alibaba, tencent
from tests.providers.pulumi_cli import write_fake_cli
from tests.reap.test_reap import reap
from toolkit.errors import EXIT_MISSING_TOOL

pytestmark = pytest.mark.fake_cloud


@pytest.mark.usefixtures("home", "login")
def test_reap_yes_with_a_cli_too_old_to_destroy_names_the_cli(
        clouds: tuple[tencent.FakeTencentCloud, alibaba.FakeAlibabaCloud], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    cli = write_fake_cli(tmp_path / "bin", "echo v3.180.0")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "gpuctl-test-passphrase")
    code, document, err = reap(capsys, "--yes", "--provider", "tencentcloud")
    assert code == EXIT_MISSING_TOOL
    [failure] = document["failures"]
    assert failure.startswith("old-hcc (tencentcloud): down failed: old-hcc: ")
    assert f"the Pulumi CLI at {cli} is 3.180.0, older than the 3.181.0 gpuctl needs" in failure
    assert "curl -fsSL https://get.pulumi.com | sh -s -- --version 3.272.0" in failure
    assert document["destroyed"] == []
    assert "no usable credentials" not in err
    assert "a tool `down` needs is missing, not a credential" in err
    tencent_cloud, _ = clouds
    assert not tencent_cloud.actions("TerminateInstances")
