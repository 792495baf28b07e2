import pytest

from semverlib import Version, VersionError, compare, parse, sort_versions


def test_parse_plain_version():
    """A plain MAJOR.MINOR.PATCH string parses into numbers."""
    assert parse("1.20.300") == Version(1, 20, 300)
    assert parse("0.0.0") == Version(0, 0, 0)


def test_parse_prerelease_and_build():
    """Prerelease identifiers become ints when numeric; build stays text."""
    v = parse("1.0.0-alpha.10.x-y+build.007")
    assert (v.prerelease, v.build) == (("alpha", 10, "x-y"), ("build", "007"))
    assert parse("2.1.0+meta").prerelease == ()
    assert parse("1.0.0-0a.1").prerelease == ("0a", 1)


@pytest.mark.parametrize("text", [
    "1.2", "1.2.3.4", "01.2.3", "1.02.3", "1.2.03", "1.2.3-", "1.2.3+", "1.2.3-a..b",
    "1.2.3-01", "1.2.3-a_b", "a.b.c", "-1.2.3", "v1.2.3", " 1.2.3", "1.2.3+a+b",
])
def test_parse_rejects_invalid(text):
    """Malformed versions raise VersionError."""
    with pytest.raises(VersionError):
        parse(text)


def test_parse_loose():
    """Loose parsing strips whitespace and a leading v."""
    assert parse(" v1.2.3 ", loose=True) == Version(1, 2, 3)
    assert parse("V0.1.0-rc.1", loose=True) == Version(0, 1, 0, ("rc", 1))


def test_str_round_trip():
    """str() reproduces the canonical text."""
    assert str(parse("1.0.0-rc.1+sha.5114f85")) == "1.0.0-rc.1+sha.5114f85"
    assert str(Version(3, 4, 5)) == "3.4.5"
    assert str(Version(3, 4, 5, build=("b",))) == "3.4.5+b"


def test_core_precedence():
    """Major, then minor, then patch decide the order numerically."""
    assert compare(parse("1.10.0"), parse("1.9.9")) == 1
    assert compare(parse("1.2.3"), parse("2.0.0")) == -1
    assert compare(parse("1.2.3"), parse("1.2.4")) == -1
    assert compare(parse("0.0.1"), parse("0.0.1")) == 0


def test_prerelease_lower_than_release():
    """A prerelease sorts below the release with the same core."""
    assert compare(parse("1.0.0-alpha"), parse("1.0.0")) == -1
    assert compare(parse("1.0.0"), parse("1.0.0-rc.9")) == 1
    assert compare(parse("1.0.1-alpha"), parse("1.0.0")) == 1


def test_prerelease_identifier_rules():
    """Numeric ids compare numerically and sort below alphanumeric ids."""
    assert compare(parse("1.0.0-alpha.2"), parse("1.0.0-alpha.10")) == -1
    assert compare(parse("1.0.0-alpha.1"), parse("1.0.0-alpha.beta")) == -1
    assert compare(parse("1.0.0-beta"), parse("1.0.0-1")) == 1
    assert compare(parse("1.0.0-beta"), parse("1.0.0-alpha")) == 1


def test_longer_prerelease_wins_on_equal_prefix():
    """With equal leading identifiers, more identifiers mean higher precedence."""
    assert compare(parse("1.0.0-rc.1"), parse("1.0.0-rc.1+x")) == 0
    assert compare(parse("1.0.0-1.a"), parse("1.0.0-1.b")) == -1
    assert compare(parse("1.0.0-alpha"), parse("1.0.0-alpha.1")) == -1
    assert compare(parse("1.0.0-alpha.1.0"), parse("1.0.0-alpha.1")) == 1


def test_build_ignored_for_precedence_but_not_equality():
    """Build metadata does not affect ordering but does affect equality."""
    a, b = parse("1.0.0+a"), parse("1.0.0+b")
    assert (compare(a, b), a <= b, a >= b, a < b, a > b, a == b) == (0, True, True, False, False, False)


def test_sort_versions_spec_example():
    """Sorting reproduces the precedence example of the semver spec."""
    items = ["1.0.0", "1.0.0-rc.1", "1.0.0-beta.11", "1.0.0-alpha", "1.0.0-beta.2",
             "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-alpha.1"]
    assert [str(v) for v in sort_versions(items)] == [
        "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
        "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"]


def test_versions_are_hashable():
    """Versions can be used in sets; equal text gives equal members."""
    assert len({parse("1.0.0"), parse("1.0.0"), parse("1.0.0+b")}) == 2


def test_sort_versions_reverse():
    """reverse=True sorts newest first."""
    assert [str(v) for v in sort_versions(["0.9.0", Version(1, 0, 0), "0.10.0"], reverse=True)] == [
        "1.0.0", "0.10.0", "0.9.0"]
    assert sort_versions([]) == []
