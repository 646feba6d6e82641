"""Which fabric peers each node pings to check the path MTU: a sparse, deterministic pattern.

Every node pinging every other node is O(n^2) pings (1.5 million at 1,250 nodes) and loads a
small cluster enough to make pings time out. Instead node i pings the nodes at strides 1, 2, 4, ...
ahead of it (i + 2^k, for every i + 2^k < n): ceil(log2 n) peers at most; the last node pings
node 0. A ping tests the path both ways, so the edges form an undirected graph that holds the
chain 0-1-2-...-(n-1) (it connects every node) and every power-of-two chord (any two nodes are a
few hops apart); each node is in at most 2 * ceil(log2 n) + 1 pings, its own and those aimed at
it. For n <= 3 this is every pair.

Nothing wraps around the end except the last node, which pings node 0 so that every node pings
someone. Appending a node leaves every existing peer set as it was except those of the nodes 1, 2,
4, ... places before it, which gain the new node (the old last node pings it instead of node 0): a
cluster that grows by one node re-checks only the paths to that node (a pattern taken mod n would
change most sets).

The mtu role's full-run check and converge's verification probe ping the same set: gpuctl computes
it here once and hands it to the role as the host var `gpuctl_mtu_peers` (addresses).
"""

from __future__ import annotations

__all__ = ["peers_of"]


def peers_of(node_index: int, n: int) -> list[int]:
    """The indices node `node_index` of `n` pings, in stride order (1, 2, 4, ... ahead of it)."""
    if not 0 <= node_index < n:
        raise ValueError(f"node index {node_index} outside 0..{n - 1}")
    peers: list[int] = []
    stride = 1
    while node_index + stride < n:
        peers.append(node_index + stride)
        stride *= 2
    if not peers and n > 1:
        # The last node pings the first, so every node checks its own path too (a node whose MTU is
        # wrong then fails itself, not only its peers).
        peers.append(0)
    return peers
