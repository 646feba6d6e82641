"""The RAM role the cluster's instances carry (gpuctl issues 14 and 15; docs/lifecycle.md).

    gpuctl:alicloud:InstanceRole
    ├── alicloud:ram/role:Role                          trusted by ecs.aliyuncs.com only
    ├── alicloud:ram/policy:Policy                      what the nodes may do, nothing more
    └── alicloud:ram/rolePolicyAttachment:RolePolicyAttachment

Built only where the spec needs it (args.instance_role_args): the lifecycle agent stops or releases
its own node with the role's metadata credentials, and ossfs mounts object volumes with `ram_role=`.
Each instance carries it through an `ecs.RamRoleAttachment` of its own (instances.py), not through
the instance's deprecated `role_name` argument.

The documents are plain functions so tests (and docs/policies/alicloud-ram-lifecycle-*.json) can hold
them literally. The role and policy carry the cluster's tags like every other resource; the attachment takes none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from toolkit.providers.alicloud.args import InstanceRoleArgs
from toolkit.providers.tags import TAG_CLUSTER_ID, TAG_MANAGED_BY

ROLE_TYPE = "gpuctl:alicloud:InstanceRole"
# pulumi-alicloud type tokens (the plan lists them; the tests assert them).
ROLE = "alicloud:ram/role:Role"
POLICY = "alicloud:ram/policy:Policy"
ATTACHMENT = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"
# An ECS instance role: only the ECS service may assume it (Alibaba "Instance RAM roles",
# https://www.alibabacloud.com/help/en/ecs/user-guide/attach-an-instance-ram-role-to-an-ecs-instance).
TRUSTED_SERVICE = "ecs.aliyuncs.com"
# What the agent calls (docs/lifecycle.md): StopInstance (StopCharging) and DeleteInstance (release).
NODE_ACTIONS = ("ecs:StopInstance", "ecs:DeleteInstance")
INSTANCES = "acs:ecs:*:*:instance/*"
# Read and write on the cluster's buckets for ossfs: objects and listing, on `acs:oss:*:*:<bucket>` and
# `<bucket>/*` (the resource form of aliyun/terraform-provider-alicloud's own RAM policy tests, read
# 2026-12). The calls ossfs 1.91.10 makes on a mount (toolkit/providers/alicloud/api_actions.yaml,
# instance_role.ossfs, from its source): listing, reads, writes (a multipart upload is authorized as
# oss:PutObject), deletes, and AbortMultipartUpload when an upload or a rename fails. Its utility
# mode's ListMultipartUploads is never run by gpuctl's mounts and is not granted.
BUCKET_ACTIONS = ("oss:ListObjects", "oss:GetObject", "oss:PutObject", "oss:DeleteObject", "oss:AbortMultipartUpload")
POLICY_TYPE = "Custom"
# Each change of the bucket list is a new policy version; RAM keeps at most 5.
ROTATE_STRATEGY = "DeleteOldestNonDefaultVersionWhenLimitExceeded"


def trust_policy() -> dict[str, Any]:
    """docs/policies/alicloud-ram-lifecycle-trust.json."""
    return {
        "Version": "1",
        "Statement": [
            {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": [TRUSTED_SERVICE]}},
        ],
    }


def node_policy(args: InstanceRoleArgs) -> dict[str, Any]:
    """Stop and release only the cluster's own instances (docs/policies/alicloud-ram-lifecycle-policy.json
    with CLUSTER_ID filled in) when the agent runs; read and write only the cluster's buckets."""
    statements: list[dict[str, Any]] = []
    if args.stop_instances:
        statements.append({
            "Effect": "Allow",
            "Action": list(NODE_ACTIONS),
            "Resource": INSTANCES,
            "Condition": {
                "StringEquals": {
                    f"acs:ResourceTag/{TAG_CLUSTER_ID}": [args.cluster_id],
                    f"acs:ResourceTag/{TAG_MANAGED_BY}": ["gpuctl"],
                }
            },
        })
    if args.buckets:
        statements.append({
            "Effect": "Allow",
            "Action": list(BUCKET_ACTIONS),
            "Resource": [r for b in args.buckets for r in (f"acs:oss:*:*:{b}", f"acs:oss:*:*:{b}/*")],
        })
    return {"Version": "1", "Statement": statements}


class InstanceRole(pulumi.ComponentResource):
    """The role, its policy and the attachment; `role_name` is what each instance's RamRoleAttachment names."""

    role_name: pulumi.Output[str]

    def __init__(self, name: str, args: InstanceRoleArgs, *, cluster: str, tags: Mapping[str, str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(ROLE_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        role = alicloud.ram.Role(
            f"{cluster}-node-role",
            role_name=args.name,
            assume_role_policy_document=json.dumps(trust_policy(), sort_keys=True),
            description=f"gpuctl cluster {cluster} ({args.cluster_id}): the nodes' own role",
            # Detach what is attached before deleting, so `down` never stops at a leftover attachment.
            force=True,
            tags=dict(tags),
            opts=child,
        )
        policy = alicloud.ram.Policy(
            f"{cluster}-node-policy",
            policy_name=args.name,
            policy_document=json.dumps(node_policy(args), sort_keys=True),
            description=f"gpuctl cluster {cluster} ({args.cluster_id}): what its nodes may do",
            force=True,
            rotate_strategy=ROTATE_STRATEGY,
            tags=dict(tags),
            opts=child,
        )
        alicloud.ram.RolePolicyAttachment(
            f"{cluster}-node-policy-attach",
            role_name=role.role_name,
            policy_name=policy.policy_name,
            policy_type=POLICY_TYPE,
            opts=child,
        )
        self.role_name = role.role_name
        self.register_outputs({"role_name": role.role_name})
