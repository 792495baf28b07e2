import math

import pytest

from graphpaths import (
    Graph,
    GraphError,
    bfs_path,
    connected_components,
    dijkstra,
    has_cycle,
    reachable_within,
    shortest_path,
    topological_sort,
)


def ring() -> Graph:
    """A-B-C-D chain of weight 1 plus a heavy A-D shortcut and isolated E."""
    g = Graph()
    g.add_edge("A", "B", 1)
    g.add_edge("B", "C", 1)
    g.add_edge("C", "D", 1)
    g.add_edge("A", "D", 10)
    g.add_node("E")
    return g


def chain(n: int, directed: bool = True) -> Graph:
    g = Graph(directed=directed)
    for i in range(n - 1):
        g.add_edge(i, i + 1)
    return g


def test_bfs_prefers_fewest_hops():
    """BFS ignores weights, takes the shortcut and breaks ties by insertion order."""
    g = ring()
    assert bfs_path(g, "A", "D") == ["A", "D"]
    assert bfs_path(g, "B", "D") == ["B", "A", "D"]
    assert bfs_path(chain(5), 0, 4) == [0, 1, 2, 3, 4]


def test_bfs_trivial_unreachable_and_unknown():
    """Same start and goal is a one-node path; unreachable gives None; unknown raises."""
    g = ring()
    assert bfs_path(g, "C", "C") == ["C"]
    assert bfs_path(g, "A", "E") is None
    assert bfs_path(chain(3), 2, 0) is None
    with pytest.raises(KeyError):
        bfs_path(g, "A", "Q")
    with pytest.raises(KeyError):
        bfs_path(g, "Q", "A")


def test_reachable_within_k_hops():
    """Hop counts are reported for nodes up to k hops away, inclusive."""
    g = chain(6)
    assert reachable_within(g, 0, 0) == {0: 0}
    assert reachable_within(g, 0, 2) == {0: 0, 1: 1, 2: 2}
    assert reachable_within(g, 3, 10) == {3: 0, 4: 1, 5: 2}
    assert reachable_within(ring(), "A", 1) == {"A": 0, "B": 1, "D": 1}


def test_reachable_within_rejects_negative_k():
    """A negative hop budget is invalid."""
    with pytest.raises(ValueError):
        reachable_within(chain(3), 0, -1)
    with pytest.raises(KeyError):
        reachable_within(chain(3), 9, 1)


def test_connected_components():
    """Components are listed in insertion order, isolated nodes on their own."""
    g = Graph()
    g.add_edge(1, 2)
    g.add_node(9)
    g.add_edge(3, 4)
    g.add_edge(4, 2)
    g.add_edge(5, 6)
    assert connected_components(g) == [{1, 2, 3, 4}, {9}, {5, 6}]
    assert connected_components(Graph()) == []


def test_directed_components_are_weak():
    """Edge direction is ignored when grouping directed graphs."""
    g = Graph(directed=True)
    g.add_edge("a", "b")
    g.add_edge("c", "b")
    g.add_edge("d", "e")
    assert connected_components(g) == [{"a", "b", "c"}, {"d", "e"}]


def test_dijkstra_distances_and_predecessors():
    """Dijkstra finds the cheapest distance to every reachable node."""
    dist, prev = dijkstra(ring(), "A")
    assert dist == {"A": 0.0, "B": 1.0, "C": 2.0, "D": 3.0}
    assert prev == {"B": "A", "C": "B", "D": "C"}


def test_shortest_path_prefers_light_route():
    """The weighted path goes around the heavy shortcut."""
    assert shortest_path(ring(), "A", "D") == (3.0, ["A", "B", "C", "D"])
    assert shortest_path(ring(), "D", "B") == (2.0, ["D", "C", "B"])


def test_shortest_path_edge_cases():
    """Source equals target costs zero; unreachable is (inf, []); unknown raises."""
    g = ring()
    assert shortest_path(g, "B", "B") == (0.0, ["B"])
    assert shortest_path(g, "A", "E") == (math.inf, [])
    with pytest.raises(KeyError):
        shortest_path(g, "A", "Z")
    with pytest.raises(KeyError):
        dijkstra(g, "Z")


def test_shortest_path_directed_and_ties():
    """Direction is respected and the first-found equal-cost path is kept."""
    g = Graph(directed=True)
    g.add_edge("s", "x", 2)
    g.add_edge("s", "y", 1)
    g.add_edge("x", "t", 1)
    g.add_edge("y", "t", 2)
    g.add_edge("t", "s", 0)
    assert shortest_path(g, "s", "t") == (3.0, ["s", "y", "t"])
    assert shortest_path(g, "t", "y") == (1.0, ["t", "s", "y"])


def test_has_cycle_directed():
    """A directed back edge or self-loop is a cycle; a DAG is not."""
    g = chain(4)
    assert has_cycle(g) is False
    g.add_edge(3, 1)
    assert has_cycle(g) is True
    loop = Graph(directed=True)
    loop.add_edge("a", "a")
    assert has_cycle(loop) is True


def test_has_cycle_undirected():
    """A single undirected edge is not a cycle, a triangle is."""
    g = chain(3, directed=False)
    assert has_cycle(g) is False
    g.add_edge(3, 4)
    assert has_cycle(g) is False
    g.add_edge(2, 0)
    assert has_cycle(g) is True
    loop = Graph()
    loop.add_edge("a", "a")
    assert has_cycle(loop) is True


def test_topological_sort_orders_dependencies():
    """Each node appears after all its predecessors, ties in insertion order."""
    g = Graph(directed=True)
    g.add_node("lonely")
    g.add_edge("shirt", "tie")
    g.add_edge("pants", "shoes")
    g.add_edge("tie", "jacket")
    g.add_edge("pants", "jacket")
    g.add_edge("socks", "shoes")
    assert topological_sort(g) == ["lonely", "shirt", "pants", "socks", "tie", "shoes", "jacket"]


def test_topological_sort_rejects_cycles_and_undirected():
    """Cyclic or undirected graphs cannot be sorted."""
    g = chain(3)
    g.add_edge(2, 0)
    with pytest.raises(GraphError):
        topological_sort(g)
    with pytest.raises(GraphError):
        topological_sort(chain(3, directed=False))
    assert topological_sort(Graph(directed=True)) == []
