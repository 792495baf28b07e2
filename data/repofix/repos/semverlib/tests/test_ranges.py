import pytest

from semverlib import Comparator, Range, Version, VersionError, max_satisfying, min_satisfying, satisfies


def _matches(range_text, versions):
    return [v for v in versions if satisfies(v, range_text)]


def test_caret_major():
    """^1.2.3 allows changes that keep the major version."""
    assert _matches("^1.2.3", ["1.2.2", "1.2.3", "1.9.9", "2.0.0", "2.0.0-0"]) == ["1.2.3", "1.9.9"]


def test_caret_zero_major():
    """^0.2.3 keeps the minor and ^0.0.3 keeps the patch."""
    assert _matches("^0.2.3", ["0.2.2", "0.2.3", "0.2.9", "0.3.0"]) == ["0.2.3", "0.2.9"]
    assert _matches("^0.0.3", ["0.0.2", "0.0.3", "0.0.4"]) == ["0.0.3"]
    assert _matches("^0.1.5", ["0.1.5", "0.1.9", "0.2.0"]) == ["0.1.5", "0.1.9"]


def test_caret_partial():
    """Caret with partial versions fills missing parts with zero."""
    assert _matches("^1.2", ["1.1.9", "1.2.0", "1.99.0", "2.0.0"]) == ["1.2.0", "1.99.0"]
    assert _matches("^0.0", ["0.0.0", "0.0.9", "0.1.0"]) == ["0.0.0", "0.0.9"]
    assert _matches("^0", ["0.0.0", "0.9.9", "1.0.0"]) == ["0.0.0", "0.9.9"]
    assert _matches("^0.x", ["0.5.0", "1.0.0"]) == ["0.5.0"]


def test_tilde():
    """~1.2.3 and ~1.2 keep the minor; ~1 keeps the major."""
    assert _matches("~1.2.3", ["1.2.2", "1.2.3", "1.2.99", "1.3.0"]) == ["1.2.3", "1.2.99"]
    assert _matches("~1.2", ["1.1.9", "1.2.0", "1.3.0"]) == ["1.2.0"]
    assert _matches("~1", ["0.9.0", "1.0.0", "1.9.0", "2.0.0"]) == ["1.0.0", "1.9.0"]
    assert _matches("~0.0.1", ["0.0.1", "0.0.5", "0.1.0"]) == ["0.0.1", "0.0.5"]


def test_comparators_inclusive_and_exclusive():
    """>= and <= include the bound; > and < exclude it."""
    vs = ["1.0.0", "1.5.0", "2.0.0"]
    assert (_matches(">=1.5.0", vs), _matches(">1.5.0", vs)) == (["1.5.0", "2.0.0"], ["2.0.0"])
    assert (_matches("<=1.5.0", vs), _matches("<1.5.0", vs)) == (["1.0.0", "1.5.0"], ["1.0.0"])


def test_exact_versions():
    """A full version or =version matches only that version, ignoring build."""
    assert _matches("1.2.3", ["1.2.3", "1.2.4", "1.2.3+b"]) == ["1.2.3", "1.2.3+b"]
    assert _matches("=1.2.3-rc.1", ["1.2.3-rc.1", "1.2.3-rc.2", "1.2.3"]) == ["1.2.3-rc.1"]


def test_bare_partials_and_wildcards():
    """Bare partial versions act like x-ranges; * and empty match any release."""
    assert _matches("1.2.x", ["1.1.0", "1.2.0", "1.2.7", "1.3.0"]) == ["1.2.0", "1.2.7"]
    assert _matches("1", ["0.9.9", "1.0.0", "1.5.5", "2.0.0"]) == ["1.0.0", "1.5.5"]
    assert _matches("*", ["0.0.1", "9.9.9", "1.0.0-rc.1"]) == ["0.0.1", "9.9.9"]
    assert satisfies("3.0.0", "") is True
    assert (satisfies("0.0.1", "^*"), satisfies("7.1.0", "~x"), satisfies("2.0.0", "X")) == (True, True, True)


def test_and_or_combination():
    """Spaces intersect comparators and || unions the alternatives."""
    rng = ">=1.2.0 <1.4.0 || ^3.0.0 || 5.0.0"
    assert _matches(rng, ["1.1.9", "1.2.0", "1.3.9", "1.4.0", "2.5.0", "3.1.0", "4.0.0", "5.0.0"]) == [
        "1.2.0", "1.3.9", "3.1.0", "5.0.0"]


def test_prerelease_only_matches_same_core():
    """Prereleases match only when a comparator names the same core with a prerelease."""
    assert satisfies("1.2.3-beta.2", ">=1.2.3-beta.1") is True
    assert satisfies("1.2.4-beta.2", ">=1.2.3-beta.1") is False
    assert satisfies("1.2.3-beta.2", ">=1.2.0") is False
    assert satisfies("1.2.3-alpha", "^1.2.3-beta") is False
    assert satisfies("1.2.3-beta.2", "^1.2.3-beta.1") is True
    assert satisfies("1.2.3-rc.2", "~1.2.3-rc.1") is True


def test_include_prerelease_flag():
    """include_prerelease lets prereleases match like ordinary versions."""
    assert satisfies("1.2.4-beta", ">=1.2.0", include_prerelease=True) is True
    assert satisfies("2.0.0-beta", "^1.2.0", include_prerelease=True) is False
    assert satisfies("1.5.0-beta", "^1.2.0 || ^2.0.0", include_prerelease=True) is True


def test_range_structure():
    """A range stores one comparator list per alternative."""
    assert Range("^1.2.3 || <0.5.0").sets == [
        [Comparator(">=", Version(1, 2, 3)), Comparator("<", Version(2, 0, 0, (0,)))],
        [Comparator("<", Version(0, 5, 0))],
    ]
    assert Range("~1.x").sets == [[Comparator(">=", Version(1, 0, 0)), Comparator("<", Version(2, 0, 0, (0,)))]]


def test_invalid_ranges():
    """Malformed range tokens raise VersionError."""
    for text in ("^1.2.3.4", ">=1.2", "~a.b", "1.2.3.4", "^1.y"):
        with pytest.raises(VersionError):
            Range(text)


def test_max_and_min_satisfying():
    """max/min_satisfying pick the extreme matching version, or None."""
    vs = ["1.2.3", "1.2.4", "1.3.0", "2.0.0", "1.3.1-rc.1"]
    assert max_satisfying(vs, "^1.2.3") == Version(1, 3, 0)
    assert min_satisfying(vs, "^1.2.3") == Version(1, 2, 3)
    assert max_satisfying(vs, ">=3.0.0") is None
    assert min_satisfying([], "*") is None
    assert max_satisfying(["2.0.0", "2.0.0+b"], "2.0.0") == Version(2, 0, 0)
    assert min_satisfying(["2.0.0+a", "2.0.0+b"], "2.0.0") == Version(2, 0, 0, build=("a",))
