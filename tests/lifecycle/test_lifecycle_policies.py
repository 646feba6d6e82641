"""The instance-role policies the lifecycle agent needs (docs/policies/*-lifecycle-*.json, docs/lifecycle.md):
they parse, allow exactly the stop and release actions, only on instances carrying the cluster's tag,
and the trust policies let only the cloud's instance service take the role."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

DOCS = Path(__file__).resolve().parents[2] / "docs"
POLICIES = DOCS / "policies"


def load(name: str) -> dict[str, Any]:
    data = json.loads((POLICIES / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_the_alibaba_role_may_only_stop_and_release_this_clusters_instances() -> None:
    policy = load("alicloud-ram-lifecycle-policy.json")
    assert policy["Version"] == "1"
    [statement] = policy["Statement"]
    assert set(statement) == {"Effect", "Action", "Resource", "Condition"}
    assert statement["Effect"] == "Allow"
    assert statement["Action"] == ["ecs:StopInstance", "ecs:DeleteInstance"]
    assert statement["Resource"] == "acs:ecs:*:*:instance/*"
    assert statement["Condition"] == {"StringEquals": {"acs:ResourceTag/gpuctl:cluster-id": ["CLUSTER_ID"],
                                                       "acs:ResourceTag/gpuctl:managed-by": ["gpuctl"]}}


def test_the_tencent_role_may_only_stop_and_terminate_this_clusters_instances() -> None:
    policy = load("tencentcloud-cam-lifecycle-policy.json")
    assert policy["version"] == "2.0"
    statement, read = policy["statement"]
    assert set(statement) == {"effect", "action", "resource", "condition"}
    assert statement["effect"] == "allow"
    assert statement["action"] == ["cvm:StopInstances", "cvm:TerminateInstances"]
    assert statement["condition"] == {
        "for_any_value:string_equal": {"qcs:resource_tag": ["gpuctl:cluster-id&CLUSTER_ID"]}}
    # The stop's confirmation reads the instance: DescribeInstances, which changes nothing.
    assert read == {"effect": "allow", "action": ["cvm:DescribeInstances"], "resource": ["*"]}


@pytest.mark.parametrize(("name", "service"), [("alicloud-ram-lifecycle-trust.json", "ecs.aliyuncs.com"),
                                               ("tencentcloud-cam-lifecycle-trust.json", "cvm.qcloud.com")])
def test_only_the_clouds_instance_service_may_take_the_role(name: str, service: str) -> None:
    policy = {key.lower(): value for key, value in load(name).items()}
    [statement] = policy["statement"]
    statement = {key.lower(): value for key, value in statement.items()}
    assert statement["effect"].lower() == "allow"
    # Tencent's is written as an array: the provider's cam.Role diffs only that form (roles.py).
    assert statement["action"] in ("sts:AssumeRole", ["name/sts:AssumeRole"])
    principal = {key.lower(): value for key, value in statement["principal"].items()}
    assert principal == {"service": [service]}


def test_the_lifecycle_doc_links_every_policy() -> None:
    text = (DOCS / "lifecycle.md").read_text(encoding="utf-8")
    for path in sorted(POLICIES.glob("*-lifecycle-*.json")):
        assert f"(policies/{path.name})" in text, path.name
