"""`gpuctl reap` against the fake Tencent and Alibaba APIs on loopback and a real-shaped gpuctl home."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.fake_cloud import alibaba, tencent
from tests.reap.conftest import REPO, alibaba_instance, gpuctl_tags, tencent_instance, write_stack
from toolkit.cli import main
from toolkit.errors import EXIT_MISSING_TOOL, EXIT_PROVIDER
from toolkit.providers import cloud_api
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


# --- each instance judged by its own tags (issue 20, item 1) ------------------------------------


@pytest.mark.usefixtures("home", "login")
def test_an_orphan_releases_only_its_expired_instances_never_a_live_or_unreadable_neighbour(
        clouds: Clouds, downs: list[Any], capsys: pytest.CaptureFixture[str]) -> None:
    tc, _ali = clouds
    # One orphaned cluster (same name and id), three nodes: expired, expiring in 2099, unreadable expiry.
    for id_, expires in (("ins-mix-old", "2026-01-01T00:00:00Z"), ("ins-mix-new", "2099-01-01T00:00:00Z"),
                         ("ins-mix-bad", "soon"), ("ins-mix-far", "9999-12-31T23:59:59Z")):
        tc.instances.append(tencent_instance(id_, "ap-guangzhou-3", gpuctl_tags("mixed", "dddddddddddd", expires)))
    code, document, err = reap(capsys, "--yes", "--include-orphaned", "--provider", "tencentcloud")
    assert code == 0, err
    released = sorted(i for c in release_calls(clouds) for i in c.params["InstanceIds"])
    assert released == ["ins-lost", "ins-mix-old"]
    assert {"ins-mix-new", "ins-mix-bad", "ins-mix-far"} <= {i["InstanceId"] for i in tc.instances}
    row = by_name(document)["mixed"]
    assert (row["status"], row["expired"], row["expires_at"]) == ("orphaned", None, None)  # unknown: never "expired"
    assert row["action"] == "released 1 instance(s)"


@pytest.mark.usefixtures("home", "login")
def test_a_dry_run_says_which_instances_it_would_leave(clouds: Clouds, capsys: pytest.CaptureFixture[str]) -> None:
    tc, _ali = clouds
    tc.instances.append(tencent_instance("ins-mix-old", "ap-guangzhou-3",
                                         gpuctl_tags("mixed", "dddddddddddd", "2026-01-01T00:00:00Z")))
    tc.instances.append(tencent_instance("ins-mix-new", "ap-guangzhou-3",
                                         gpuctl_tags("mixed", "dddddddddddd", "2099-01-01T00:00:00Z")))
    code, document, _err = reap(capsys, "--include-orphaned", "--provider", "tencentcloud")
    assert code == 0
    row = by_name(document)["mixed"]
    assert (row["expired"], row["expires_at"]) == (False, "2099-01-01T00:00:00Z")  # the latest of its own tags
    assert row["action"] == ("would release (dry run; --yes to do it) 1 instance(s) through the cloud API; 1 other(s) "
                             "left alone: not past their own expiry, or without gpuctl's tags")
    assert release_calls(clouds) == []


# --- bounded paging and time (issue 20, item 7) -------------------------------------------------


def fast(**changes: Any) -> Any:
    """Short bounds for the tests (the production ones are cloud_api.LIMITS as shipped)."""
    return replace(cloud_api.Limits(timeout_s=0.2, retry=cloud_api.RetryPolicy(tries=2, base_s=0.0, cap_s=0.0),
                                    deadline_s=30.0, max_pages=5, max_items=400), **changes)


@pytest.mark.usefixtures("home", "login")
@pytest.mark.parametrize(("provider", "mode", "items", "why"), [
    ("tencentcloud", "first-page", 400, "the API answered a page it had already given (it does not advance)"),
    ("tencentcloud", "fresh", 1000, "more than 5 pages (gpuctl's cap per list)"),
    ("alicloud", "same-token", 400, "the API answered a page it had already given (it does not advance)"),
    ("alicloud", "fresh", 250, "more than 250 items (gpuctl's cap per list)"),
])
def test_a_list_that_never_ends_stops_and_names_its_regions(
        provider: str, mode: str, items: int, why: str, clouds: Clouds, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cloud_api, "LIMITS", fast(max_items=items))
    tc, ali = clouds
    cloud: Any = tc if provider == "tencentcloud" else ali
    cloud.paging = mode
    code, document, err = reap(capsys, "--provider", provider)
    assert code == EXIT_PROVIDER
    regions = sorted(g["region"] for g in document["unreachable"])
    assert regions == (["ap-guangzhou", "ap-shanghai"] if provider == "tencentcloud"
                       else ["cn-hangzhou", "cn-wulanchabu"])
    assert all(why in g["reason"] and "so the list was not finished" in g["reason"] for g in document["unreachable"])
    assert document["searched"] == []
    assert len(cloud.actions("DescribeInstances")) <= 2 * 5  # at most the page cap, per region
    assert "could not be searched" in err


@pytest.mark.usefixtures("home", "login")
def test_a_dead_slow_api_gets_each_region_its_share_of_the_budget_and_names_every_one(
        clouds: Clouds, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Nine regions that never answer in time: the command still ends within its budget, and each
    region was asked within its share (none left unasked because the first ones spent it all)."""
    import time

    monkeypatch.setattr(cloud_api, "LIMITS", fast(deadline_s=2.0))
    tc, _ali = clouds
    tc.regions = [f"ap-slow-{n}" for n in range(8)]
    tc.faults.append(tencent.Fault("DescribeInstances", delay_s=0.5, times=100))
    started = time.monotonic()
    code, document, _err = reap(capsys, "--provider", "tencentcloud")
    assert time.monotonic() - started < 4.0  # the 2 s budget and the last try's grace, not 9 x 2 tries x 0.5 s
    assert code == EXIT_PROVIDER
    gaps = {g["region"]: g["reason"] for g in document["unreachable"]}
    assert sorted(gaps) == sorted([*tc.regions, "ap-shanghai"])  # the state's region is asked too
    assert any("did not answer (ClientNetworkError)" in reason for reason in gaps.values())
    assert all("did not answer (ClientNetworkError)" in reason for reason in gaps.values()), gaps
    assert not [r for r, reason in gaps.items() if "not asked" in reason]
    assert len(tc.actions("DescribeInstances")) >= 9


@pytest.mark.usefixtures("home", "login")
def test_an_answer_that_drips_a_byte_at_a_time_is_bounded_by_the_budget(
        clouds: Clouds, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Each read of the socket gets a byte in time, so the SDK's own timeout never fires: the command's
    budget bounds the whole answer (a try runs in a thread the caller stops waiting for)."""
    import time

    monkeypatch.setattr(cloud_api, "LIMITS", fast(deadline_s=1.0))
    tc, _ali = clouds
    tc.faults.append(tencent.Fault("DescribeRegions", drip_s=0.05, times=100))  # ~1,000 bytes: ~50 s
    started = time.monotonic()
    code, document, _err = reap(capsys, "--provider", "tencentcloud")
    assert time.monotonic() - started < 4.0
    assert code == EXIT_PROVIDER
    gaps = {g["region"]: g["reason"] for g in document["unreachable"]}
    assert "no whole answer within" in gaps["*"]


def test_a_share_is_a_fair_part_of_what_is_left_and_says_whose_it_is() -> None:
    from toolkit.providers.tencentcloud.sdk import Credentials, TencentApi

    now = [0.0]
    budget = cloud_api.Budget(90.0, clock=lambda: now[0])
    first = budget.share(3)
    assert first.remaining() == 30.0
    now[0] = 5.0  # the first region answered in 5 s: the 25 s it left go to the two after it
    assert budget.share(2).remaining() == 42.5
    now[0] = 200.0
    assert (first.spent, budget.share(1).remaining()) == (True, 0.0)
    api = TencentApi("ap-guangzhou", Credentials("AKIDx" * 4, "secret" * 4), budget=first)
    assert api._budget_words() == "this region's share (30 s) of the command's 90 s budget"
    api.budget = budget
    assert api._budget_words() == "the command's 90 s budget"


def test_the_budget_refuses_a_wait_it_cannot_afford() -> None:
    from toolkit.providers.tencentcloud.sdk import Credentials, TencentApi

    now = [0.0]
    budget = cloud_api.Budget(10.0, clock=lambda: now[0])
    waited: list[float] = []
    api = TencentApi("ap-guangzhou", Credentials("AKIDx" * 4, "secret" * 4), retry=cloud_api.RetryPolicy(
        tries=5, base_s=100.0, cap_s=100.0), sleep=waited.append, budget=budget)
    tries: list[int] = []

    def attempt() -> cloud_api.Failure:
        tries.append(1)
        now[0] += 1.0
        return cloud_api.Failure("RequestLimitExceeded", "slow down")

    with pytest.raises(cloud_api.ApiError) as caught:
        api.retried(attempt, action="DescribeInstances", safe=True)
    assert len(tries) <= 2
    assert all(w < 9.0 for w in waited)  # no wait past the budget's end
    assert "no time left in the command's 10 s budget for another try" in caught.value.message
    now[0] = 11.0
    with pytest.raises(cloud_api.ApiError) as caught:
        api.retried(attempt, action="DescribeInstances", safe=True)
    assert caught.value.code == "gpuctl.DeadlineExceeded"
    assert len(tries) <= 2  # the call after the budget ran out was never sent


# --- messages (issue 20, item 11) ---------------------------------------------------------------


@pytest.mark.usefixtures("home", "login")
def test_reap_yes_without_the_pulumi_cli_blames_the_tool_not_the_credentials(
        clouds: Clouds, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "gpuctl-test-passphrase")
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)  # no `pulumi` on PATH
    code, document, err = reap(capsys, "--yes", "--provider", "tencentcloud")
    assert code == EXIT_MISSING_TOOL
    [failure] = document["failures"]
    assert failure.startswith("old-hcc (tencentcloud): down failed: old-hcc: ")
    assert "the Pulumi CLI is not installed" in failure
    assert "no usable credentials" not in err
    assert "a tool `down` needs is missing, not a credential" in err


@pytest.mark.usefixtures("home", "login")
@pytest.mark.parametrize(("provider", "body", "words"), [
    ("tencentcloud", b"", "Tencent Cloud DescribeInstances in ap-guangzhou: HTTP 500 Internal Server Error; "
                          "the body was empty after 2 tries"),
    ("tencentcloud", b"<html>oops</html>", "Tencent Cloud DescribeInstances in ap-guangzhou: HTTP 500 Internal Server "
                                           "Error; the body began '<html>oops</html>' after 2 tries"),
    ("alicloud", b'{"Message": "busy"}', "Alibaba Cloud DescribeInstances in cn-hangzhou: HTTP 500; the body began "
                                        "'busy' after 2 tries"),
    ("alicloud", b"<html>oops</html>", "Alibaba Cloud DescribeInstances in cn-hangzhou: the answer was not the API's: "
                                       "not JSON (an HTTP error page or a proxy's answer? the SDK does not keep the "
                                       "status of such an answer); the body began '<html>oops</html>' after 2 tries"),
])
def test_an_http_500_names_the_status_the_region_and_the_action(
        provider: str, body: bytes, words: str, clouds: Clouds, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cloud_api, "LIMITS", fast())
    tc, ali = clouds
    if provider == "tencentcloud":
        tc.faults.append(tencent.Fault("DescribeInstances", status=500, body=body, content_type="text/html", times=2))
        region = "ap-guangzhou"
    else:
        ali.faults.append(alibaba.Fault("DescribeInstances", status=500, body=body, times=2))
        region = "cn-hangzhou"
    code, document, _err = reap(capsys, "--provider", provider)
    assert code == EXIT_PROVIDER
    gap = next(g for g in document["unreachable"] if g["region"] == region)
    assert gap["reason"] == words
    assert "RuntimeError" not in json.dumps(document)


# --- region ids: Alibaba's SDK puts them in the endpoint's host name ----------------------------


@pytest.mark.usefixtures("login")
def test_a_region_from_the_state_that_is_no_region_id_is_never_asked(
        clouds: Clouds, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _tc, ali = clouds
    write_stack(tmp_path / "home", "odd", "alicloud", "x.attacker.example/", "abababababab",
                created="2026-01-01T00:00:00Z", expires="2026-01-01T08:00:00Z", types=[])
    code, document, _err = reap(capsys, "--provider", "alicloud")
    assert code == 0
    row = by_name(document)["odd"]
    assert row["region"] is None
    assert row["notes"] == ["the stack config's region 'x.attacker.example/' is not a region id: that region is "
                            "not searched"]
    assert {c.params.get("RegionId") for c in ali.calls} <= {None, "cn-hangzhou", "cn-wulanchabu"}


@pytest.mark.parametrize("region", ["x.attacker.example/", "cn-hangzhou#", "CN-HANGZHOU", "", "cn-" + "a" * 61])
def test_no_api_is_made_for_a_region_that_is_no_region_id(region: str) -> None:
    from toolkit.errors import UsageError
    from toolkit.providers.alicloud.sdk import AlibabaApi, Credentials

    with pytest.raises(UsageError) as caught:
        AlibabaApi(region, Credentials("LTAI5tGpuctlReapKey001", "gpuctlFakeAlibabaReapSecret00001"))
    assert "is not a region id such as cn-beijing or ap-shanghai; gpuctl asks no API about it" in caught.value.message


@pytest.mark.usefixtures("home", "login")
def test_reap_refuses_a_region_option_that_is_no_region_id(clouds: Clouds, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reap", "--region", "cn-hangzhou.evil.example"]) == 2
    assert "--region 'cn-hangzhou.evil.example' is not a region id" in capsys.readouterr().err
    assert clouds[0].calls == []
    assert clouds[1].calls == []
