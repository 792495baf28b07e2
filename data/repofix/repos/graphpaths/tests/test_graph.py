import pytest

from graphpaths import Graph, GraphError


def test_undirected_edge_is_symmetric():
    """An undirected edge can be walked both ways with the same weight."""
    g = Graph()
    g.add_edge("a", "b", 2.5)
    assert (g.has_edge("a", "b"), g.has_edge("b", "a")) == (True, True)
    assert g.weight("b", "a") == 2.5
    assert g.neighbors("b") == {"a": 2.5}


def test_directed_edge_is_one_way():
    """A directed edge only exists from source to target."""
    g = Graph(directed=True)
    g.add_edge("a", "b")
    assert g.has_edge("a", "b") is True
    assert g.has_edge("b", "a") is False
    assert g.neighbors("b") == {}
    assert g.weight("a", "b") == 1.0


def test_weights_must_be_non_negative():
    """Negative weights are rejected, zero weight is allowed."""
    g = Graph()
    with pytest.raises(GraphError):
        g.add_edge("a", "b", -0.5)
    assert "a" not in g
    g.add_edge("a", "b", 0)
    assert g.weight("a", "b") == 0


def test_nodes_edges_and_size():
    """Nodes keep insertion order; undirected edges are listed once."""
    g = Graph()
    g.add_node("z")
    g.add_edge("a", "b", 3)
    g.add_edge("b", "c", 4)
    g.add_node("a")
    assert g.nodes() == ["z", "a", "b", "c"]
    assert g.edges() == [("a", "b", 3), ("b", "c", 4)]
    assert len(g) == 4
    assert ("c" in g, "q" in g) == (True, False)


def test_directed_edges_listed_per_direction():
    """Directed graphs list both opposite edges separately."""
    g = Graph(directed=True)
    g.add_edge(1, 2, 5)
    g.add_edge(2, 1, 6)
    assert g.edges() == [(1, 2, 5), (2, 1, 6)]


def test_remove_edge():
    """Removing an undirected edge drops both directions; a directed one only itself."""
    g = Graph()
    g.add_edge("a", "b")
    g.add_edge("a", "a")
    g.remove_edge("b", "a")
    assert (g.has_edge("a", "b"), g.has_edge("b", "a")) == (False, False)
    g.remove_edge("a", "a")
    assert g.neighbors("a") == {}
    d = Graph(directed=True)
    d.add_edge("x", "y")
    d.add_edge("y", "x")
    d.remove_edge("x", "y")
    assert d.edges() == [("y", "x", 1.0)]
    with pytest.raises(GraphError):
        d.remove_edge("x", "y")


def test_missing_lookups_raise():
    """Unknown nodes and edges raise KeyError / GraphError."""
    g = Graph()
    g.add_edge("a", "b")
    with pytest.raises(KeyError):
        g.neighbors("zz")
    with pytest.raises(GraphError):
        g.weight("a", "zz")
    assert g.has_edge("zz", "a") is False


def test_degree_and_neighbor_copy():
    """Self-loops count twice in undirected degree; neighbors returns a copy."""
    g = Graph()
    g.add_edge("a", "b")
    g.add_edge("a", "a")
    assert g.degree("a") == 3
    assert g.degree("b") == 1
    d = Graph(directed=True)
    d.add_edge("a", "a")
    d.add_edge("a", "b")
    assert d.degree("a") == 2
    assert d.degree("b") == 0
    g.neighbors("b")["x"] = 1.0
    assert g.neighbors("b") == {"a": 1.0}
