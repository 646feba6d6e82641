"""Run a Pulumi program under Pulumi's mocks and record the resource graph it builds: the recorder
both clouds' component tests share (tests/providers/alicloud_mocks.py, tencent_mocks.py say how
their cloud answers).

No Pulumi CLI, no plugin, no cloud: `pulumi.runtime.set_mocks` answers every registration in
process. Each `record_graph` call installs fresh mocks, so calls are independent of one another.

Read-after-create: given policies (`record_graph(..., policies=[...])`), the mocks do what the
provider does after each create, as far as permissions go: every create and read call the action
data records for the resource type (tests/providers/policy_mocks.py), and every read of an invoke,
is decided against those policies, and the first one they refuse fails the registration with the
cloud's refusal naming the action, as the provider's error would. Without policies nothing is checked.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi

from tests.providers.policy_mocks import (
    REFUSAL,
    REGION,
    PermissionRefused,
    cloud_of,
    invoke_calls,
    refusals,
    resource_calls,
)
from toolkit.providers.policy import Policy

SPECS = Path(__file__).resolve().parent / "specs"
GOLDEN = Path(__file__).resolve().parent / "golden"


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


class GraphMocks(pulumi.runtime.Mocks):
    """Records every registration and invoke; a cloud's subclass fills in what the cloud would answer
    (`answer` for resources, `invoke` for data sources)."""

    # Attached by record_graph(policies=...): what the read-after-create step decides against.
    policies: Sequence[Policy] = ()

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[Any, Any]]:
        state = dict(args.inputs)
        self.graph.registered.append((args.typ, args.name, dict(args.inputs)))
        if self.policies and args.custom is not False and not args.typ.startswith("gpuctl:"):
            cloud = cloud_of(args.typ)
            self._refuse(cloud, resource_calls(args.typ, args.name, args.inputs, REGION[cloud], ("create", "read")))
        self.answer(args, state)
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]]]:
        call_args = dict(args.args)
        self.graph.calls.append((args.token, call_args))
        if self.policies:
            self._refuse(cloud_of(args.token), invoke_calls(args.token))
        return self.invoke(args.token, call_args), []

    def _refuse(self, cloud: str, needed: list[Any]) -> None:
        refused = refusals(self.policies, needed)
        if refused:
            raise PermissionRefused(f"{REFUSAL[cloud]}: {refused[0]}")

    def answer(self, args: pulumi.runtime.MockResourceArgs, state: dict[str, Any]) -> None:
        """Add to `state` the outputs the cloud computes for this resource (addresses ...)."""

    def invoke(self, token: str, call_args: dict[str, Any]) -> dict[Any, Any]:
        raise AssertionError(f"unexpected invoke {token}")


def ip_for(name: str) -> str:
    """An address derived from the resource name: the mock monitor registers from a thread pool,
    so a counter would hand out addresses in a different order on each run."""
    digest = zlib.crc32(name.encode())
    return f"10.0.{digest % 250}.{(digest >> 8) % 250 + 2}"


def record_graph(mocks: Callable[[Graph], GraphMocks], build: Callable[[pulumi.ResourceOptions], Any], *,
                 policies: Sequence[Policy] = ()) -> Graph:
    """Run `build(opts)` (a component whose `nodes` output lists the node dicts) under `mocks` and
    record every resource it and its descendants register, with their parents and options; with
    `policies`, every create and read call is decided against them (the module's docstring)."""
    graph = Graph()
    mock = mocks(graph)
    mock.policies = tuple(policies)
    pulumi.runtime.set_mocks(mock, project="gpuctl-test", stack="test", preview=False)

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
        # The transformation sees the component itself and every descendant, with its parent.
        cluster = build(pulumi.ResourceOptions(transformations=[record]))
        nodes: pulumi.Output[Any] = cluster.nodes.apply(graph.nodes.extend)
        return nodes

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
