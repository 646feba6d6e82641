"""`gpuctl reap` as a RAM user / CAM sub-user with the shipped policies attached (tests/fake_cloud/
decides every request against them), and the fakes reporting an instance the cloud already released.

docs/security.md: reap's dry run needs the read-only policy on Alibaba, `--yes --include-orphaned`
the up/down one; on Tencent the one CAM policy does both. A release is allowed only on instances that
carry gpuctl's `gpuctl:managed-by` tag, and a missing action makes reap exit 7 naming it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fake_cloud import alibaba, tencent
from tests.providers.policy_mocks import READONLY, UP_DOWN, shipped, without
from tests.reap.conftest import ALI_ID, TC_ID, alibaba_instance, gpuctl_tags
from toolkit.cli import main
from toolkit.errors import EXIT_MISSING_TOOL
from toolkit.providers.alicloud import sdk as alibaba_sdk
from toolkit.providers.tencentcloud import sdk as tencent_sdk

pytestmark = pytest.mark.fake_cloud
Clouds = tuple[tencent.FakeTencentCloud, alibaba.FakeAlibabaCloud]


def reap(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(["reap", "--json", *argv])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def refused(clouds: Clouds) -> list[str]:
    refusals = ("Forbidden.RAM", "AuthFailure.UnauthorizedOperation")
    return [c.action for c in clouds[0].calls if c.answered in refusals] + \
        [c.action for c in clouds[1].calls if c.answered in refusals]


@pytest.mark.usefixtures("home", "login")
def test_a_dry_run_succeeds_under_the_readonly_and_cam_policies(
        clouds: Clouds, capsys: pytest.CaptureFixture[str]) -> None:
    tc, ali = clouds
    tc.policies[TC_ID] = [shipped(UP_DOWN["tencentcloud"])]
    ali.policies[ALI_ID] = [shipped(READONLY)]
    code, document, err = reap(capsys)
    assert code == 0, err
    assert sorted(row["cluster"] for row in document["clusters"]) == ["live-erdma", "lost", "old-hcc"]
    assert refused(clouds) == []


@pytest.mark.usefixtures("home", "login", "downs")
def test_include_orphaned_releases_under_the_up_down_policies(
        clouds: Clouds, capsys: pytest.CaptureFixture[str]) -> None:
    tc, ali = clouds
    ali.instances.append(alibaba_instance("i-lost", "cn-hangzhou",
                                          gpuctl_tags("ali-lost", "eeeeeeeeeeee", "2026-01-02T00:00:00Z")))
    tc.policies[TC_ID] = [shipped(UP_DOWN["tencentcloud"])]
    ali.policies[ALI_ID] = [shipped(UP_DOWN["alicloud"])]
    code, document, err = reap(capsys, "--yes", "--include-orphaned")
    assert code == 0, err
    assert sorted(document["released"]) == ["i-lost", "ins-lost"]
    assert refused(clouds) == []


@pytest.mark.usefixtures("home", "login", "downs")
def test_a_release_the_readonly_policy_does_not_allow_exits_7_naming_the_action(
        clouds: Clouds, capsys: pytest.CaptureFixture[str]) -> None:
    _tc, ali = clouds
    ali.instances.append(alibaba_instance("i-lost", "cn-hangzhou",
                                          gpuctl_tags("ali-lost", "eeeeeeeeeeee", "2026-01-02T00:00:00Z")))
    ali.policies[ALI_ID] = [shipped(READONLY)]
    code, document, err = reap(capsys, "--yes", "--include-orphaned", "--provider", "alicloud")
    assert code == EXIT_MISSING_TOOL
    assert "no usable credentials for a cloud: a `down` or release was refused them" in err
    [failure] = document["failures"]
    assert failure.startswith("ali-lost (alicloud cn-hangzhou): release of i-lost failed: Alibaba Cloud refused the "
                              "credentials "
                              "(Forbidden.RAM): the RAM user may not call ecs:DeleteInstances")
    assert document["released"] == []
    assert "i-lost" in {i["InstanceId"] for i in ali.instances}
    assert refused(clouds) == ["DeleteInstances"]


@pytest.mark.usefixtures("home", "login", "downs")
def test_the_up_down_policy_refuses_to_release_an_instance_without_gpuctls_tag(clouds: Clouds) -> None:
    """The tag condition, as the cloud applies it: the same key cannot release a neighbour's node."""
    tc, ali = clouds
    tc.policies[TC_ID] = [shipped(UP_DOWN["tencentcloud"])]
    ali.policies[ALI_ID] = [shipped(UP_DOWN["alicloud"])]
    tc_api = tencent_sdk.connect("ap-shanghai", retry=tencent_sdk.RetryPolicy(tries=1))
    with pytest.raises(tencent_sdk.ApiError) as caught:
        tc_api.call("cvm", "TerminateInstances", {"InstanceIds": ["ins-untagged"]})
    assert caught.value.code == "AuthFailure.UnauthorizedOperation"
    assert "(cvm:TerminateInstances)\nresource (qcs::cvm:ap-shanghai:uin/100000000001:instance/ins-untagged)" in \
        caught.value.api_message
    from alibabacloud_ecs20140526 import models

    ali_api = alibaba_sdk.connect("cn-wulanchabu", retry=alibaba_sdk.RetryPolicy(tries=1))
    with pytest.raises(alibaba_sdk.ApiError) as refused_ali:
        ali_api.call("DeleteInstances", models.DeleteInstancesRequest(
            region_id="cn-wulanchabu", instance_id=["i-untagged"], force=True))
    assert refused_ali.value.code == "Forbidden.RAM"
    assert {i["InstanceId"] for i in ali.instances} == {"i-live0", "i-untagged"}
    assert len(tc.instances) == 4


@pytest.mark.usefixtures("home", "login")
def test_a_missing_list_action_exits_7_naming_it(clouds: Clouds, capsys: pytest.CaptureFixture[str]) -> None:
    tc, _ali = clouds
    tc.policies[TC_ID] = [without(shipped(UP_DOWN["tencentcloud"]), "cvm:DescribeRegions")]
    code, document, err = reap(capsys, "--provider", "tencentcloud")
    assert code == EXIT_MISSING_TOOL
    assert "the key may not call DescribeRegions (CAM)" in err
    assert document["unreachable"][0]["credentials"] is True
    assert refused(clouds) == ["DescribeRegions"]


@pytest.mark.usefixtures("login")
def test_the_fakes_report_an_instance_the_cloud_already_released(clouds: Clouds) -> None:
    """After a TTL release or a spot reclaim: listed no more, and a release answers NotFound."""
    from alibabacloud_ecs20140526 import models

    tc, ali = clouds
    tc.release("ins-old0")
    ali.release("i-live0")
    tc_api = tencent_sdk.connect("ap-shanghai", retry=tencent_sdk.RetryPolicy(tries=1))
    answer = tc_api.call("cvm", "DescribeInstances", {"InstanceIds": ["ins-old0"]})
    assert (answer["TotalCount"], answer["InstanceSet"]) == (0, [])
    with pytest.raises(tencent_sdk.ApiError) as gone:
        tc_api.call("cvm", "TerminateInstances", {"InstanceIds": ["ins-old0"]})
    assert gone.value.code == "InvalidInstanceId.NotFound"
    ali_api = alibaba_sdk.connect("cn-wulanchabu", retry=alibaba_sdk.RetryPolicy(tries=1))
    body = ali_api.call("DescribeInstances", models.DescribeInstancesRequest(
        region_id="cn-wulanchabu", instance_ids=json.dumps(["i-live0"])))
    assert (body["TotalCount"], body["Instances"]["Instance"]) == (0, [])
    with pytest.raises(alibaba_sdk.ApiError) as ali_gone:
        ali_api.call("DeleteInstances", models.DeleteInstancesRequest(
            region_id="cn-wulanchabu", instance_id=["i-live0"], force=True))
    assert ali_gone.value.code == "InvalidInstanceId.NotFound"
