"""toolkit.providers.policy: RAM and CAM documents decided the way each cloud documents it.

Each case is a small document and a request, with the decision written out; the rules and their
sources are the module's docstring.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolkit.errors import EXIT_PARSE
from toolkit.providers.policy import PolicyError, Request, decide, parse
from toolkit.providers.policy_scope import Target, request

pytestmark = pytest.mark.unit

INSTANCE = "acs:ecs:cn-beijing:1234567890123456:instance/i-1"


def ram(*statements: dict[str, Any]) -> Any:
    return parse({"Version": "1", "Statement": list(statements)}, "alicloud", name="t.json")


def cam(*statements: dict[str, Any]) -> Any:
    return parse({"version": "2.0", "statement": list(statements)}, "tencentcloud", name="t.json")


def allows(policy: Any, action: str, resource: str = "*", context: dict[str, tuple[str, ...]] | None = None) -> bool:
    return bool(policy.decide(Request(action, (resource,), context or {})).allowed)


def test_nothing_is_allowed_by_default_and_an_explicit_deny_wins() -> None:
    allow = {"Effect": "Allow", "Action": "ecs:*", "Resource": "*"}
    deny = {"Effect": "Deny", "Action": "ecs:DeleteInstance", "Resource": "*"}
    assert not allows(ram({"Effect": "Allow", "Action": "vpc:CreateVpc", "Resource": "*"}), "ecs:RunInstances")
    policy = ram(allow, deny)
    assert allows(policy, "ecs:RunInstances")
    decision = policy.decide(Request("ecs:DeleteInstance"))
    assert (decision.allowed, decision.why) == (False, "denied by t.json statement 1")
    # Across attached policies too: a deny in one beats an allow in another.
    assert not decide([ram(allow), ram(deny)], Request("ecs:DeleteInstance")).allowed
    assert decide([ram(allow), ram(deny)], Request("ecs:StopInstance")).why == "allowed by t.json statement 0"


def test_wildcards_match_runs_and_single_characters() -> None:
    policy = ram({"Effect": "Allow", "Action": ["ecs:Describe*", "vpc:?reateVpc"], "Resource": "*"})
    assert allows(policy, "ecs:DescribeInstances")
    assert allows(policy, "ecs:Describe")  # * matches nothing too
    assert allows(policy, "vpc:CreateVpc")
    assert not allows(policy, "vpc:ReCreateVpc")
    assert not allows(policy, "ecs:RunInstances")


def test_ram_actions_ignore_case_resources_do_not() -> None:
    policy = ram({"Effect": "Allow", "Action": "ecs:deleteinstance", "Resource": "acs:ecs:*:*:instance/i-1"})
    assert allows(policy, "ecs:DeleteInstance", INSTANCE)
    assert not allows(policy, "ecs:DeleteInstance", INSTANCE.upper())


def test_cam_actions_are_compared_exactly_and_may_carry_name_slash() -> None:
    policy = cam({"effect": "allow", "action": ["name/cvm:RunInstances"], "resource": ["*"]})
    assert allows(policy, "cvm:RunInstances")
    assert not allows(policy, "cvm:runinstances")


def test_not_action_matches_everything_it_does_not_list() -> None:
    policy = ram({"Effect": "Allow", "NotAction": "ram:*", "Resource": "*"})
    assert allows(policy, "ecs:RunInstances")
    assert not allows(policy, "ram:PassRole")


def test_an_action_authorized_on_all_resources_needs_a_statement_on_all() -> None:
    scoped = ram({"Effect": "Allow", "Action": "ram:ListTagResources", "Resource": "acs:ram:*:*:role/gpuctl-*"})
    assert not allows(scoped, "ram:ListTagResources")  # the request names `*`
    assert allows(scoped, "ram:ListTagResources", "acs:ram::1234567890123456:role/gpuctl-x")
    assert allows(ram({"Effect": "Allow", "Action": "ram:ListTagResources", "Resource": "*"}), "ram:ListTagResources")


def test_every_resource_of_a_request_must_be_allowed() -> None:
    policy = ram({"Effect": "Allow", "Action": "ram:AttachPolicyToRole", "Resource": "acs:ram:*:*:role/gpuctl-*"})
    both = Request("ram:AttachPolicyToRole", ("acs:ram::1:role/gpuctl-a", "acs:ram::1:policy/gpuctl-a"))
    decision = policy.decide(both)
    assert (decision.allowed, decision.resource) == (False, "acs:ram::1:policy/gpuctl-a")


def test_ram_conditions_and_between_keys_or_between_values() -> None:
    policy = ram({"Effect": "Allow", "Action": "ecs:DeleteInstance", "Resource": "*", "Condition": {
        "StringEquals": {"acs:ResourceTag/team": ["a", "b"], "acs:ResourceTag/managed": "gpuctl"}}})
    assert allows(policy, "ecs:DeleteInstance", INSTANCE, context={"acs:ResourceTag/team": ("b",),
                                                            "acs:ResourceTag/managed": ("gpuctl",)})
    assert not allows(policy, "ecs:DeleteInstance", INSTANCE, context={"acs:ResourceTag/team": ("b",)})
    assert not allows(policy, "ecs:DeleteInstance", INSTANCE, context={"acs:ResourceTag/team": ("c",),
                                                                "acs:ResourceTag/managed": ("gpuctl",)})


@pytest.mark.parametrize(("operator", "value", "context", "expected"), [
    ("StringEquals", "Gpuctl", ("gpuctl",), False),
    ("StringEqualsIgnoreCase", "Gpuctl", ("gpuctl",), True),
    ("StringNotEquals", "other", ("gpuctl",), True),
    ("StringNotEqualsIgnoreCase", "GPUCTL", ("gpuctl",), False),
    ("StringLike", "gpu*", ("gpuctl",), True),
    ("StringNotLike", "gpu?", ("gpuctl",), True),
    ("StringNotEquals", "other", None, True),  # an absent key: a negated operator holds
    ("StringEquals", "gpuctl", None, False),  # ... a positive one fails
    ("Bool", True, ("true",), True),
])
def test_ram_operators(operator: str, value: Any, context: tuple[str, ...] | None, expected: bool) -> None:
    policy = ram({"Effect": "Allow", "Action": "ecs:StopInstance", "Resource": "*",
                  "Condition": {operator: {"k": value}}})
    assert allows(policy, "ecs:StopInstance", context=({"k": context} if context else {})) is expected


def test_cam_resource_tag_conditions_take_a_set_qualifier() -> None:
    condition = {"for_any_value:string_equal": {"qcs:resource_tag": ["gpuctl:managed-by&gpuctl"]}}
    policy = cam({"effect": "allow", "action": ["cvm:TerminateInstances"], "resource": ["*"], "condition": condition})
    ours = ("gpuctl:cluster&a", "gpuctl:managed-by&gpuctl")
    assert allows(policy, "cvm:TerminateInstances", "qcs::cvm:ap-shanghai:uin/1:instance/ins-1",
                  context={"qcs:resource_tag": ours})
    assert not allows(policy, "cvm:TerminateInstances", "qcs::cvm:ap-shanghai:uin/1:instance/ins-2",
                      context={"qcs:resource_tag": ("team&other",)})
    assert not allows(policy, "cvm:TerminateInstances")  # no tags to match: refused
    every = cam({"effect": "allow", "action": ["cvm:StopInstances"], "resource": ["*"],
                 "condition": {"for_all_value:string_equal": {"qcs:resource_tag": ["a&1", "b&2"]}}})
    assert allows(every, "cvm:StopInstances", context={"qcs:resource_tag": ("a&1",)})
    assert not allows(every, "cvm:StopInstances", context={"qcs:resource_tag": ("a&1", "c&3")})
    # Without a qualifier, a key with several values does not match a positive operator.
    plain = cam({"effect": "allow", "action": ["cvm:StopInstances"], "resource": ["*"],
                 "condition": {"string_equal": {"qcs:resource_tag": ["a&1"]}}})
    assert not allows(plain, "cvm:StopInstances", context={"qcs:resource_tag": ("a&1", "b&2")})


def test_cam_if_exist_holds_without_the_key() -> None:
    policy = cam({"effect": "allow", "action": ["vpc:AcceptVpcPeeringConnection"], "resource": ["*"],
                  "condition": {"string_equal_if_exist": {"vpc:region": "sh"}}})
    assert allows(policy, "vpc:AcceptVpcPeeringConnection")
    assert not allows(policy, "vpc:AcceptVpcPeeringConnection", context={"vpc:region": ("gz",)})


def test_cam_six_segments_an_empty_segment_means_all() -> None:
    policy = cam({"effect": "allow", "action": ["cos:GetObject"],
                  "resource": ["qcs::cos::uid/1250000000:b-1250000000/*"]})
    assert allows(policy, "cos:GetObject", "qcs::cos:ap-shanghai:uid/1250000000:b-1250000000/x/y.pt")
    assert not allows(policy, "cos:GetObject", "qcs::cos:ap-shanghai:uid/1250000001:b-1250000000/x")
    assert not allows(policy, "cos:GetObject", "qcs::cos:ap-shanghai:uid/1250000000:other-1250000000/x")


@pytest.mark.parametrize(("document", "cloud", "message"), [
    ({"Version": "1", "Statement": [{"Effect": "Allow", "Action": "ecs:*", "Resource": "*", "Sid": "x"}]},
     "alicloud", "Statement[0] has 'Sid', not an element of this policy language"),
    ({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "ecs:*", "Resource": "*"}]},
     "alicloud", "Version is '2012-10-17'; RAM takes \"1\""),
    ({"Version": "1", "Statement": [{"Effect": "allow", "Action": "ecs:*", "Resource": "*"}]},
     "alicloud", "Statement[0].Effect is 'allow'; RAM takes Allow or Deny"),
    ({"Version": "1", "Statement": [{"Effect": "Allow", "Action": "ecs:*"}]}, "alicloud",
     "Statement[0] has no Resource"),
    ({"Version": "1", "Statement": [{"Effect": "Allow", "Action": "ecs:*", "Resource": "*",
                                     "Condition": {"DateGreaterThan": {"acs:CurrentTime": "2026"}}}]},
     "alicloud", "operator 'DateGreaterThan' is not one this evaluator reads"),
    ({"version": "2.0", "statement": [{"effect": "allow", "action": ["permid/123"], "resource": ["*"]}]},
     "tencentcloud", "action 'permid/123' is not <service>:<Action>"),
    ({"version": "1", "statement": []}, "tencentcloud", "version is '1'; CAM takes \"2.0\""),
    ("{not json", "tencentcloud", "not JSON"),
])
def test_a_document_it_cannot_read_is_refused_by_name(document: Any, cloud: Any, message: str) -> None:
    with pytest.raises(PolicyError, match=r"^t\.json: ") as caught:
        parse(document, cloud, name="t.json")
    assert message in caught.value.message
    assert caught.value.exit_code == EXIT_PARSE


def test_requests_for_gpuctls_resources() -> None:
    ours = {"gpuctl:managed-by": "gpuctl"}
    assert request("alicloud", "ecs:DeleteInstance", Target("instance", "i-1", "cn-beijing", ours)) == Request(
        "ecs:DeleteInstance", ("acs:ecs:cn-beijing:1234567890123456:instance/i-1",),
        {"acs:ResourceTag/gpuctl:managed-by": ("gpuctl",)})
    # An action the cloud authorizes on all resources only: the request names `*`, no tags.
    assert request("alicloud", "ecs:DescribeInstances", Target("instance", "i-1", "cn-beijing", ours)) == Request(
        "ecs:DescribeInstances")
    assert request("alicloud", "ram:AttachPolicyToRole", Target("role", "gpuctl-a", other="gpuctl-a")).resources == (
        "acs:ram::1234567890123456:role/gpuctl-a", "acs:ram::1234567890123456:policy/gpuctl-a")
    assert request("tencentcloud", "cvm:TerminateInstances", Target("instance", "ins-1", "ap-shanghai", ours)) == \
        Request("cvm:TerminateInstances", ("qcs::cvm:ap-shanghai:uin/100000000001:instance/ins-1",),
                {"qcs:resource_tag": ("gpuctl:managed-by&gpuctl",)})
    assert request("tencentcloud", "cos:GetBucket", Target("object", "k", "ap-shanghai", other="b-1")).resources == (
        "qcs::cos:ap-shanghai:uid/1250000000:b-1/",)
