"""Run the Tencent component under Pulumi's mocks and record the resource graph it builds.

No Pulumi CLI, no plugin, no cloud: `pulumi.runtime.set_mocks` answers every registration in
process. Each `build_graph` call installs fresh mocks, so calls are independent of one another.
(The same recorder as tests/providers/alicloud_mocks.py, kept apart so each cloud's tests stand alone.)
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
from toolkit.providers.tencentcloud.args import GpuClusterArgs
from toolkit.providers.tencentcloud.component import GpuCluster
from toolkit.spec.loader import load_spec

SPECS = Path(__file__).resolve().parent / "specs"
GOLDEN = Path(__file__).resolve().parent / "golden"
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


@dataclass
class Recorded:
    type: str
    name: str
    parent: str | None  # "type::name" of the parent given in ResourceOptions
    inputs: dict[str, Any]
    custom: bool
    options: dict[str, Any] = field(default_factory=dict)  # ignore_changes, custom_timeouts


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
            state["publicIp"] = "43.0.0.1" if args.inputs.get("allocatePublicIp") else ""
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]]]:
        call_args = dict(args.args)
        self.graph.calls.append((args.token, call_args))
        if args.token == IMAGES_TOKEN:
            # The newest listed last, so taking the first would be wrong.
            return {"images": IMAGES[call_args["imageNameRegex"]]}, []
        raise AssertionError(f"unexpected invoke {args.token}")


def _ip_for(name: str) -> str:
    """An address derived from the resource name (the mock monitor registers from a thread pool)."""
    digest = zlib.crc32(name.encode())
    return f"10.0.{digest % 250}.{(digest >> 8) % 250 + 2}"


def spec_args(spec_path: Path, *, now: datetime = NOW, cluster_id: str | None = CLUSTER_ID) -> GpuClusterArgs:
    return GpuClusterArgs.from_spec(load_spec(spec_path), load_catalog("tencentcloud"), now=now, cluster_id=cluster_id)


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
