"""The CAM role the cluster's instances carry (gpuctl issues 14 and 15; docs/lifecycle.md).

    gpuctl:tencentcloud:InstanceRole
    ├── tencentcloud:Cam/role:Role                          trusted by cvm.qcloud.com only
    ├── tencentcloud:Cam/policy:Policy                      what the nodes may do, nothing more
    └── tencentcloud:Cam/rolePolicyAttachment:RolePolicyAttachment

Built only where the spec needs it (args.instance_role_args): the lifecycle agent stops or terminates
its own node with the role's metadata credentials, and cosfs mounts object volumes with `cam_role=`.
The instances name it at creation (`instance.Instance(cam_role_name=...)`, RunInstances' CamRoleName).
terraform-provider-tencentcloud's tencentcloud_instance updates `cam_role_name` in place (no ForceNew,
resource_tc_instance.go, read 2026-12); its early versions replaced the instance instead.

COS resources carry the account's APPID (`qcs::cos:<region>:uid/<APPID>:<bucket>-<APPID>/`), looked up
once with `user.get_info` where the cluster has object volumes. The documents write every element an
array: the provider's cam.Role docstring says a string where CAM allows both does not diff cleanly.
The role carries the cluster's tags; cam.Policy and the attachment take none (0.2.3).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from toolkit.providers.tags import TAG_CLUSTER_ID
from toolkit.providers.tencentcloud.args import InstanceRoleArgs

ROLE_TYPE = "gpuctl:tencentcloud:InstanceRole"
# tencentcloud-iac-pulumi type tokens (the plan lists them; the tests assert them).
ROLE = "tencentcloud:Cam/role:Role"
POLICY = "tencentcloud:Cam/policy:Policy"
ATTACHMENT = "tencentcloud:Cam/rolePolicyAttachment:RolePolicyAttachment"
# "The instance only allows the role entity that contains cvm.qcloud.com to assume the role"
# (CVM "Managing Roles", https://www.tencentcloud.com/document/product/213/45917, updated 2024-01-08).
TRUSTED_SERVICE = "cvm.qcloud.com"
# What the agent calls (docs/lifecycle.md): StopInstances (STOP_CHARGING) and TerminateInstances on
# its own cluster's instances, and DescribeInstances to confirm a stop (api_actions.yaml,
# instance_role.lifecycle_agent): a read, granted without the tag condition, since CVM authorizes
# Describe* calls on all resources only (the gpuctl evaluator's rule for an action CVM does not list as
# authorized per resource; paper only, docs/tencentcloud.md).
NODE_ACTIONS = ("cvm:StopInstances", "cvm:TerminateInstances")
NODE_READS = ("cvm:DescribeInstances",)
# Read and write for cosfs, multipart upload included (checkpoints are large), on the bucket
# (`<bucket>/`) and its objects (`<bucket>/*`) as in Tencent's own example
# (https://www.tencentcloud.com/document/product/1237/69102). The calls cosfs makes on a mount
# (toolkit/providers/tencentcloud/api_actions.yaml, instance_role.cosfs, from its source): listing,
# HEAD and GET of objects, PUT, the copy a chmod/chown or rename makes (PutObjectCopy, and
# UploadPartCopy for a large file), delete, and the multipart upload of large files. Its utility
# mode's ListMultipartUploads / AbortMultipartUpload are never run by gpuctl's mounts: not granted.
BUCKET_ACTIONS = (
    "cos:GetBucket", "cos:HeadObject", "cos:GetObject", "cos:PutObject", "cos:PutObjectCopy", "cos:DeleteObject",
    "cos:InitiateMultipartUpload", "cos:UploadPart", "cos:UploadPartCopy", "cos:CompleteMultipartUpload",
)


def trust_policy() -> dict[str, Any]:
    """docs/policies/tencentcloud-cam-lifecycle-trust.json."""
    return {
        "version": "2.0",
        "statement": [
            {"action": ["name/sts:AssumeRole"], "effect": "allow", "principal": {"service": [TRUSTED_SERVICE]}},
        ],
    }


def node_policy(args: InstanceRoleArgs, *, region: str, app_id: str | None) -> dict[str, Any]:
    """Stop and terminate only the cluster's own instances (docs/policies/tencentcloud-cam-lifecycle-
    policy.json with CLUSTER_ID filled in) when the agent runs; read and write only its buckets."""
    statements: list[dict[str, Any]] = []
    if args.stop_instances:
        statements.append({
            "effect": "allow",
            "action": list(NODE_ACTIONS),
            "resource": ["*"],
            "condition": {"for_any_value:string_equal": {"qcs:resource_tag": [f"{TAG_CLUSTER_ID}&{args.cluster_id}"]}},
        })
        statements.append({"effect": "allow", "action": list(NODE_READS), "resource": ["*"]})
    if args.has_buckets:
        if app_id is None:
            raise ValueError("the COS buckets of the instance role's policy need the account's APPID")
        buckets = [f"{b}-{app_id}" for b in args.created_buckets] + list(args.existing_buckets)
        prefix = f"qcs::cos:{region}:uid/{app_id}"
        statements.append({
            "effect": "allow",
            "action": list(BUCKET_ACTIONS),
            "resource": [r for b in buckets for r in (f"{prefix}:{b}/", f"{prefix}:{b}/*")],
        })
    return {"version": "2.0", "statement": statements}


class InstanceRole(pulumi.ComponentResource):
    """The role, its policy and the attachment; `role_name` is what the instances carry."""

    role_name: pulumi.Output[str]

    def __init__(self, name: str, args: InstanceRoleArgs, *, cluster: str, tags: Mapping[str, str], region: str,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(ROLE_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        role = tencentcloud.cam.Role(
            f"{cluster}-node-role",
            name=args.name,
            document=json.dumps(trust_policy(), sort_keys=True),
            description=f"gpuctl cluster {cluster} ({args.cluster_id}): the nodes' own role",
            console_login=False,
            tags=dict(tags),
            opts=child,
        )
        document: pulumi.Input[str]
        if args.has_buckets:
            info = tencentcloud.user.get_info_output(opts=pulumi.InvokeOutputOptions(parent=self))
            app_id: pulumi.Output[str] = info.app_id
            document = app_id.apply(
                lambda value: json.dumps(node_policy(args, region=region, app_id=str(value)), sort_keys=True)
            )
        else:
            document = json.dumps(node_policy(args, region=region, app_id=None), sort_keys=True)
        policy = tencentcloud.cam.Policy(
            f"{cluster}-node-policy",
            name=args.name,
            document=document,
            description=f"gpuctl cluster {cluster} ({args.cluster_id}): what its nodes may do",
            opts=child,
        )
        tencentcloud.cam.RolePolicyAttachment(
            f"{cluster}-node-policy-attach", role_id=role.id, policy_id=policy.id, opts=child
        )
        self.role_name = role.name
        self.register_outputs({"role_name": role.name})
