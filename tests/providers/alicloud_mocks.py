"""Run the Alibaba component under Pulumi's mocks and record the resource graph it builds.

No Pulumi CLI, no plugin, no cloud: `pulumi.runtime.set_mocks` answers every registration in
process. Each `build_graph` call installs fresh mocks, so calls are independent of one another.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pulumi

from toolkit.catalog import load_catalog
from toolkit.providers.alicloud.args import GpuClusterArgs
from toolkit.providers.alicloud.component import GpuCluster
from toolkit.spec.loader import load_spec

SPECS = Path(__file__).resolve().parent / "specs"
GOLDEN = Path(__file__).resolve().parent / "golden"
# A fixed "now" and cluster id so release times and tags can be written out literally.
NOW = datetime(2026, 11, 29, 9, 15, 42, tzinfo=UTC)
CLUSTER_ID = "5e1f0c2a9b3d"
IMAGE_IDS = {
    r"^ubuntu_22_04_x64": "m-mock-ubuntu2204",
    r"^ubuntu_24_04_x64": "m-mock-ubuntu2404",
    r"^ubuntu_22_04_uefi_x64": "m-mock-ubuntu2204-uefi",
    r"^ubuntu_24_04_uefi_x64": "m-mock-ubuntu2404-uefi",
    r"^aliyun_3_(\d+_)?x64": "m-mock-alinux3",
}
INSTANCE = "alicloud:ecs/instance:Instance"
ENI = "alicloud:ecs/ecsNetworkInterface:EcsNetworkInterface"
ENI_ATTACHMENT = "alicloud:ecs/ecsNetworkInterfaceAttachment:EcsNetworkInterfaceAttachment"
SG_RULE = "alicloud:ecs/securityGroupRule:SecurityGroupRule"


@dataclass
class Recorded:
    type: str
    name: str
    parent: str | None  # "type::name" of the parent given in ResourceOptions
    inputs: dict[str, Any]
    custom: bool
    # Resource options the engine gets besides the inputs: ignore_changes, custom_timeouts.
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class Graph:
    resources: list[Recorded] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    registered: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # as the engine saw them

    def of_type(self, type_: str) -> list[Recorded]:
        return [r for r in self.resources if r.type == type_]

    def custom(self) -> list[Recorded]:
        return [r for r in self.resources if r.custom]


class RecordingMocks(pulumi.runtime.Mocks):
    """Answers like the cloud would, with deterministic ids and addresses."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[Any, Any]]:
        state = dict(args.inputs)
        self.graph.registered.append((args.typ, args.name, dict(args.inputs)))
        if args.typ == INSTANCE:
            state["privateIp"] = _ip_for(args.name)
            state["publicIp"] = "" if not args.inputs.get("internetMaxBandwidthOut") else "47.0.0.1"
        elif args.typ == ENI:
            state["primaryIpAddress"] = _ip_for(args.name)
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]]]:
        call_args = dict(args.args)
        self.graph.calls.append((args.token, call_args))
        if args.token == "alicloud:ecs/getImages:getImages":
            image = IMAGE_IDS[call_args["nameRegex"]]
            return {"ids": [image], "images": []}, []
        raise AssertionError(f"unexpected invoke {args.token}")


def _ip_for(name: str) -> str:
    """An address derived from the resource name: the mock monitor registers from a thread pool,
    so a counter would hand out addresses in a different order on each run."""
    digest = zlib.crc32(name.encode())
    return f"10.0.{digest % 250}.{(digest >> 8) % 250 + 2}"


def spec_args(spec_path: Path, *, now: datetime = NOW, cluster_id: str | None = CLUSTER_ID) -> GpuClusterArgs:
    return GpuClusterArgs.from_spec(load_spec(spec_path), load_catalog("alicloud"), now=now, cluster_id=cluster_id)


def build_graph(args: GpuClusterArgs) -> Graph:
    graph = Graph()
    pulumi.runtime.set_mocks(RecordingMocks(graph), project="gpuctl-test", stack="test", preview=False)

    def record(rargs: pulumi.ResourceTransformationArgs) -> None:
        parent = rargs.opts.parent
        graph.resources.append(
            Recorded(
                type=rargs.type_,
                name=rargs.name,
                parent=f"{_type_of(parent)}::{_name_of(parent)}" if parent is not None else None,
                inputs=_plain(rargs.props),
                custom=isinstance(rargs.resource, pulumi.CustomResource),
                options=_options(rargs.opts),
            )
        )

    def program() -> pulumi.Output[Any]:
        # The transformation sees the cluster itself and every descendant, with its parent.
        cluster = GpuCluster(args.cluster, args, opts=pulumi.ResourceOptions(transformations=[record]))
        return cluster.nodes.apply(graph.nodes.extend)

    run_under_mocks(program)
    return graph


def run_under_mocks(program: Callable[[], pulumi.Output[Any]]) -> None:
    """Run `program` and wait for every output and registration (pulumi.runtime.test, typed)."""
    decorate: Callable[[Callable[[], pulumi.Output[Any]]], Callable[[], None]] = pulumi.runtime.test
    decorate(program)()


def _options(opts: pulumi.ResourceOptions) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if opts.ignore_changes:
        out["ignore_changes"] = list(opts.ignore_changes)
    timeouts = opts.custom_timeouts
    if timeouts is not None:
        out["custom_timeouts"] = {
            k: v for k, v in (("create", timeouts.create), ("update", timeouts.update), ("delete", timeouts.delete))
            if v is not None
        }
    return out


def _type_of(resource: pulumi.Resource) -> str:
    return str(getattr(resource, "_type", type(resource).__name__))


def _name_of(resource: pulumi.Resource) -> str:
    return str(getattr(resource, "_name", "?"))


def _plain(value: Any) -> Any:
    """Inputs as plain data: Outputs of other resources become '<output>' (ids are mock values)."""
    if isinstance(value, pulumi.Output):
        return "<output>"
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
