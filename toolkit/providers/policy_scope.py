"""What a call authorizes against: the resource (its ARN) and condition context of each API action
gpuctl or its providers call, for `toolkit.providers.policy` to decide.

The clouds authorize most actions on "all resources" only (Alibaba's authorization tables say "All
Resources", Tencent's "*"): a request for such an action names `*`, and only a policy statement
whose Resource is `*` allows it. A few actions are authorized on the resource itself, and only
those may be granted on a narrower Resource or under a tag condition; they are listed here with the
resource they act on. Any action not listed is taken as "all resources": the reading under which a
policy that grants it on `*` works whether or not the cloud checks it per resource. So a statement
that scopes an action not listed here fails the coverage test (tests/providers/
test_policy_coverage.py) rather than a user's `up`.

Resource-level, as read (2026-12-01):

- Alibaba ECS instances `acs:ecs:<region>:<account>:instance/<id>`, with the instance's tags as
  `acs:ResourceTag/<key>`: Alibaba "Use tags to control access to ECS resources"
  (https://www.alibabacloud.com/help/en/resource-management/tag/use-cases/use-tags-to-control-access-to-ecs-resources-1)
  and the ECS authorization reference (https://help.aliyun.com/en/ecs/developer-reference/api-ecs-2014-05-26-ram).
  Which of the instance actions below honour the tag key was read for the ones that page names;
  for ModifyInstanceChargeType, ModifyInstanceSpec, ModifyPrepayInstanceSpec, ModifyInstanceVpcAttribute,
  ModifyInstanceNetworkSpec, AllocatePublicIpAddress and ModifyInstanceAutoRenewAttribute it is
  paper only (docs/alicloud.md).
- Alibaba RAM roles `acs:ram::<account>:role/<name>` and policies `acs:ram::<account>:policy/<name>`:
  RAM grants on RAM "at the resource level" (https://alibabacloud.com/help/en/ram/ram-authentication);
  ram:ListTagResources is "All Resources" on its own page
  (https://www.alibabacloud.com/help/en/ram/developer-reference/api-ram-2015-05-01-listtagresources), and
  ListEntitiesForPolicy, TagResources, UntagResources, DetachPolicyFromUser/Group were not read:
  all resources here. AttachPolicyToRole and DetachPolicyFromRole act on the role and the policy both.
- Alibaba OSS: bucket actions on `acs:oss:*:<account>:<bucket>`, object actions on
  `acs:oss:*:<account>:<bucket>/<object>` ("OSS authorization syntax and elements",
  https://www.alibabacloud.com/help/en/oss/user-guide/authorization-syntax-and-elements); used for
  the instance role's bucket statements.
- Tencent CVM instances `qcs::cvm:<region>:uin/<uin>:instance/<id>`, with the instance's tags as
  `qcs:resource_tag` ("<key>&<value>" each): CVM resource-level permissions
  (https://tencentcloud.com/document/product/213/10314) and tag-based authorization
  (https://intl.cloud.tencent.com/document/product/598/47827); TerminateInstances and StopInstances.
- Tencent COS: `qcs::cos:<region>:uid/<APPID>:<bucket>-<APPID>/` for the bucket,
  `.../<bucket>-<APPID>/<key>` for an object (https://www.tencentcloud.com/document/product/436/30580).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from toolkit.providers.policy import ALL, Cloud, Request

# Stand-ins where a test has no real value: the shipped policies scope by neither.
ACCOUNT = {"alicloud": "1234567890123456", "tencentcloud": "100000000001"}
APP_ID = "1250000000"

Kind = Literal["instance", "role", "policy", "bucket", "object"]

# Alibaba ECS actions authorized on the instance (and its tags).
ALICLOUD_INSTANCE_ACTIONS = frozenset({
    "ecs:DeleteInstance", "ecs:DeleteInstances", "ecs:StopInstance", "ecs:StartInstance", "ecs:RebootInstance",
    "ecs:ModifyInstanceAttribute", "ecs:ModifyInstanceAutoReleaseTime", "ecs:ModifyInstanceChargeType",
    "ecs:ModifyInstanceSpec", "ecs:ModifyPrepayInstanceSpec", "ecs:ModifyInstanceVpcAttribute",
    "ecs:ModifyInstanceNetworkSpec", "ecs:AllocatePublicIpAddress", "ecs:ModifyInstanceAutoRenewAttribute",
})
ALICLOUD_ROLE_ACTIONS = frozenset({
    "ram:CreateRole", "ram:GetRole", "ram:UpdateRole", "ram:DeleteRole", "ram:ListPoliciesForRole", "ram:PassRole",
})
ALICLOUD_POLICY_ACTIONS = frozenset({
    "ram:CreatePolicy", "ram:GetPolicy", "ram:DeletePolicy", "ram:CreatePolicyVersion", "ram:DeletePolicyVersion",
    "ram:ListPolicyVersions", "ram:GetPolicyVersion", "ram:UpdatePolicyDescription",
})
ALICLOUD_ATTACH_ACTIONS = frozenset({"ram:AttachPolicyToRole", "ram:DetachPolicyFromRole"})
# OSS actions on a bucket itself; every other oss: action the instance role needs is on an object.
OSS_BUCKET_ACTIONS = frozenset({"oss:ListObjects", "oss:ListMultipartUploads"})
TENCENT_INSTANCE_ACTIONS = frozenset({"cvm:TerminateInstances", "cvm:StopInstances"})
COS_BUCKET_ACTIONS = frozenset({"cos:GetBucket", "cos:HeadBucket", "cos:ListMultipartUploads"})


@dataclass(frozen=True)
class Target:
    """A resource gpuctl made (or an instance it runs on): what a call on it is about."""

    kind: Kind
    name: str  # instance id, role or policy name, bucket name (Tencent: with its -APPID), object key
    region: str = ALL
    tags: Mapping[str, str] = field(default_factory=dict)
    # AttachPolicyToRole acts on both: the policy's name beside the role's; an object's bucket.
    other: str | None = None


def request(cloud: Cloud, action: str, target: Target | None = None) -> Request:
    """The request `action` makes: on `target` where the cloud authorizes the action on it, else on all."""
    if target is None:
        return Request(action)
    if cloud == "alicloud":
        return _alicloud(action, target)
    return _tencent(action, target)


def _alicloud(action: str, target: Target) -> Request:
    account = ACCOUNT["alicloud"]
    if target.kind == "instance" and action in ALICLOUD_INSTANCE_ACTIONS:
        return Request(action, (f"acs:ecs:{target.region}:{account}:instance/{target.name}",),
                       {f"acs:ResourceTag/{k}": (v,) for k, v in target.tags.items()})
    role = f"acs:ram::{account}:role/{target.name}"
    if target.kind == "role" and action in ALICLOUD_ROLE_ACTIONS:
        return Request(action, (role,))
    if target.kind == "role" and action in ALICLOUD_ATTACH_ACTIONS and target.other:
        return Request(action, (role, f"acs:ram::{account}:policy/{target.other}"))
    if target.kind == "policy" and action in ALICLOUD_POLICY_ACTIONS | ALICLOUD_ATTACH_ACTIONS:
        return Request(action, (f"acs:ram::{account}:policy/{target.name}",))
    if target.kind == "bucket" and action.startswith("oss:"):
        return Request(action, (f"acs:oss:*:{account}:{target.name}",))
    if target.kind == "object" and action.startswith("oss:"):
        bucket = target.other or ""
        resource = f"acs:oss:*:{account}:{bucket}" if action in OSS_BUCKET_ACTIONS else \
            f"acs:oss:*:{account}:{bucket}/{target.name}"
        return Request(action, (resource,))
    return Request(action)


def _tencent(action: str, target: Target) -> Request:
    if target.kind == "instance" and action in TENCENT_INSTANCE_ACTIONS:
        return Request(action, (f"qcs::cvm:{target.region}:uin/{ACCOUNT['tencentcloud']}:instance/{target.name}",),
                       {"qcs:resource_tag": tuple(f"{k}&{v}" for k, v in target.tags.items())})
    if target.kind == "object" and action.startswith("cos:"):
        prefix = f"qcs::cos:{target.region}:uid/{APP_ID}:{target.other}/"
        return Request(action, (prefix if action in COS_BUCKET_ACTIONS else prefix + target.name,))
    return Request(action)
