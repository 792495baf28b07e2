"""Adjacency-map graph with optional direction and edge weights."""

from __future__ import annotations

from typing import Hashable, Iterator

Node = Hashable


class GraphError(ValueError):
    """Raised for invalid graph operations."""


class Graph:
    """A weighted graph stored as ``{node: {neighbor: weight}}``."""

    def __init__(self, directed: bool = False) -> None:
        self.directed = directed
        self._adj: dict[Node, dict[Node, float]] = {}

    def __contains__(self, node: object) -> bool:
        return node in self._adj

    def __len__(self) -> int:
        return len(self._adj)

    def __iter__(self) -> Iterator[Node]:
        return iter(self._adj)

    def add_node(self, node: Node) -> None:
        """Add *node* if it is not present yet."""
        self._adj.setdefault(node, {})

    def add_edge(self, u: Node, v: Node, weight: float = 1.0) -> None:
        """Add (or overwrite) the edge u->v; undirected graphs also get v->u."""
        if weight < 0:
            raise GraphError(f"negative weight {weight} on edge {u!r}->{v!r}")
        self.add_node(u)
        self.add_node(v)
        self._adj[u][v] = weight
        if not self.directed:
            self._adj[v][u] = weight

    def remove_edge(self, u: Node, v: Node) -> None:
        """Remove the edge u->v (and v->u when undirected)."""
        if not self.has_edge(u, v):
            raise GraphError(f"no edge {u!r}->{v!r}")
        del self._adj[u][v]
        if not self.directed and u != v:
            del self._adj[v][u]

    def has_edge(self, u: Node, v: Node) -> bool:
        """Return True if the edge u->v exists."""
        return u in self._adj and v in self._adj[u]

    def neighbors(self, node: Node) -> dict[Node, float]:
        """Return a copy of the outgoing ``{neighbor: weight}`` map (KeyError if unknown)."""
        return dict(self._adj[node])

    def weight(self, u: Node, v: Node) -> float:
        """Weight of the edge u->v."""
        if not self.has_edge(u, v):
            raise GraphError(f"no edge {u!r}->{v!r}")
        return self._adj[u][v]

    def degree(self, node: Node) -> int:
        """Out-degree of *node* (a self-loop counts twice when undirected)."""
        out = self.neighbors(node)
        if not self.directed and node in out:
            return len(out) + 1
        return len(out)

    def nodes(self) -> list[Node]:
        """Nodes in insertion order."""
        return list(self._adj)

    def edges(self) -> list[tuple[Node, Node, float]]:
        """All edges as (u, v, weight); undirected edges are listed once."""
        result: list[tuple[Node, Node, float]] = []
        seen: set[tuple[Node, Node]] = set()
        for u, nbrs in self._adj.items():
            for v, w in nbrs.items():
                if not self.directed and (v, u) in seen:
                    continue
                seen.add((u, v))
                result.append((u, v, w))
        return result
