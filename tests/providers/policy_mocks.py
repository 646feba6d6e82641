"""The policy side of the Pulumi mocks: which API requests a registered resource or an invoke makes,
and whether the policies a test attaches allow them.

From the action data (toolkit/providers/<cloud>/api_actions.yaml) and what each call acts on
(toolkit/providers/policy_scope.py): a resource's calls of the phases asked (its `gpuctl_triggers`
calls only), each a request on the resource the cloud authorizes it on, with the resource's own
tags as condition context. Used by the mocks' read-after-create step (tests/providers/pulumi_mocks.py)
and by the policy-coverage test (tests/providers/test_policy_coverage.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.providers.api_actions import PHASES, Call, Phase, load
from toolkit.providers.policy import Cloud, Decision, Policy, Request, decide, parse
from toolkit.providers.policy_scope import Target, request

POLICIES = Path(__file__).resolve().parents[2] / "docs" / "policies"
# What docs/security.md ("Cloud permissions") tells users to attach.
UP_DOWN = {"alicloud": "alicloud-ram-policy.json", "tencentcloud": "tencentcloud-cam-policy.json"}
READONLY = "alicloud-ram-policy-readonly.json"
# Where a test has no region of its own: the shipped policies scope by none.
REGION = {"alicloud": "cn-beijing", "tencentcloud": "ap-shanghai"}
# How each cloud refuses a call no policy allows (tests/fake_cloud/: Alibaba ECS Forbidden.RAM with
# HTTP 403, Tencent AuthFailure.UnauthorizedOperation).
REFUSAL = {"alicloud": "Forbidden.RAM", "tencentcloud": "AuthFailure.UnauthorizedOperation"}
def shipped(name: str) -> Policy:
    """A shipped policy file of docs/policies/, parsed."""
    cloud: Cloud = "alicloud" if name.startswith("alicloud") else "tencentcloud"
    return parse(json.loads((POLICIES / name).read_text(encoding="utf-8")), cloud, name=name)


def without(policy: Policy, action: str) -> Policy:
    """`policy` with `action` taken out of every statement (what a user's narrowed copy would be)."""
    document: dict[str, Any] = json.loads((POLICIES / policy.name).read_text(encoding="utf-8"))
    statements = document.get("Statement") or document["statement"]
    key = "Action" if "Statement" in document else "action"
    for statement in statements:
        actions = statement[key] if isinstance(statement[key], list) else [statement[key]]
        statement[key] = [a for a in actions if a != action]
    document["Statement" if "Statement" in document else "statement"] = [s for s in statements if s[key]]
    return parse(document, policy.cloud, name=f"{policy.name} without {action}")


def cloud_of(token: str) -> Cloud:
    return "alicloud" if token.startswith("alicloud:") else "tencentcloud"


def target_of(token: str, name: str, inputs: Mapping[str, Any], region: str) -> Target | None:
    """What a registered resource is, for the calls the cloud authorizes on it (None: on all)."""
    tags = {str(k): str(v) for k, v in (inputs.get("tags") or {}).items()} if isinstance(
        inputs.get("tags"), Mapping) else {}
    if token in ("alicloud:ecs/instance:Instance", "tencentcloud:Instance/instance:Instance"):
        return Target("instance", f"{name}-id", region, tags)  # the mocks' id: <name>-id
    if token == "alicloud:ram/role:Role":
        # Its delete detaches what is attached: gpuctl's node policy, named as the role (roles.py).
        return Target("role", str(inputs.get("roleName")), tags=tags, other=str(inputs.get("roleName")))
    if token == "alicloud:ram/policy:Policy":
        return Target("policy", str(inputs.get("policyName")), tags=tags)
    if token == "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment":
        return Target("role", str(inputs.get("roleName")), other=str(inputs.get("policyName")))
    if token.startswith("alicloud:oss/"):
        return Target("bucket", str(inputs.get("bucket")), tags=tags)
    return None


@dataclass(frozen=True)
class Needed:
    """One request a resource (or invoke, or the provider itself) makes, and where the data has it."""

    what: str  # "alicloud:ecs/instance:Instance erdma-a100-gpu-0", "invoke ...", "provider start-up"
    phase: str  # create, read, update, delete, invoke, provider, associated
    call: Call | None  # None for an associated call (PassRole)
    request: Request

    def line(self, decision: Decision) -> str:
        where = f" ({self.call.api}, {self.call.where})" if self.call else ""
        return (f"{self.what}: {self.phase} calls {self.request.action}{where} on {decision.resource}: "
                f"{decision.why}")


def resource_calls(token: str, name: str, inputs: Mapping[str, Any], region: str,
                   phases: Iterable[Phase] = PHASES) -> list[Needed]:
    """Every request `token` makes in `phases` (calls gpuctl's programs can trigger), plus PassRole
    where the resource is given a role. A token without data raises GpuctlError naming it."""
    cloud = cloud_of(token)
    entry = load(cloud).entry(token)
    target = target_of(token, name, inputs, region)
    found = [Needed(f"{token} {name}", phase, call, request(cloud, call.action, target))
             for phase in phases for call in entry.calls(phase) if call.gpuctl_triggers]
    # The associated PassRole (toolkit/providers/<cloud>/api_actions.yaml `passes_role`, with its page).
    passes = entry.passes_role
    role = inputs.get(passes.input) if passes is not None else None
    if passes is not None and role and "create" in phases:
        found.append(Needed(f"{token} {name}", "associated", None,
                            request(cloud, passes.action, Target("role", str(role)))))
    return found


def invoke_calls(token: str) -> list[Needed]:
    entry = load(cloud_of(token)).entry(token)
    return [Needed(f"invoke {token}", "invoke", call, request(cloud_of(token), call.action))
            for call in entry.calls("read") if call.gpuctl_triggers]


def provider_calls(cloud: Cloud) -> list[Needed]:
    return [Needed(f"{cloud} provider start-up", "provider", call, request(cloud, call.action))
            for call in load(cloud).provider_calls if call.gpuctl_triggers]


def refusals(policies: Sequence[Policy], needed: Iterable[Needed]) -> list[str]:
    """One line per request the policies do not allow, naming the resource, phase, action and where."""
    lines = []
    for one in needed:
        decision = decide(policies, one.request)
        if not decision.allowed:
            lines.append(one.line(decision))
    return sorted(set(lines))


class PermissionRefused(Exception):  # noqa: N818 -- the cloud's refusal, as the provider reports it
    """What the provider reports when the cloud refuses one of its calls: the program fails with it."""
