"""The sparse MTU-check peer pattern: deterministic, O(log n) peers per node, and a connected
union of edges (a ping tests a path both ways) for every cluster size; the same set reaches the
inventory (gpuctl_mtu_peers) and converge's record."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolkit.configure.peers import peers_of
from toolkit.configure.render import InventoryData


def edges(n: int) -> set[frozenset[int]]:
    return {frozenset((i, j)) for i in range(n) for j in peers_of(i, n)}


def connected(n: int) -> bool:
    graph: dict[int, set[int]] = {i: set() for i in range(n)}
    for edge in edges(n):
        a, b = tuple(edge)
        graph[a].add(b)
        graph[b].add(a)
    seen, todo = {0}, [0]
    while todo:
        for peer in graph[todo.pop()] - seen:
            seen.add(peer)
            todo.append(peer)
    return len(seen) == n


@pytest.mark.parametrize(("n", "expected"), [
    (1, [[]]),
    (2, [[1], [0]]),
    (3, [[1, 2], [2], [0]]),
    (8, [[1, 2, 4], [2, 3, 5], [3, 4, 6], [4, 5, 7], [5, 6], [6, 7], [7], [0]]),
    (16, [[1, 2, 4, 8], [2, 3, 5, 9], [3, 4, 6, 10], [4, 5, 7, 11], [5, 6, 8, 12], [6, 7, 9, 13],
          [7, 8, 10, 14], [8, 9, 11, 15], [9, 10, 12], [10, 11, 13], [11, 12, 14], [12, 13, 15],
          [13, 14], [14, 15], [15], [0]]),
])
def test_literal_peer_sets(n: int, expected: list[list[int]]) -> None:
    assert [peers_of(i, n) for i in range(n)] == expected


def test_small_clusters_are_a_full_mesh() -> None:
    for n in (2, 3):
        assert edges(n) == {frozenset((i, j)) for i in range(n) for j in range(n) if i != j}


@pytest.mark.parametrize("n", [*range(1, 70), 100, 127, 128, 129, 1000, 1250])
def test_union_of_edges_connects_every_node_with_log_n_peers_each(n: int) -> None:
    assert connected(n)
    bound = max(1, math.ceil(math.log2(n))) if n > 1 else 0
    for i in range(n):
        peers = peers_of(i, n)
        assert i not in peers
        assert len(peers) == len(set(peers)) <= bound
        assert peers[:1] == ([i + 1] if i + 1 < n else [0] if n > 1 else [])  # the chain neighbour first
    # A node takes part in its own pings and those aimed at it: at most 2 * ceil(log2 n).
    degree = [0] * n
    for edge in edges(n):
        for node in edge:
            degree[node] += 1
    assert max(degree, default=0) <= 2 * max(1, math.ceil(math.log2(n)))


def test_pattern_is_deterministic_and_sparse_at_scale() -> None:
    assert [peers_of(i, 1250) for i in range(1250)] == [peers_of(i, 1250) for i in range(1250)]
    assert sum(len(peers_of(i, 1250)) for i in range(1250)) == 11704  # vs 1,561,250 for all pairs
    with pytest.raises(ValueError, match="outside"):
        peers_of(3, 3)


@pytest.mark.parametrize("n", [2, 3, 16, 100, 1250])
def test_appending_a_node_changes_only_the_peer_sets_that_reach_it(n: int) -> None:
    before = [peers_of(i, n) for i in range(n)]
    after = [peers_of(i, n + 1) for i in range(n)]
    changed = [i for i in range(n) if before[i] != after[i]]
    # Only the nodes 1, 2, 4, ... places before the new node n gain it; the old last node pings it
    # instead of node 0, and nobody else loses a peer.
    assert changed == sorted(n - 2 ** k for k in range(n.bit_length()) if n - 2 ** k >= 0)
    assert after[n - 1] == [n]
    assert all(after[i] == [*before[i], n] for i in changed if i != n - 1)


def lab_cluster(n: int, fabric_ip: Callable[[int], str]) -> tuple[InventoryData, str]:
    """The inventory data and site playbook of an n-node lab cluster whose node i has `fabric_ip(i)`."""
    from toolkit.configure.render import inventory_data, render_playbook
    from toolkit.paths import Paths
    from toolkit.providers.base import ClusterOutputs
    from toolkit.spec.loader import load_spec_text

    spec = load_spec_text(f"""\
name: c
provider: local
node_pools:
  - {{name: n, instance_type: lab, count: {n}, capture: /captures/h100}}
network: {{fabric: tcp, mtu: 8500, admin_cidr: 127.0.0.0/8}}
lifecycle: {{ttl: 2h}}
""")
    outputs = ClusterOutputs.model_validate({
        "cluster": "c", "provider": "local", "fabric": "tcp", "mtu": 8500,
        "nodes": [{"name": f"c-n-{i}", "pool": "n", "instance_id": f"i{i}", "instance_type": "lab",
                   "private_ip": f"10.0.{i // 200}.{i % 200 + 1}", "ssh_host": f"10.0.{i // 200}.{i % 200 + 1}",
                   "fabric_interfaces": [{"name": "fab0", "ipv4": fabric_ip(i)}]} for i in range(n)],
    })
    paths = Paths(Path("/gpuctl-home/clusters/c"))
    return inventory_data(spec, outputs, paths, ""), render_playbook(outputs, paths)


def test_inventory_gives_each_node_the_pattern_as_fabric_addresses() -> None:
    """inventory_data hands the role gpuctl_mtu_peers (addresses, no prefix), and converge reads the
    same list back through InventoryData.peers."""
    n = 5
    data, _ = lab_cluster(n, lambda i: f"10.1.0.{10 + i}/24")
    for i in range(n):
        want = [f"10.1.0.{10 + j}" for j in peers_of(i, n)]
        assert data.hosts[f"c-n-{i}"]["gpuctl_mtu_peers"] == want
        assert data.peers(f"c-n-{i}") == want
    assert data.peers("c-n-0") == ["10.1.0.11", "10.1.0.12", "10.1.0.14"]
    # The names the mtu role's messages use, for this node's peers only (no walk over every host).
    assert data.hosts["c-n-0"]["gpuctl_mtu_peer_names"] == {
        "10.1.0.11": "c-n-1 (fab0)", "10.1.0.12": "c-n-2 (fab0)", "10.1.0.14": "c-n-4 (fab0)"}
    assert data.hosts["c-n-4"]["gpuctl_mtu_peer_names"] == {"10.1.0.10": "c-n-0 (fab0)"}


def test_appending_a_node_leaves_the_other_nodes_inputs_as_they_were() -> None:
    """The site playbook names no node count and each node's vars hold only its own peers, so an
    appended node changes the configuration inputs of the nodes whose peer sets reach it, and no others."""

    def cluster(n: int) -> tuple[dict[str, dict[str, Any]], str]:
        data, site = lab_cluster(n, lambda i: f"10.1.{i // 200}.{i % 200 + 1}/16")
        return data.hosts, site

    before_hosts, before_site = cluster(100)
    after_hosts, after_site = cluster(101)
    assert after_site == before_site
    changed = sorted(i for i in range(100) if before_hosts[f"c-n-{i}"] != after_hosts[f"c-n-{i}"])
    assert changed == [36, 68, 84, 92, 96, 98, 99]  # 100 - 2^k: the nodes whose pings now reach node 100
