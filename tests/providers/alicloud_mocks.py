"""Run the Alibaba component under Pulumi's mocks (tests/providers/pulumi_mocks.py) and record the
resource graph it builds; what Alibaba would answer is said here."""

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
from toolkit.providers.alicloud.args import GpuClusterArgs
from toolkit.providers.alicloud.component import GpuCluster
from toolkit.providers.policy import Policy
from toolkit.spec.loader import load_spec

# A fixed "now" and cluster id so release times and tags can be written out literally.
NOW = datetime(2026, 11, 29, 9, 15, 42, tzinfo=UTC)
CLUSTER_ID = "5e1f0c2a9b3d"
IMAGE_IDS = {
    r"^ubuntu_22_04_x64_20G_alibase_\d{8}\.vhd$": "m-mock-ubuntu2204",
    r"^ubuntu_24_04_x64_20G_alibase_\d{8}\.vhd$": "m-mock-ubuntu2404",
    r"^ubuntu_22_04_uefi_x64_20G_alibase_\d{8}\.vhd$": "m-mock-ubuntu2204-uefi",
    r"^ubuntu_24_04_uefi_x64_20G_alibase_\d{8}\.vhd$": "m-mock-ubuntu2404-uefi",
    r"^aliyun_3_(\d+_)?x64_20G_alibase_\d{8}\.vhd$": "m-mock-alinux3",
    r"^aliyun_3_(\d+_)?x64_20G_uefi_alibase_\d{8}\.vhd$": "m-mock-alinux3-uefi",
}
INSTANCE = "alicloud:ecs/instance:Instance"
ENI = "alicloud:ecs/ecsNetworkInterface:EcsNetworkInterface"
ENI_ATTACHMENT = "alicloud:ecs/ecsNetworkInterfaceAttachment:EcsNetworkInterfaceAttachment"
SG_RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"



class RecordingMocks(GraphMocks):
    """Answers like Alibaba would, with deterministic ids and addresses."""

    def answer(self, args: pulumi.runtime.MockResourceArgs, state: dict[str, Any]) -> None:
        if args.typ == INSTANCE:
            state["privateIp"] = ip_for(args.name)
            state["publicIp"] = "" if not args.inputs.get("internetMaxBandwidthOut") else "47.0.0.1"
        elif args.typ == ENI:
            state["primaryIpAddress"] = ip_for(args.name)

    def invoke(self, token: str, call_args: dict[str, Any]) -> dict[Any, Any]:
        if token == "alicloud:ecs/getImages:getImages":
            return {"ids": [IMAGE_IDS[call_args["nameRegex"]]], "images": []}
        return super().invoke(token, call_args)


# The account's site (toolkit/providers/alicloud/site.py): the China site, so spot ceilings go as given.
ACCOUNT_ENV = {"ALIBABA_CLOUD_ACCOUNT_TYPE": "Domestic"}


def spec_args(spec_path: Path, *, now: datetime = NOW, cluster_id: str | None = CLUSTER_ID) -> GpuClusterArgs:
    return GpuClusterArgs.from_spec(load_spec(spec_path), load_catalog("alicloud"), now=now, cluster_id=cluster_id,
                                    env=ACCOUNT_ENV)


def build_graph(args: GpuClusterArgs, *, policies: Sequence[Policy] | None = None) -> Graph:
    """The component's graph; every create and read call is decided against `policies`, by default the
    policy docs/security.md tells users to attach (the mocks' read-after-create step, pulumi_mocks.py)."""
    attached = (shipped(UP_DOWN["alicloud"]),) if policies is None else policies
    return record_graph(RecordingMocks, lambda opts: GpuCluster(args.cluster, args, opts=opts), policies=attached)
