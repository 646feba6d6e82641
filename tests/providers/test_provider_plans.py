"""Each provider's plan list is what its program really creates.

`gpuctl plan` lists resources from the provider's `planned_resources`; here that list is held
against the graph the Alibaba component builds under Pulumi's mocks, for every Alibaba example
and test spec: every cloud resource of the graph is listed (type, name, count) and nothing more.
"""

from __future__ import annotations

from collections import Counter
from fnmatch import fnmatchcase
from pathlib import Path

import pulumi
import pytest

from tests.providers.alicloud_mocks import SPECS, RecordingMocks, build_graph, spec_args
from tests.providers.pulumi_mocks import Graph, record_graph
from toolkit.catalog.checks import check_spec
from toolkit.providers.registry import get_provider
from toolkit.spec.loader import load_spec

pytestmark = pytest.mark.pulumi_mock

REPO = Path(__file__).resolve().parents[2]
ALICLOUD_SPECS = sorted(
    [p for p in (REPO / "examples").glob("*.yaml") if "provider: alicloud" in p.read_text()]
    + [p for p in SPECS.glob("*.yaml") if "provider: alicloud" in p.read_text()]
)


def _graph(path: Path) -> Graph:
    """The cluster stack's graph; with storage, also the storage stack's volumes and the mount
    targets the cluster stack builds from them (a plan lists both stacks)."""
    spec = load_spec(path)
    args = spec_args(path)
    if not spec.storage:
        return build_graph(args)
    from toolkit.providers.alicloud.component import GpuCluster
    from toolkit.providers.alicloud.storage import ClusterStorage, StorageArgs, StorageMounts

    def build(opts: pulumi.ResourceOptions) -> GpuCluster:
        cluster = GpuCluster(args.cluster, args, opts=opts)
        storage_args = StorageArgs.from_spec(spec, cluster_id=args.cluster_id)
        storage = ClusterStorage(f"{spec.name}-storage", storage_args, opts=opts)
        StorageMounts(f"{spec.name}-mounts", storage_args, file_system_ids=storage.file_system_ids,
                      vswitch_id=cluster.vswitch_id, opts=opts)
        return cluster

    return record_graph(RecordingMocks, build)


def _planned(path: Path) -> list[tuple[str, str, int]]:
    spec = load_spec(path)
    provider = get_provider(spec.provider)
    return [(r.type, r.name, r.count) for r in provider.planned_resources(spec, check_spec(spec))]


def test_the_alicloud_specs_are_found() -> None:
    names = {p.name for p in ALICLOUD_SPECS}
    assert {"alicloud-erdma-2x8.yaml", "single-gpu-lora.yaml", "erdma-spot.yaml", "erdma-two-pools.yaml",
            "tcp-monthly.yaml"} <= names


@pytest.mark.parametrize("path", ALICLOUD_SPECS, ids=lambda p: p.name)
def test_alicloud_plan_lists_exactly_the_mocked_graphs_cloud_resources(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(path.parent)  # the examples name their key file relative to the repository
    if path.parent.name == "examples":
        monkeypatch.chdir(REPO)
    planned = _planned(path)
    graph = _graph(path)
    created = Counter((r.type, r.name) for r in graph.custom())
    assert all(n == 1 for n in created.values())  # Pulumi names are unique per type
    unmatched = set(created)
    for type_, pattern, count in planned:
        matched = {(t, n) for t, n in created if t == type_ and fnmatchcase(n, pattern)}
        assert len(matched) == count, (type_, pattern, sorted(matched))
        assert matched & unmatched == matched, f"{type_} {pattern} overlaps another planned line"
        unmatched -= matched
    assert unmatched == set(), f"created but not in the plan: {sorted(unmatched)}"


def test_alicloud_plan_of_the_erdma_spot_spec_written_out() -> None:
    assert _planned(SPECS / "erdma-spot.yaml") == [
        ("alicloud:vpc/network:Network", "t-erdma-spot-vpc", 1),
        ("alicloud:vpc/switch:Switch", "t-erdma-spot-vsw", 1),
        ("alicloud:ecs/securityGroup:SecurityGroup", "t-erdma-spot-sg", 1),
        ("alicloud:ecs/securityGroupRule:SecurityGroupRule", "t-erdma-spot-ssh-admin", 1),
        ("alicloud:ecs/securityGroupRule:SecurityGroupRule", "t-erdma-spot-intra-all", 1),
        ("alicloud:ecs/securityGroupRule:SecurityGroupRule", "t-erdma-spot-intra-icmp", 1),
        ("alicloud:ecs/ecsKeyPair:EcsKeyPair", "t-erdma-spot-key", 1),
        ("alicloud:ecs/instance:Instance", "t-erdma-spot-gpu-*", 3),
        ("alicloud:ecs/ecsNetworkInterface:EcsNetworkInterface", "t-erdma-spot-gpu-*-eri*", 3),
        ("alicloud:ecs/ecsNetworkInterfaceAttachment:EcsNetworkInterfaceAttachment",
         "t-erdma-spot-gpu-*-eri*-attach", 3),
    ]


def test_a_plan_line_that_the_graph_lacks_fails_the_comparison() -> None:
    """The comparison above can fail: a made-up line matches nothing in the graph."""
    graph = build_graph(spec_args(SPECS / "erdma-spot.yaml"))
    created = {(r.type, r.name) for r in graph.custom()}
    instances = {n for t, n in created if t == "alicloud:ecs/instance:Instance"}
    assert len(instances) == 3
    assert not [n for n in instances if fnmatchcase(n, "t-erdma-spot-cpu-*")]
