"""Unweighted traversals: BFS paths, k-hop reachability, components."""

from __future__ import annotations

from collections import deque

from .graph import Graph, Node


def _require(g: Graph, *nodes: Node) -> None:
    for node in nodes:
        if node not in g:
            raise KeyError(node)


def bfs_path(g: Graph, start: Node, goal: Node) -> list[Node] | None:
    """Path with the fewest hops from *start* to *goal*, or None if unreachable."""
    _require(g, start, goal)
    if start == goal:
        return [start]
    parent: dict[Node, Node] = {start: start}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nbr in g.neighbors(node):
            if nbr in parent:
                continue
            parent[nbr] = node
            if nbr == goal:
                path = [goal]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return path[::-1]
            queue.append(nbr)
    return None


def reachable_within(g: Graph, start: Node, k: int) -> dict[Node, int]:
    """Map every node reachable in at most *k* hops to its hop count."""
    _require(g, start)
    if k < 0:
        raise ValueError("k must be non-negative")
    hops = {start: 0}
    frontier = [start]
    for depth in range(1, k + 1):
        nxt: list[Node] = []
        for node in frontier:
            for nbr in g.neighbors(node):
                if nbr not in hops:
                    hops[nbr] = depth
                    nxt.append(nbr)
        frontier = nxt
    return hops


def connected_components(g: Graph) -> list[set[Node]]:
    """Components (weakly connected for directed graphs), in node insertion order."""
    undirected: dict[Node, set[Node]] = {node: set() for node in g}
    for u, v, _ in g.edges():
        undirected[u].add(v)
        undirected[v].add(u)
    seen: set[Node] = set()
    components: list[set[Node]] = []
    for root in g:
        if root in seen:
            continue
        comp = {root}
        stack = [root]
        while stack:
            node = stack.pop()
            for nbr in undirected[node]:
                if nbr not in comp:
                    comp.add(nbr)
                    stack.append(nbr)
        seen |= comp
        components.append(comp)
    return components
