"""Run the Tencent component under Pulumi's mocks (tests/providers/pulumi_mocks.py) and record the
resource graph it builds; what Tencent would answer is said here."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pulumi

from tests.providers.policy_mocks import UP_DOWN, shipped

# GOLDEN, SPECS, Graph and run_under_mocks are re-exported: the cloud's tests take everything from here.
from tests.providers.pulumi_mocks import GOLDEN as GOLDEN
from tests.providers.pulumi_mocks import SPECS as SPECS
from tests.providers.pulumi_mocks import Graph as Graph
from tests.providers.pulumi_mocks import GraphMocks, ip_for, record_graph
from tests.providers.pulumi_mocks import run_under_mocks as run_under_mocks
from toolkit.catalog import load_catalog
from toolkit.providers.policy import Policy
from toolkit.providers.tencentcloud.args import GpuClusterArgs
from toolkit.providers.tencentcloud.component import GpuCluster
from toolkit.spec.loader import load_spec

# A fixed "now" and cluster id so timer times and tags can be written out literally.
NOW = datetime(2026, 11, 29, 9, 15, 42, tzinfo=UTC)
CLUSTER_ID = "5e1f0c2a9b3d"
IMAGES_TOKEN = "tencentcloud:Images/getInstance:getInstance"
# Per name pattern, what DescribeImages might answer: an older and a newer build, so the test sees
# that the newest is taken whatever the order.
IMAGES: dict[str, list[dict[str, str]]] = {
    r"^Ubuntu Server 22\.04 LTS 64(位|bit)$": [
        {"imageId": "img-ubuntu2204old", "imageName": "Ubuntu Server 22.04 LTS 64位",
         "createdTime": "2024-03-01T08:00:00Z"},
        {"imageId": "img-ubuntu2204new", "imageName": "Ubuntu Server 22.04 LTS 64位",
         "createdTime": "2025-09-01T08:00:00Z"},
    ],
    r"^Ubuntu Server 24\.04 LTS 64(位|bit)$": [
        {"imageId": "img-ubuntu2404", "imageName": "Ubuntu Server 24.04 LTS 64位",
         "createdTime": "2025-06-01T08:00:00Z"},
    ],
    r"^TencentOS Server 3\.\d+ ?\(TK4\)$": [
        {"imageId": "img-tencentos3", "imageName": "TencentOS Server 3.1(TK4)",
         "createdTime": "2025-01-01T08:00:00Z"},
    ],
}
VPC = "tencentcloud:Vpc/instance:Instance"
SUBNET = "tencentcloud:Subnet/instance:Instance"
SECURITY_GROUP = "tencentcloud:Security/group:Group"
RULE_SET = "tencentcloud:Security/groupRuleSet:GroupRuleSet"
KEY_PAIR = "tencentcloud:Key/pair:Pair"
HPC_CLUSTER = "tencentcloud:Cvm/hpcCluster:HpcCluster"
INSTANCE = "tencentcloud:Instance/instance:Instance"
ACTION_TIMER = "tencentcloud:Cvm/actionTimer:ActionTimer"



class RecordingMocks(GraphMocks):
    """Answers like Tencent would, with deterministic ids and addresses."""

    def answer(self, args: pulumi.runtime.MockResourceArgs, state: dict[str, Any]) -> None:
        if args.typ == INSTANCE:
            state["privateIp"] = ip_for(args.name)
            state["publicIp"] = "43.0.0.1" if args.inputs.get("allocatePublicIp") else ""

    def invoke(self, token: str, call_args: dict[str, Any]) -> dict[Any, Any]:
        if token == IMAGES_TOKEN:
            # The newest listed last, so taking the first would be wrong.
            return {"images": IMAGES[call_args["imageNameRegex"]]}
        return super().invoke(token, call_args)


def spec_args(spec_path: Path, *, now: datetime = NOW, cluster_id: str | None = CLUSTER_ID) -> GpuClusterArgs:
    return GpuClusterArgs.from_spec(load_spec(spec_path), load_catalog("tencentcloud"), now=now, cluster_id=cluster_id)


def build_graph(args: GpuClusterArgs, *, policies: Sequence[Policy] | None = None) -> Graph:
    """The component's graph; every create and read call is decided against `policies`, by default the
    policy docs/security.md tells users to attach (the mocks' read-after-create step, pulumi_mocks.py)."""
    attached = (shipped(UP_DOWN["tencentcloud"]),) if policies is None else policies
    return record_graph(RecordingMocks, lambda opts: GpuCluster(args.cluster, args, opts=opts), policies=attached)
