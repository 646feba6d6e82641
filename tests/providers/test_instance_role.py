"""The instance role the cluster stacks attach (gpuctl issues 14 and 15; docs/lifecycle.md), under Pulumi's mocks.

Both clouds: a role trusted by the compute service only, one policy that allows stopping/releasing only
the cluster's own instances (when the spec asks for the lifecycle agent) and read/write only on the
cluster's buckets (when it has object volumes), the attachment, every instance carrying the role, the
stack output `instanceRole`; nothing at all for a spec with neither.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from tests.providers import alicloud_mocks, tencent_mocks
from tests.providers.pulumi_mocks import Graph, GraphMocks, record_graph
from toolkit.providers.alicloud.component import GpuCluster as AlicloudCluster
from toolkit.providers.pulumi.outputs import outputs_from_stack
from toolkit.providers.tencentcloud.component import GpuCluster as TencentCluster
from toolkit.spec.loader import load_spec

pytestmark = pytest.mark.pulumi_mock

CLUSTER_ID = "5e1f0c2a9b3d"
APP_ID = "1250000000"
RAM_ROLE = "alicloud:ram/role:Role"
RAM_POLICY = "alicloud:ram/policy:Policy"
RAM_ATTACHMENT = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"
# One per instance: the deprecated ecs.Instance role_name is not used (pulumi-alicloud 4.0.0 ecs/instance.py:397).
RAM_ROLE_ATTACHMENT = "alicloud:ecs/ramRoleAttachment:RamRoleAttachment"
CAM_ROLE = "tencentcloud:Cam/role:Role"
CAM_POLICY = "tencentcloud:Cam/policy:Policy"
CAM_ATTACHMENT = "tencentcloud:Cam/rolePolicyAttachment:RolePolicyAttachment"
ROLE_TYPES = {RAM_ROLE, RAM_POLICY, RAM_ATTACHMENT, RAM_ROLE_ATTACHMENT, CAM_ROLE, CAM_POLICY, CAM_ATTACHMENT,
              "gpuctl:alicloud:InstanceRole", "gpuctl:tencentcloud:InstanceRole"}


def _spec(tmp_path: Path, source: str, **changes: Any) -> Path:
    """A test spec with `changes` on top (lifecycle, storage), next to its key file."""
    data = yaml.safe_load((alicloud_mocks.SPECS / source).read_text())
    data.update(changes)
    shutil.copy(alicloud_mocks.SPECS / "test_ecdsa.pub", tmp_path / "test_ecdsa.pub")
    path = tmp_path / source
    path.write_text(yaml.safe_dump(data))
    return path


class TencentMocks(tencent_mocks.RecordingMocks):
    def invoke(self, token: str, call_args: dict[str, Any]) -> dict[Any, Any]:
        if token == "tencentcloud:User/getInfo:getInfo":
            return {"appId": APP_ID, "ownerUin": "100000000001", "uin": "100000000001"}
        return super().invoke(token, call_args)


def _alicloud(path: Path) -> Graph:
    return alicloud_mocks.build_graph(alicloud_mocks.spec_args(path, cluster_id=CLUSTER_ID))


def _tencent(path: Path) -> Graph:
    args = tencent_mocks.spec_args(path, cluster_id=CLUSTER_ID)
    mocks: type[GraphMocks] = TencentMocks
    return record_graph(mocks, lambda opts: TencentCluster(args.cluster, args, opts=opts))


def _one(graph: Graph, type_: str) -> dict[str, Any]:
    found = [inputs for t, _, inputs in graph.registered if t == type_]
    assert len(found) == 1, (type_, found)
    return found[0]


def _instances(graph: Graph, type_: str) -> list[dict[str, Any]]:
    return [inputs for t, _, inputs in graph.registered if t == type_]


# ---------------------------------------------------------------------------------------- Alibaba


def test_alicloud_agent_role_trust_policy_and_instances(tmp_path: Path) -> None:
    graph = _alicloud(_spec(tmp_path, "erdma-spot.yaml", lifecycle={"ttl": "8h", "idle_stop_minutes": 30}))
    role = _one(graph, RAM_ROLE)
    assert role["roleName"] == "gpuctl-t-erdma-spot-5e1f0c2a9b3d-node"
    assert json.loads(role["assumeRolePolicyDocument"]) == {
        "Version": "1",
        "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": ["ecs.aliyuncs.com"]}}],
    }
    assert role["force"] is True
    policy = _one(graph, RAM_POLICY)
    assert policy["policyName"] == "gpuctl-t-erdma-spot-5e1f0c2a9b3d-node"
    assert json.loads(policy["policyDocument"]) == {
        "Version": "1",
        "Statement": [{
            "Effect": "Allow",
            "Action": ["ecs:StopInstance", "ecs:DeleteInstance"],
            "Resource": "acs:ecs:*:*:instance/*",
            "Condition": {"StringEquals": {"acs:ResourceTag/gpuctl:cluster-id": ["5e1f0c2a9b3d"],
                                           "acs:ResourceTag/gpuctl:managed-by": ["gpuctl"]}},
        }],
    }
    assert _one(graph, RAM_ATTACHMENT) == {
        "roleName": "gpuctl-t-erdma-spot-5e1f0c2a9b3d-node",
        "policyName": "gpuctl-t-erdma-spot-5e1f0c2a9b3d-node",
        "policyType": "Custom",
    }
    instances = _instances(graph, alicloud_mocks.INSTANCE)
    assert len(instances) == 3
    assert all("roleName" not in i for i in instances)  # deprecated: a warning on every run
    attachments = sorted((name, inputs) for t, name, inputs in graph.registered if t == RAM_ROLE_ATTACHMENT)
    assert attachments == [
        (f"t-erdma-spot-gpu-{n}-role", {"instanceId": f"t-erdma-spot-gpu-{n}-id",
                                        "ramRoleName": "gpuctl-t-erdma-spot-5e1f0c2a9b3d-node"})
        for n in range(3)
    ]


def test_alicloud_object_volumes_without_the_agent_get_only_their_buckets(tmp_path: Path) -> None:
    storage = [
        {"name": "ckpt", "kind": "object", "mount_path": "/mnt/ckpt"},
        {"name": "data", "kind": "object", "mount_path": "/mnt/data", "existing": "team-datasets"},
        {"name": "home", "kind": "nas", "mount_path": "/mnt/home"},
    ]
    graph = _alicloud(_spec(tmp_path, "erdma-spot.yaml", storage=storage))
    assert json.loads(_one(graph, RAM_POLICY)["policyDocument"]) == {
        "Version": "1",
        "Statement": [{
            "Effect": "Allow",
            "Action": ["oss:ListObjects", "oss:GetObject", "oss:PutObject", "oss:DeleteObject",
                       "oss:AbortMultipartUpload"],
            "Resource": ["acs:oss:*:*:t-erdma-spot-ckpt", "acs:oss:*:*:t-erdma-spot-ckpt/*",
                         "acs:oss:*:*:team-datasets", "acs:oss:*:*:team-datasets/*"],
        }],
    }
    assert {i["ramRoleName"] for i in _instances(graph, RAM_ROLE_ATTACHMENT)} == {
        "gpuctl-t-erdma-spot-5e1f0c2a9b3d-node"}
    assert len(_instances(graph, RAM_ROLE_ATTACHMENT)) == len(_instances(graph, alicloud_mocks.INSTANCE))


def test_alicloud_nothing_without_agent_or_object_volume(tmp_path: Path) -> None:
    storage = [{"name": "home", "kind": "nas", "mount_path": "/mnt/home"}]
    graph = _alicloud(_spec(tmp_path, "erdma-spot.yaml", storage=storage))
    assert not [r for r in graph.resources if r.type in ROLE_TYPES]
    assert all("roleName" not in i for i in _instances(graph, alicloud_mocks.INSTANCE))


def test_alicloud_no_role_without_a_cluster_id(tmp_path: Path) -> None:
    """bench and plan build without a cluster id: no role whose condition could not name the cluster."""
    path = _spec(tmp_path, "erdma-spot.yaml", lifecycle={"ttl": "8h", "idle_stop_minutes": 30})
    graph = alicloud_mocks.build_graph(alicloud_mocks.spec_args(path, cluster_id=None))
    assert not [r for r in graph.resources if r.type in ROLE_TYPES]


# ---------------------------------------------------------------------------------------- Tencent


def test_tencent_agent_role_trust_policy_and_instances(tmp_path: Path) -> None:
    path = _spec(tmp_path, "tencent-monthly.yaml", lifecycle={"ttl": "2d", "on_interruption": "/opt/ckpt.sh"})
    graph = _tencent(path)
    role = _one(graph, CAM_ROLE)
    assert role["name"] == "gpuctl-t-tc-monthly-5e1f0c2a9b3d-node"
    assert json.loads(role["document"]) == {
        "version": "2.0",
        "statement": [{"action": ["name/sts:AssumeRole"], "effect": "allow",
                       "principal": {"service": ["cvm.qcloud.com"]}}],
    }
    assert role["consoleLogin"] is False
    policy = _one(graph, CAM_POLICY)
    assert policy["name"] == "gpuctl-t-tc-monthly-5e1f0c2a9b3d-node"
    assert json.loads(policy["document"]) == {
        "version": "2.0",
        "statement": [{
            "effect": "allow",
            "action": ["cvm:StopInstances", "cvm:TerminateInstances"],
            "resource": ["*"],
            "condition": {"for_any_value:string_equal": {"qcs:resource_tag": ["gpuctl:cluster-id&5e1f0c2a9b3d"]}},
        }, {
            # The agent's confirmation of a stop: a read, on all resources (Describe* takes no resource).
            "effect": "allow", "action": ["cvm:DescribeInstances"], "resource": ["*"],
        }],
    }
    assert _one(graph, CAM_ATTACHMENT) == {
        "roleId": "t-tc-monthly-node-role-id", "policyId": "t-tc-monthly-node-policy-id"}
    assert [i["camRoleName"] for i in _instances(graph, tencent_mocks.INSTANCE)] == [
        "gpuctl-t-tc-monthly-5e1f0c2a9b3d-node"]
    assert graph.calls == []  # no APPID lookup without a bucket


def test_tencent_object_volumes_name_the_buckets_with_the_appid(tmp_path: Path) -> None:
    storage = [
        {"name": "ckpt", "kind": "object", "mount_path": "/mnt/ckpt"},
        {"name": "data", "kind": "object", "mount_path": "/mnt/data", "existing": "team-datasets-1250000000"},
    ]
    graph = _tencent(_spec(tmp_path, "tencent-monthly.yaml", storage=storage))
    prefix = "qcs::cos:ap-guangzhou:uid/1250000000"
    assert json.loads(_one(graph, CAM_POLICY)["document"]) == {
        "version": "2.0",
        "statement": [{
            "effect": "allow",
            "action": [
                "cos:GetBucket", "cos:HeadObject", "cos:GetObject", "cos:PutObject", "cos:PutObjectCopy",
                "cos:DeleteObject", "cos:InitiateMultipartUpload", "cos:UploadPart", "cos:UploadPartCopy",
                "cos:CompleteMultipartUpload",
            ],
            "resource": [
                f"{prefix}:t-tc-monthly-ckpt-1250000000/", f"{prefix}:t-tc-monthly-ckpt-1250000000/*",
                f"{prefix}:team-datasets-1250000000/", f"{prefix}:team-datasets-1250000000/*",
            ],
        }],
    }
    assert [token for token, _ in graph.calls] == ["tencentcloud:User/getInfo:getInfo"]


def test_tencent_nothing_without_agent_or_object_volume(tmp_path: Path) -> None:
    graph = _tencent(_spec(tmp_path, "tencent-monthly.yaml"))
    assert not [r for r in graph.resources if r.type in ROLE_TYPES]
    assert all("camRoleName" not in i for i in _instances(graph, tencent_mocks.INSTANCE))


# --------------------------------------------------------------------------------- stack outputs


def test_the_role_reaches_every_object_volume_from_the_stack_outputs(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path, "erdma-spot.yaml", storage=[
        {"name": "ckpt", "kind": "object", "mount_path": "/mnt/ckpt"},
        {"name": "home", "kind": "nas", "mount_path": "/mnt/home"},
    ]))
    node: dict[str, Any] = {"name": "t-erdma-spot-gpu-0", "pool": "gpu", "instance_id": "i-1", "instance_type": "ecs.x",
            "private_ip": "10.42.0.5", "public_ip": None, "fabric_interfaces": []}
    volumes = [
        {"name": "ckpt", "kind": "object", "mountPath": "/mnt/ckpt", "bucket": "t-erdma-spot-ckpt",
         "endpoint": "oss-cn-wulanchabu-internal.aliyuncs.com"},
        {"name": "home", "kind": "nas", "mountPath": "/mnt/home", "mountSource": "abc.nas.aliyuncs.com:/"},
    ]
    values = {"cluster": "t-erdma-spot", "nodes": [node], "volumes": volumes,
              "instanceRole": "gpuctl-t-erdma-spot-5e1f0c2a9b3d-node"}
    out = outputs_from_stack(spec, values)
    assert [(v.name, v.instance_role) for v in out.volumes] == [
        ("ckpt", "gpuctl-t-erdma-spot-5e1f0c2a9b3d-node"), ("home", None)]
    without = outputs_from_stack(spec, {k: v for k, v in values.items() if k != "instanceRole"})
    assert [v.instance_role for v in without.volumes] == [None, None]


def test_the_stack_exports_the_role_only_where_it_made_one(tmp_path: Path) -> None:
    exports: dict[str, Any] = {}
    path = _spec(tmp_path, "erdma-spot.yaml", lifecycle={"ttl": "8h", "idle_stop_minutes": 30})
    args = alicloud_mocks.spec_args(path, cluster_id=CLUSTER_ID)

    def build(opts: pulumi.ResourceOptions) -> AlicloudCluster:
        from toolkit.providers.alicloud.component import export_outputs

        cluster = AlicloudCluster(args.cluster, args, opts=opts)
        export_outputs(cluster)
        assert cluster.instance_role is not None
        cluster.instance_role.apply(lambda name: exports.update(instanceRole=name))
        return cluster

    record_graph(alicloud_mocks.RecordingMocks, build)
    assert exports == {"instanceRole": "gpuctl-t-erdma-spot-5e1f0c2a9b3d-node"}
