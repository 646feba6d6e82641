"""The Pulumi mocks' read-after-create step (tests/providers/pulumi_mocks.py): a mocked `up` under a
policy fails on the first call that policy does not allow, naming the resource and the action, as
the provider would after the cloud refused it; under the shipped policy it succeeds.

Each case takes one action out of the shipped policy: the ones issue 21 found missing (the RAM role's
ram:ListTagResources, the Tencent instance's cbs:DescribeDisks and cvm:DescribeInstancesAttributes,
the CAM role's cam:DescribeRoleList), and one a resource-level grant must not narrow.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.providers import alicloud_mocks, tencent_mocks
from tests.providers.policy_mocks import UP_DOWN, PermissionRefused, shipped, without

pytestmark = pytest.mark.pulumi_mock

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def _up(cloud: str, example: str, action: str | None) -> None:
    policy = shipped(UP_DOWN[cloud])
    policies = [without(policy, action) if action else policy]
    path = EXAMPLES / example
    if cloud == "alicloud":
        alicloud_mocks.build_graph(alicloud_mocks.spec_args(path), policies=policies)
    else:
        tencent_mocks.build_graph(tencent_mocks.spec_args(path), policies=policies)


@pytest.mark.parametrize(("cloud", "example"), [
    ("alicloud", "alicloud-erdma-2x8.yaml"), ("alicloud", "single-gpu-lora.yaml"),
    ("tencentcloud", "tencentcloud-hcc-2x8.yaml"), ("tencentcloud", "tencentcloud-gt4-spot.yaml"),
])
def test_a_mocked_up_under_the_shipped_policy_succeeds(cloud: str, example: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    _up(cloud, example, None)


@pytest.mark.parametrize(("cloud", "example", "action", "resource"), [
    ("alicloud", "alicloud-erdma-2x8.yaml", "ram:ListTagResources", "alicloud:ram/role:Role erdma-a100-node-role"),
    ("alicloud", "alicloud-erdma-2x8.yaml", "ram:PassRole",
     "alicloud:ecs/ramRoleAttachment:RamRoleAttachment erdma-a100-gpu-[01]-role"),
    ("alicloud", "single-gpu-lora.yaml", "ecs:DescribeInstanceAttachmentAttributes",
     "alicloud:ecs/instance:Instance lora-box-gpu-0"),
    ("tencentcloud", "tencentcloud-gt4-spot.yaml", "cbs:DescribeDisks",
     "tencentcloud:Instance/instance:Instance gt4-spot-gpu-[01]"),
    ("tencentcloud", "tencentcloud-gt4-spot.yaml", "cvm:DescribeInstancesAttributes",
     "tencentcloud:Instance/instance:Instance gt4-spot-gpu-[01]"),
    ("tencentcloud", "tencentcloud-hcc-2x8.yaml", "cam:DescribeRoleList",
     "tencentcloud:Cam/role:Role hcc-v100-node-role"),
])
def test_one_action_taken_out_fails_the_mocked_up_naming_it(cloud: str, example: str, action: str, resource: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(PermissionRefused) as caught:
        _up(cloud, example, action)
    refusal = "Forbidden.RAM" if cloud == "alicloud" else "AuthFailure.UnauthorizedOperation"
    # Registrations run on a thread pool: whichever node comes first is named.
    assert re.match(f"{re.escape(refusal)}: {resource}: ", str(caught.value)), str(caught.value)
    assert f" calls {action}" in str(caught.value)
    assert str(caught.value).endswith("no statement allows it")
