"""Weighted shortest paths with Dijkstra's algorithm."""

from __future__ import annotations

import heapq
import itertools
import math

from .graph import Graph, Node
from .search import _require


def dijkstra(g: Graph, source: Node) -> tuple[dict[Node, float], dict[Node, Node]]:
    """Return (distance, predecessor) maps for every node reachable from *source*."""
    _require(g, source)
    dist: dict[Node, float] = {source: 0.0}
    prev: dict[Node, Node] = {}
    counter = itertools.count()
    heap = [(0.0, next(counter), source)]
    while heap:
        d, _, node = heapq.heappop(heap)
        if d > dist[node]:
            continue
        for nbr, w in g.neighbors(node).items():
            candidate = d + w
            if candidate < dist.get(nbr, math.inf):
                dist[nbr] = candidate
                prev[nbr] = node
                heapq.heappush(heap, (candidate, next(counter), nbr))
    return dist, prev


def shortest_path(g: Graph, source: Node, target: Node) -> tuple[float, list[Node]]:
    """Return (total weight, node path); unreachable targets give (inf, [])."""
    _require(g, target)
    dist, prev = dijkstra(g, source)
    if target not in dist:
        return math.inf, []
    path = [target]
    for _ in range(len(g)):
        if path[-1] == source:
            break
        path.append(prev[path[-1]])
    path.reverse()
    return dist[target], path
