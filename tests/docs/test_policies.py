"""The cloud permission documents in docs/policies/ and the threat model in docs/security.md.

The policies are data a user pastes into the RAM / CAM console, so the checks are about shape and
scope: they parse, they carry the version each cloud wants, every action belongs to a service gpuctl
uses, none is a wildcard, and the actions gpuctl cannot work without are written out by name. That
they allow every call gpuctl and its providers make, and nothing else, is
tests/providers/test_policy_coverage.py's (from the action data, not from names guessed here).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from toolkit.secrets import CREDENTIAL_ENVS

pytestmark = pytest.mark.unit

DOCS = Path(__file__).resolve().parent.parent.parent / "docs"
POLICIES = DOCS / "policies"
RAM = POLICIES / "alicloud-ram-policy.json"
RAM_READONLY = POLICIES / "alicloud-ram-policy-readonly.json"
CAM = POLICIES / "tencentcloud-cam-policy.json"
SECURITY = DOCS / "security.md"

# ram:/cam: for the instance role the stacks create and pass to the instances (roles.py); nas:/oss:
# and cfs:/cos: for shared volumes; bssapi: and location: are the Alibaba provider's start-up calls,
# cbs: the Tencent instance's disk reads (toolkit/providers/<cloud>/api_actions.yaml).
RAM_PREFIXES = ("ecs:", "vpc:", "ram:", "nas:", "oss:", "bssapi:", "location:")
CAM_PREFIXES = ("cvm:", "vpc:", "tag:", "cam:", "cbs:", "cfs:", "cos:")
# Names only: a service, a colon, an API name. No `*`, no `?`, nothing else.
ACTION_NAME = re.compile(r"^[a-z]+:[A-Za-z]+$")

RAM_REQUIRED = {
    "ecs:RunInstances",
    "ecs:CreateNetworkInterface",
    "ecs:AttachNetworkInterface",
    "vpc:CreateVpc",
    "vpc:CreateVSwitch",
    "ecs:CreateSecurityGroup",
    "ecs:ImportKeyPair",
    "ecs:ModifyInstanceAutoReleaseTime",
}
RAM_DELETE_INSTANCE = {"ecs:DeleteInstance", "ecs:DeleteInstances"}
CAM_REQUIRED = {"cvm:RunInstances", "cvm:TerminateInstances", "vpc:CreateVpc"}
# What the Tencent stack's resources and gpuctl's own SDK calls need, written out (docs/tencentcloud.md
# says where each comes from): the rule set, the ActionTimers, tags, preflight and the tag search.
CAM_STACK = {
    "vpc:ModifySecurityGroupPolicies", "vpc:DescribeSecurityGroupPolicies",
    "cvm:ImportInstancesActionTimer", "cvm:DescribeInstancesActionTimer", "cvm:DeleteInstancesActionTimer",
    "cvm:CreateHpcCluster", "cvm:DescribeHpcClusters", "cvm:DeleteHpcClusters",
    "cvm:ImportKeyPair", "cvm:DescribeKeyPairs", "cvm:DeleteKeyPairs",
    "tag:ModifyResourceTags", "tag:DescribeResourceTagsByResourceIds",
    "cvm:DescribeZoneInstanceConfigInfos", "cvm:DescribeAccountQuota", "cvm:DescribeInstances",
    "vpc:DescribeVpcs", "vpc:DescribeSubnets", "vpc:DescribeSecurityGroups",
}


def load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path.name}: the document is not a JSON object"
    return data


def ram_statements(policy: dict[str, Any]) -> list[dict[str, Any]]:
    statements = policy["Statement"]
    assert isinstance(statements, list)
    assert statements
    return statements


def cam_statements(policy: dict[str, Any]) -> list[dict[str, Any]]:
    statements = policy["statement"]
    assert isinstance(statements, list)
    assert statements
    return statements


def actions_of(statement: dict[str, Any], key: str) -> list[str]:
    value = statement[key]
    actions = [value] if isinstance(value, str) else value
    assert isinstance(actions, list)
    assert actions
    assert all(isinstance(action, str) for action in actions)
    return actions


def ram_actions(path: Path) -> list[str]:
    return [a for s in ram_statements(load(path)) for a in actions_of(s, "Action")]


def cam_actions(path: Path) -> list[str]:
    return [a for s in cam_statements(load(path)) for a in actions_of(s, "action")]


@pytest.mark.parametrize("path", [RAM, RAM_READONLY, CAM], ids=lambda p: p.name)
def test_policy_parses(path: Path) -> None:
    load(path)


@pytest.mark.parametrize("path", [RAM, RAM_READONLY], ids=lambda p: p.name)
def test_ram_policy_shape(path: Path) -> None:
    policy = load(path)
    assert policy["Version"] == "1"
    for statement in ram_statements(policy):
        assert statement["Effect"] in ("Allow", "Deny")
        assert "Resource" in statement
        # Sid is not a RAM policy element; the console rejects unknown keys.
        assert set(statement) <= {"Effect", "Action", "Resource", "Condition"}
    for action in ram_actions(path):
        assert action.startswith(RAM_PREFIXES), f"{action}: not an action of a service gpuctl uses"


def test_cam_policy_shape() -> None:
    policy = load(CAM)
    assert policy["version"] == "2.0"
    for statement in cam_statements(policy):
        assert statement["effect"] in ("allow", "deny")
        assert "resource" in statement
        assert set(statement) <= {"effect", "action", "resource", "condition"}
    for action in cam_actions(CAM):
        assert action.startswith(CAM_PREFIXES), f"{action}: not an action of a service gpuctl uses"


@pytest.mark.parametrize("path", [RAM, RAM_READONLY, CAM], ids=lambda p: p.name)
def test_no_wildcard_actions(path: Path) -> None:
    actions = cam_actions(path) if path == CAM else ram_actions(path)
    for action in actions:
        assert "*" not in action, f"{path.name}: {action} grants a whole family of actions"
        assert ACTION_NAME.match(action), f"{path.name}: {action!r} is not service:ApiName"
    assert len(actions) == len(set(actions)), f"{path.name}: an action is listed twice"


def test_ram_policy_names_what_gpuctl_needs() -> None:
    actions = set(ram_actions(RAM))
    assert not RAM_REQUIRED - actions
    assert actions & RAM_DELETE_INSTANCE, "down cannot release instances"


def test_ram_instance_release_is_tag_conditioned() -> None:
    """Releasing or changing an instance is allowed only where the instance carries gpuctl's tag."""
    for statement in ram_statements(load(RAM)):
        if set(actions_of(statement, "Action")) & RAM_DELETE_INSTANCE:
            condition = statement["Condition"]["StringEquals"]
            assert condition["acs:ResourceTag/gpuctl:managed-by"] in (["gpuctl"], "gpuctl")


def test_ram_readonly_policy_only_reads() -> None:
    for action in ram_actions(RAM_READONLY):
        name = action.split(":", 1)[1]
        assert name.startswith(("Describe", "List", "Get", "Query")), f"{action} is not a read"
    assert set(ram_actions(RAM_READONLY)) <= set(ram_actions(RAM)), "the read-only policy reads more than up/down"


def test_cam_policy_names_what_gpuctl_needs() -> None:
    assert not CAM_REQUIRED - set(cam_actions(CAM))


def test_security_doc_names_every_credential_variable() -> None:
    text = SECURITY.read_text(encoding="utf-8")
    missing = [name for name in CREDENTIAL_ENVS if name not in text]
    assert not missing, f"docs/security.md does not mention {missing}"


def test_security_doc_links_the_policies() -> None:
    text = SECURITY.read_text(encoding="utf-8")
    for path in (RAM, RAM_READONLY, CAM):
        link = f"(policies/{path.name})"
        assert link in text, f"docs/security.md does not link {path.name}"
        assert path.is_file()


def test_the_cam_policy_covers_what_the_tencent_stack_and_gpuctl_call() -> None:
    actions = {action for statement in cam_statements(load(CAM)) for action in statement["action"]}
    assert sorted(CAM_STACK - actions) == []


# ------------------------------------------------------------------- the instance role (issues 14, 15)

RAM_ROLE_ACTIONS = {
    "ram:CreateRole", "ram:DeleteRole", "ram:CreatePolicy", "ram:GetPolicy", "ram:DeletePolicy",
    "ram:CreatePolicyVersion", "ram:DeletePolicyVersion", "ram:AttachPolicyToRole", "ram:DetachPolicyFromRole",
    "ram:PassRole",
}
# The provider reads a CAM role with DescribeRoleList, not GetRole (api_actions.yaml, Cam/role:Role).
CAM_ROLE_ACTIONS = {
    "cam:CreateRole", "cam:DescribeRoleList", "cam:DeleteRole", "cam:CreatePolicy", "cam:GetPolicy", "cam:UpdatePolicy",
    "cam:DeletePolicy", "cam:AttachRolePolicy", "cam:DetachRolePolicy", "cam:PassRole",
}
LIFECYCLE_RAM_TRUST = POLICIES / "alicloud-ram-lifecycle-trust.json"
LIFECYCLE_RAM_POLICY = POLICIES / "alicloud-ram-lifecycle-policy.json"
LIFECYCLE_CAM_TRUST = POLICIES / "tencentcloud-cam-lifecycle-trust.json"
LIFECYCLE_CAM_POLICY = POLICIES / "tencentcloud-cam-lifecycle-policy.json"


# RAM actions granted on all resources: ListTagResources is "All Resources" on its own page; the others
# were not read, and granting them on `*` works whatever RAM checks (toolkit/providers/policy_scope.py).
RAM_ON_ALL = {"ram:ListTagResources", "ram:ListEntitiesForPolicy", "ram:TagResources", "ram:UntagResources",
              "ram:DetachPolicyFromUser", "ram:DetachPolicyFromGroup",
              # The leftover search lists every role and policy and reads the roles it finds by tag:
              # which role is not known before the list (alicloud leftovers.py, data_source_alicloud_ram_roles).
              "ram:ListRoles", "ram:ListPolicies", "ram:GetRole"}


def test_the_ram_policy_lets_up_and_down_manage_only_gpuctl_roles() -> None:
    statements = [s for s in ram_statements(load(RAM)) if any(a.startswith("ram:") for a in actions_of(s, "Action"))]
    scoped = [s for s in statements if s["Resource"] != "*"]
    assert len(scoped) == 1
    statement = scoped[0]
    assert not RAM_ROLE_ACTIONS - set(actions_of(statement, "Action"))
    on_all = {a for s in statements if s["Resource"] == "*" for a in actions_of(s, "Action") if a.startswith("ram:")}
    assert on_all == RAM_ON_ALL
    # PassRole on any role would let the operator hand an admin role to a node: only gpuctl's names.
    assert statement["Resource"] == ["acs:ram:*:*:role/gpuctl-*", "acs:ram:*:*:policy/gpuctl-*"]
    assert "ecs:AttachInstanceRamRole" in ram_actions(RAM)  # a spec that gains the agent: role on a live node


def test_the_cam_policy_lets_up_and_down_manage_the_role() -> None:
    assert not CAM_ROLE_ACTIONS - set(cam_actions(CAM))


def test_the_lifecycle_documents_are_what_the_alicloud_stack_creates() -> None:
    from toolkit.providers.alicloud.args import InstanceRoleArgs
    from toolkit.providers.alicloud.roles import node_policy, trust_policy

    assert load(LIFECYCLE_RAM_TRUST) == trust_policy()
    args = InstanceRoleArgs(name="gpuctl-x-CLUSTER_ID-node", cluster_id="CLUSTER_ID", stop_instances=True)
    assert load(LIFECYCLE_RAM_POLICY) == node_policy(args)


def test_the_lifecycle_documents_are_what_the_tencent_stack_creates() -> None:
    from toolkit.providers.tencentcloud.args import InstanceRoleArgs
    from toolkit.providers.tencentcloud.roles import node_policy, trust_policy

    assert load(LIFECYCLE_CAM_TRUST) == trust_policy()
    args = InstanceRoleArgs(name="gpuctl-x-CLUSTER_ID-node", cluster_id="CLUSTER_ID", stop_instances=True)
    assert load(LIFECYCLE_CAM_POLICY) == node_policy(args, region="ap-shanghai", app_id=None)
