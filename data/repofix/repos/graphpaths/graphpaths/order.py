"""Cycle detection and topological ordering."""

from __future__ import annotations

from collections import deque

from .graph import Graph, GraphError, Node


def _kahn(g: Graph) -> list[Node]:
    indegree = {node: 0 for node in g}
    for _, v, _ in g.edges():
        indegree[v] += 1
    queue = deque(node for node in g if indegree[node] == 0)
    order: list[Node] = []
    while queue:
        node = queue.popleft()
        order.append(node)
        for nbr in g.neighbors(node):
            indegree[nbr] -= 1
            if indegree[nbr] == 0:
                queue.append(nbr)
    return order


def _undirected_has_cycle(g: Graph) -> bool:
    parent = {node: node for node in g}

    def find(x: Node) -> Node:
        for _ in range(len(parent)):
            if parent[x] == x:
                break
            x = parent[x]
        return x

    for u, v, _ in g.edges():
        ru, rv = find(u), find(v)
        if ru == rv:
            return True
        parent[ru] = rv
    return False


def has_cycle(g: Graph) -> bool:
    """Return True if the graph contains a cycle (self-loops included)."""
    if not g.directed:
        return _undirected_has_cycle(g)
    return len(_kahn(g)) < len(g)


def topological_sort(g: Graph) -> list[Node]:
    """Order nodes so every edge points forward; ties keep insertion order."""
    if not g.directed:
        raise GraphError("topological sort needs a directed graph")
    order = _kahn(g)
    if len(order) != len(g):
        raise GraphError("graph has a cycle")
    return order
