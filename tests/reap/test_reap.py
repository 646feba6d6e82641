"""`gpuctl reap` against the fake Tencent and Alibaba APIs on loopback and a real-shaped gpuctl home."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.fake_cloud import alibaba, tencent
from tests.reap.conftest import REPO, alibaba_instance, gpuctl_tags, tencent_instance, write_stack
from toolkit.cli import main
from toolkit.errors import EXIT_MISSING_TOOL, EXIT_PROVIDER
from toolkit.reap import local
from toolkit.reap.classify import classify
from toolkit.reap.cloud import CloudInstance

pytestmark = pytest.mark.fake_cloud
Clouds = tuple[tencent.FakeTencentCloud, alibaba.FakeAlibabaCloud]
RELEASES = ("TerminateInstances", "DeleteInstances")


def reap(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(["reap", "--json", *argv])
    out, err = capsys.readouterr()
    document = json.loads(out)
    jsonschema.validate(document, json.loads((REPO / "docs" / "schemas" / "reap.json").read_text()))
    return code, document, err


def by_name(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["cluster"]: row for row in document["clusters"]}


def release_calls(clouds: Clouds) -> list[Any]:
    tc, ali = clouds
    return [c for c in tc.calls if c.action in RELEASES] + [c for c in ali.calls if c.action in RELEASES]


@pytest.mark.usefixtures("home", "login")
def test_dry_run_finds_expired_live_and_orphaned_and_changes_nothing(
        clouds: Clouds, downs: list[Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, document, _err = reap(capsys)
    assert code == 0
    rows = by_name(document)
    assert sorted(rows) == ["live-erdma", "lost", "old-hcc"]  # the untagged instances are no cluster
    assert (rows["old-hcc"]["status"], rows["old-hcc"]["in_state"], rows["old-hcc"]["instances"]) == \
        ("expired", True, ["ins-old0", "ins-old1"])
    assert (rows["live-erdma"]["status"], rows["live-erdma"]["instances"]) == ("live", ["i-live0"])
    assert (rows["lost"]["status"], rows["lost"]["in_state"], rows["lost"]["region"], rows["lost"]["expired"]) == \
        ("orphaned", False, "ap-guangzhou", True)
    assert rows["old-hcc"]["expires_at"] == "2026-01-01T08:00:00Z"
    assert rows["old-hcc"]["action"] == "would destroy (dry run; --yes to do it) through `down`"
    # 2 x GT4.4XLARGE96 at the catalog's 28.64 CNY/h, for the 8 h until its expiry.
    assert (rows["old-hcc"]["cost_so_far"]["per_hour"], rows["old-hcc"]["cost_so_far"]["amount"]) == (57.28, 458.24)
    assert rows["lost"]["commands"] == [
        "tccli cvm DescribeInstances --region ap-guangzhou --Filters "
        "'[{\"Name\":\"tag:gpuctl:cluster\",\"Values\":[\"lost\"]}]'",
        "tccli cvm TerminateInstances --region ap-guangzhou --InstanceIds '[\"ins-lost\"]'"]
    assert sorted(document["searched"]) == ["alicloud/cn-hangzhou", "alicloud/cn-wulanchabu",
                                            "tencentcloud/ap-guangzhou", "tencentcloud/ap-shanghai"]
    assert (document["dry_run"], document["unreachable"], document["destroyed"], document["released"]) == \
        (True, [], [], [])
    assert downs == []
    assert release_calls(clouds) == []
    assert len(clouds[0].instances) == 4
    assert len(clouds[1].instances) == 2


@pytest.mark.usefixtures("home", "login")
def test_yes_destroys_only_the_expired_through_down(
        clouds: Clouds, downs: list[Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, document, _err = reap(capsys, "--yes")
    assert code == 0
    assert downs == [("tencentcloud", "old-hcc", "ap-shanghai")]
    assert document["destroyed"] == ["old-hcc"]
    rows = by_name(document)
    assert rows["old-hcc"]["action"] == "destroyed through `down`"
    assert rows["live-erdma"]["action"] == "left alone: live"
    assert rows["lost"]["action"].startswith("orphaned: reported only")
    assert release_calls(clouds) == []  # the orphan is not released without --include-orphaned


@pytest.mark.usefixtures("home", "login")
def test_include_orphaned_releases_only_instances_with_gpuctl_cluster_id(
        clouds: Clouds, downs: list[Any], capsys: pytest.CaptureFixture[str]) -> None:
    tc, ali = clouds
    # An orphan that says it is gpuctl's cluster by name only: no cluster-id tag, so no proof.
    tc.instances.append(tencent_instance("ins-noid", "ap-guangzhou-3",
                                         gpuctl_tags("noid", None, "2026-01-01T00:00:00Z")))
    # An orphan not yet expired: it may be another backend's live cluster.
    tc.instances.append(tencent_instance("ins-young", "ap-guangzhou-3",
                                         gpuctl_tags("young", "dddddddddddd", "2099-01-01T00:00:00Z")))
    code, document, _err = reap(capsys, "--yes", "--include-orphaned")
    assert code == 0
    released = [c.params for c in release_calls(clouds)]
    assert released == [{"InstanceIds": ["ins-lost"]}]
    assert document["released"] == ["ins-lost"]
    assert {i["InstanceId"] for i in tc.instances} == {"ins-old0", "ins-old1", "ins-untagged", "ins-noid", "ins-young"}
    assert {i["InstanceId"] for i in ali.instances} == {"i-live0", "i-untagged"}
    rows = by_name(document)
    assert rows["noid"]["action"] == "orphaned, but no instance carries gpuctl's cluster-id tag: reported only"
    assert rows["young"]["action"].startswith("orphaned, not past its expiry: reported only")
    assert downs == [("tencentcloud", "old-hcc", "ap-shanghai")]


@pytest.mark.usefixtures("home", "login")
def test_alibaba_orphan_is_released_with_delete_instances_and_the_untagged_one_is_not(
        clouds: Clouds, downs: list[Any], capsys: pytest.CaptureFixture[str]) -> None:
    _tc, ali = clouds
    ali.instances.append(alibaba_instance("i-lost", "cn-hangzhou",
                                          gpuctl_tags("ali-lost", "eeeeeeeeeeee", "2026-01-02T00:00:00Z")))
    code, document, err = reap(capsys, "--yes", "--include-orphaned", "--provider", "alicloud")
    assert code == 0, err
    deletes = [c.params for c in ali.calls if c.action == "DeleteInstances"]
    assert deletes == [{"RegionId": "cn-hangzhou", "InstanceId.1": "i-lost", "Force": "True"}]
    assert {i["InstanceId"] for i in ali.instances} == {"i-live0", "i-untagged"}
    assert sorted(by_name(document)) == ["ali-lost", "live-erdma"]  # --provider alicloud: Tencent's not listed
    assert downs == []


@pytest.mark.usefixtures("home")
def test_no_credentials_exit_7_naming_the_variables_and_still_list_the_state(
        clouds: Clouds, downs: list[Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, document, err = reap(capsys, "--yes")
    assert code == EXIT_MISSING_TOOL
    assert {(g["provider"], g["region"], g["credentials"]) for g in document["unreachable"]} == \
        {("alicloud", "*", True), ("tencentcloud", "*", True)}
    for name in ("TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY", "ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY"):
        assert name in err
    assert sorted(by_name(document)) == ["live-erdma", "old-hcc"]  # from the state alone
    assert clouds[0].calls == []
    assert clouds[1].calls == []
    assert downs == [("tencentcloud", "old-hcc", "ap-shanghai")]  # the state says it expired: down verifies


@pytest.mark.usefixtures("home")
def test_refused_credentials_exit_7_and_name_the_variables(
        clouds: Clouds, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", "AKIDnotAKeyTheFakeKnows0000000000001")
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", "wrong-secret-value-000000000000001")
    code, document, err = reap(capsys, "--provider", "tencentcloud")
    assert code == EXIT_MISSING_TOOL
    assert document["unreachable"][0]["credentials"] is True
    assert "AuthFailure.SecretIdNotFound" in err
    assert "TENCENTCLOUD_SECRET_ID" in err
    assert "wrong-secret-value" not in err + json.dumps(document)


@pytest.mark.usefixtures("home", "login")
def test_a_region_that_fails_is_listed_not_skipped(clouds: Clouds, capsys: pytest.CaptureFixture[str]) -> None:
    tc, _ali = clouds
    tc.faults.append(tencent.Fault("DescribeInstances", code="FailedOperation", message="backend busy", times=1))
    code, document, err = reap(capsys, "--provider", "tencentcloud")
    assert code == EXIT_PROVIDER
    [gap] = document["unreachable"]
    assert (gap["provider"], gap["region"], gap["credentials"]) == ("tencentcloud", "ap-guangzhou", False)
    assert "FailedOperation" in gap["reason"]
    assert document["searched"] == ["tencentcloud/ap-shanghai"]
    assert "could not be searched" in err


@pytest.mark.usefixtures("home", "login")
def test_the_table_has_every_column_and_the_commands(clouds: Clouds, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["reap"])
    out = capsys.readouterr().out
    assert code == 0
    header, *rows = out.splitlines()[:4]
    assert header.split() == ["cluster", "provider", "region", "instances", "created", "expires", "status", "cost",
                              "so", "far"]
    assert rows[0].split() == ["live-erdma", "alicloud", "cn-wulanchabu", "1", "2026-01-01", "00:00:00", "2099-01-01",
                               "00:00:00", "live", "unknown"]  # the catalog has no price for ebmgn7ex
    assert rows[1].split() == ["old-hcc", "tencentcloud", "ap-shanghai", "2", "2026-01-01", "00:00:00",
                               "2026-01-01", "08:00:00", "expired", "458.24", "CNY"]
    assert "dry run: nothing was changed" in out


# --- local state, read without the Pulumi CLI ---------------------------------------------------


@pytest.mark.unit
def test_state_scan_reads_config_and_checkpoint(home: Path) -> None:
    found = {c.name: c for c in local.scan(home, env={})}
    old = found["old-hcc"]
    assert (old.provider, old.region, old.cluster_id, old.owner, old.resources) == \
        ("tencentcloud", "ap-shanghai", "aaaaaaaaaaaa", "infra-team", 2)
    assert (old.created_at, old.expires_at) == (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, 8, tzinfo=UTC))
    assert old.instance_types == ("GT4.4XLARGE96", "GT4.4XLARGE96")


@pytest.mark.unit
def test_a_remote_backend_is_said_not_guessed(tmp_path: Path) -> None:
    write_stack(tmp_path, "remote", "alicloud", "cn-beijing", "ffffffffffff", created="2026-01-01T00:00:00Z",
                expires=None, types=[])
    [cluster] = local.scan(tmp_path, env={"GPUCTL_PULUMI_BACKEND": "s3://team-bucket/gpuctl"})
    assert (cluster.expires_at, cluster.resources) == (None, None)
    assert cluster.notes == ("the stack lives in a remote backend (GPUCTL_PULUMI_BACKEND); its outputs were not read",)


@pytest.mark.unit
def test_another_cluster_id_of_the_same_name_is_an_orphan_not_this_cluster(home: Path) -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    theirs = CloudInstance("tencentcloud", "ap-shanghai", "ins-theirs", "x", "GT4.4XLARGE96", None,
                           gpuctl_tags("old-hcc", "999999999999", "2099-01-01T00:00:00Z", owner="other-team"))
    clusters = classify(local.scan(home, env={}), [theirs], now)
    assert [(c.name, c.status, c.cluster_id, [i.id for i in c.instances]) for c in clusters] == [
        ("live-erdma", "live", "bbbbbbbbbbbb", []),
        ("old-hcc", "expired", "aaaaaaaaaaaa", []),
        ("old-hcc", "orphaned", "999999999999", ["ins-theirs"]),
    ]
