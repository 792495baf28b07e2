"""Semantic versions (semver 2.0) and npm-style ranges."""

from .ranges import Comparator, Range, max_satisfying, min_satisfying, satisfies
from .version import Version, VersionError, bump, compare, parse, sort_versions

__all__ = [
    "Comparator",
    "Range",
    "Version",
    "VersionError",
    "bump",
    "compare",
    "max_satisfying",
    "min_satisfying",
    "parse",
    "satisfies",
    "sort_versions",
]
