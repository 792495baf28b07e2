import pytest

from semverlib import Version, bump


def test_bump_release_parts():
    """Bumping a release increments one part and zeroes the lower ones."""
    assert bump("1.2.3", "major") == Version(2, 0, 0)
    assert bump("1.2.3", "minor") == Version(1, 3, 0)
    assert bump("1.2.3", "patch") == Version(1, 2, 4)
    assert bump("0.0.0", "patch") == Version(0, 0, 1)


def test_bump_drops_prerelease_and_build():
    """Bumped versions never carry build metadata."""
    assert bump("1.2.3+build.5", "minor") == Version(1, 3, 0)
    assert bump("1.2.3-rc.1+b", "patch") == Version(1, 2, 3)


def test_bump_prerelease_to_its_release():
    """A prerelease of exactly x.0.0 / x.y.0 bumps to that release."""
    assert bump("2.0.0-rc.1", "major") == Version(2, 0, 0)
    assert bump("2.1.0-rc.1", "major") == Version(3, 0, 0)
    assert bump("2.0.1-rc.1", "major") == Version(3, 0, 0)
    assert bump("1.3.0-beta", "minor") == Version(1, 3, 0)
    assert bump("1.3.1-beta", "minor") == Version(1, 4, 0)


def test_bump_prerelease_counter():
    """bump prerelease starts a new tag or increments the trailing number."""
    assert bump("1.2.3", "prerelease") == Version(1, 2, 4, ("rc", 0))
    assert bump("1.2.3", "prerelease", tag="beta") == Version(1, 2, 4, ("beta", 0))
    assert bump("1.2.4-rc.0", "prerelease") == Version(1, 2, 4, ("rc", 1))
    assert bump("1.2.4-alpha", "prerelease") == Version(1, 2, 4, ("alpha", 0))


def test_bump_unknown_part():
    """An unknown part name raises ValueError."""
    with pytest.raises(ValueError):
        bump("1.0.0", "build")
