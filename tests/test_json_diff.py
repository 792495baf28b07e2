"""The JSON walker shared by the bundle audit and `pappo reproduce`, on worked examples."""

from pappo.evidence.json_diff import MISSING, differences, first_difference


def test_every_difference_with_its_path_in_key_order():
    a = {"b": [1, 2, {"x": 0.5}], "a": "same", "c": None}
    b = {"b": [1, 3, {"x": 0.25}], "a": "same", "d": 1}
    assert list(differences(a, b, "claims[k]")) == [
        ("claims[k].b[1]", 2, 3),
        ("claims[k].b[2].x", 0.5, 0.25),
        ("claims[k].c", None, MISSING),
        ("claims[k].d", MISSING, 1),
    ]


def test_types_and_missing_keys_are_differences():
    assert list(differences({"n": 1}, {"n": 1.0})) == [(".n", 1, 1.0)]
    assert list(differences({"n": 1}, {"n": True})) == [(".n", 1, True)]
    assert list(differences({"n": None}, {})) == [(".n", None, MISSING)]
    assert list(differences([1, 2], [1, 2, 3], "xs")) == [("xs", [1, 2], [1, 2, 3])]


def test_floats_within_the_tolerance_only():
    assert list(differences(0.1 + 0.2, 0.3, "x", tol=1e-9)) == []
    assert list(differences(0.1 + 0.2, 0.3, "x")) == [("x", 0.1 + 0.2, 0.3)]
    assert list(differences(0.3, 0.3 + 2e-9, "x", tol=1e-9)) == [("x", 0.3, 0.3 + 2e-9)]
    assert list(differences({"x": 1.0}, {"x": 1.0})) == []


def test_first_difference():
    assert first_difference({"a": {"b": [1, 2]}}, {"a": {"b": [1, 2]}}) is None
    assert first_difference({"a": {"b": [1, 2]}, "z": 1}, {"a": {"b": [1, 5]}, "z": 2}) == "a.b[1]"
    assert first_difference({"a": [1]}, {"a": [1, 2]}) == "a (length)"
    assert first_difference({"a": 1}, {}) == "a"
    assert first_difference(1, 2) == "-"
    assert first_difference(0.5, 0.5 + 1e-12) == "-"  # exact: no tolerance
