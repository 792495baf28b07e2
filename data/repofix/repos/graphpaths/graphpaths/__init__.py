"""Weighted graphs with BFS, Dijkstra, components and topological order."""

from .graph import Graph, GraphError
from .order import has_cycle, topological_sort
from .search import bfs_path, connected_components, reachable_within
from .shortest import dijkstra, shortest_path

__all__ = [
    "Graph",
    "GraphError",
    "bfs_path",
    "connected_components",
    "dijkstra",
    "has_cycle",
    "reachable_within",
    "shortest_path",
    "topological_sort",
]
