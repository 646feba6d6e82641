"""reap --include-orphaned on Tencent: one TerminateInstances per charge type, PREPAID terminated twice.

TerminateInstances (tencentcloud-sdk-python-cvm 3.1.178 cvm_client.py:2658-2666): "批量操作时，所有实例的
付费类型必须一致" (one batch, one charge type), and "包年包月实例首次调用本接口，实例将被移至回收站，再次调用本接口，
实例将被销毁" (a PREPAID instance goes to the recycle bin first, SHUTDOWN, and is destroyed by a second call).
The fake (tests/fake_cloud/tencent.py) refuses a mixed batch and keeps a once-terminated PREPAID instance.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fake_cloud import alibaba, tencent
from tests.reap.conftest import gpuctl_tags, tencent_instance
from toolkit.cli import main

pytestmark = pytest.mark.fake_cloud
Clouds = tuple[tencent.FakeTencentCloud, alibaba.FakeAlibabaCloud]
EXPIRED = "2026-01-01T00:00:00Z"


def orphan(id_: str, charge: str) -> dict[str, Any]:
    instance = tencent_instance(id_, "ap-guangzhou-3", gpuctl_tags("billed", "eeeeeeeeeeee", EXPIRED))
    instance["InstanceChargeType"] = charge
    return instance


def reap(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(["reap", "--json", "--provider", "tencentcloud", *argv])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def terminates(tc: tencent.FakeTencentCloud) -> list[tuple[list[str], str]]:
    return [(list(c.params["InstanceIds"]), c.answered) for c in tc.actions("TerminateInstances")]


@pytest.fixture
def mixed(clouds: Clouds) -> tencent.FakeTencentCloud:
    tc, _ali = clouds
    tc.instances += [orphan("ins-hour0", "POSTPAID_BY_HOUR"), orphan("ins-month0", "PREPAID"),
                     orphan("ins-hour1", "POSTPAID_BY_HOUR"), orphan("ins-spot0", "SPOTPAID"),
                     orphan("ins-month1", "PREPAID")]
    return tc


@pytest.mark.usefixtures("home", "login")
def test_each_batch_has_one_charge_type_and_prepaid_is_terminated_twice(
        mixed: tencent.FakeTencentCloud, downs: list[Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, document, err = reap(capsys, "--yes", "--include-orphaned")
    assert code == 0, err
    billed = [call for call in terminates(mixed) if call[0] != ["ins-lost"]]
    assert billed == [
        (["ins-hour0", "ins-hour1"], "ok"),
        (["ins-month0", "ins-month1"], "ok"),  # to the recycle bin (SHUTDOWN)
        (["ins-month0", "ins-month1"], "ok"),  # destroyed
        (["ins-spot0"], "ok"),
    ]
    # Between the two PREPAID terminates: the recycle bin is awaited on the two instances only.
    assert [c.params for c in mixed.actions("DescribeInstances") if "InstanceIds" in c.params] == [
        {"InstanceIds": ["ins-month0", "ins-month1"], "Limit": 2}]
    left = {i["InstanceId"] for i in mixed.instances}
    assert left.isdisjoint({"ins-hour0", "ins-hour1", "ins-month0", "ins-month1", "ins-spot0"})
    assert sorted(document["released"]) == ["ins-hour0", "ins-hour1", "ins-lost", "ins-month0", "ins-month1",
                                            "ins-spot0"]


@pytest.mark.usefixtures("home", "login")
def test_one_refused_batch_is_named_and_the_other_charge_types_are_still_released(
        mixed: tencent.FakeTencentCloud, downs: list[Any], capsys: pytest.CaptureFixture[str]) -> None:
    # The API refuses the first batch of the cluster (its pay-as-you-go one, the first in order).
    mixed.faults.append(tencent.Fault("TerminateInstances", code="InvalidInstanceNotSupportedPrepaidInstance",
                                      message="refused for the test", times=1))
    code, document, _err = reap(capsys, "--yes", "--include-orphaned")
    assert code == 6  # a release failed: a provider error, named
    assert "ins-spot0" in document["released"]
    assert {"ins-month0", "ins-month1"} <= set(document["released"])
    failures = " ".join(document["failures"])
    assert "release of ins-hour0, ins-hour1 failed" in failures
    assert "InvalidInstanceNotSupportedPrepaidInstance" in failures


@pytest.mark.usefixtures("home", "login")
def test_the_commands_to_remove_it_by_hand_are_one_per_charge_type(
        mixed: tencent.FakeTencentCloud, capsys: pytest.CaptureFixture[str]) -> None:
    code, document, _err = reap(capsys)
    assert code == 0
    [row] = [r for r in document["clusters"] if r["cluster"] == "billed"]
    assert row["commands"][1:] == [
        """tccli cvm TerminateInstances --region ap-guangzhou --InstanceIds '["ins-hour0", "ins-hour1"]'""",
        """tccli cvm TerminateInstances --region ap-guangzhou --InstanceIds '["ins-month0", "ins-month1"]'"""
        "  # PREPAID: run it again once they show SHUTDOWN (the recycle bin)",
        """tccli cvm TerminateInstances --region ap-guangzhou --InstanceIds '["ins-spot0"]'""",
    ]


@pytest.mark.usefixtures("home", "login")
def test_a_prepaid_instance_gone_before_the_second_terminate_counts_as_released(
        mixed: tencent.FakeTencentCloud, downs: list[Any], capsys: pytest.CaptureFixture[str]) -> None:
    # Tencent destroys the recycled PREPAID instances between the wait and the second terminate: that
    # one answers InvalidInstanceId.NotFound, which is what it was for.
    def destroyed_once_recycled(response: dict[str, Any]) -> Any:
        items = response.get("InstanceSet") or []
        if items and all(i.get("InstanceState") == "SHUTDOWN" for i in items):
            gone = {i["InstanceId"] for i in items}
            mixed.instances[:] = [i for i in mixed.instances if i["InstanceId"] not in gone]
            return {**response, "InstanceSet": [], "TotalCount": 0}
        return response

    mixed.faults.append(tencent.Fault("DescribeInstances", reshape=destroyed_once_recycled, times=10))
    code, document, err = reap(capsys, "--yes", "--include-orphaned")
    assert code == 0, err
    assert (["ins-month0", "ins-month1"], "InvalidInstanceId.NotFound") in terminates(mixed)
    assert {"ins-month0", "ins-month1"} <= set(document["released"])
    assert document["failures"] == []
