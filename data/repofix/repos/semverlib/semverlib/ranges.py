"""npm-style version ranges built from comparators."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .version import Version, VersionError, coerce, parse

OPERATORS = (">=", "<=", ">", "<", "=")
WILDCARDS = ("x", "X", "*")


@dataclass(frozen=True)
class Comparator:
    """A single ``op version`` condition such as ``>=1.2.3``."""

    op: str
    version: Version

    def test(self, v: Version) -> bool:
        """Return True when ``v`` meets this condition."""
        if self.op == ">=":
            return v >= self.version
        if self.op == ">":
            return v > self.version
        if self.op == "<=":
            return v <= self.version
        if self.op == "<":
            return v < self.version
        return v.core == self.version.core and v.prerelease == self.version.prerelease


def _partial(text: str) -> list[int]:
    """Parse ``1``, ``1.2`` or ``1.2.x`` into the list of given numbers."""
    nums: list[int] = []
    parts = text.split("+")[0].split("-")[0].split(".")
    if len(parts) > 3:
        raise VersionError(f"too many parts: {text!r}")
    for part in parts:
        if part in WILDCARDS:
            break
        if not part.isdigit():
            raise VersionError(f"invalid partial version: {text!r}")
        nums.append(int(part))
    return nums


def _floor(text: str, nums: list[int]) -> Version:
    """Lowest version matched by a full or partial version."""
    if len(nums) == 3:
        return parse(text)
    major, minor, patch = (nums + [0, 0])[:3]
    return Version(major, minor, patch)


def _upper(major: int, minor: int = 0, patch: int = 0) -> Comparator:
    return Comparator("<", Version(major, minor, patch, (0,)))


def _expand(token: str) -> list[Comparator]:
    """Turn one range token into the comparators it stands for."""
    if token[0] == "^":
        nums = _partial(token[1:])
        if not nums:
            return []
        low = _floor(token[1:], nums)
        if low.major > 0 or len(nums) == 1:
            return [Comparator(">=", low), _upper(low.major + 1)]
        if low.minor > 0 or len(nums) == 2:
            return [Comparator(">=", low), _upper(0, low.minor + 1)]
        return [Comparator(">=", low), _upper(0, 0, low.patch + 1)]
    if token[0] == "~":
        nums = _partial(token[1:])
        if not nums:
            return []
        low = _floor(token[1:], nums)
        if len(nums) == 1:
            return [Comparator(">=", low), _upper(low.major + 1)]
        return [Comparator(">=", low), _upper(low.major, low.minor + 1)]
    for op in OPERATORS:
        if token.startswith(op):
            return [Comparator(op, parse(token[len(op):]))]
    nums = _partial(token)
    if len(nums) == 3:
        return [Comparator("=", parse(token))]
    if not nums:
        return []
    low = _floor(token, nums)
    if len(nums) == 1:
        return [Comparator(">=", low), _upper(low.major + 1)]
    return [Comparator(">=", low), _upper(low.major, low.minor + 1)]


class Range:
    """A union (``||``) of intersections (spaces) of comparators."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.sets: list[list[Comparator]] = []
        for alternative in text.split("||"):
            comparators: list[Comparator] = []
            for token in alternative.split():
                comparators.extend(_expand(token))
            self.sets.append(comparators)

    def _set_allows(self, comparators: list[Comparator], v: Version, include_prerelease: bool) -> bool:
        if not all(c.test(v) for c in comparators):
            return False
        if not v.prerelease or include_prerelease:
            return True
        return any(c.version.prerelease and c.version.core == v.core for c in comparators)

    def test(self, version: Version | str, include_prerelease: bool = False) -> bool:
        """Return True when the version lies in any alternative of the range."""
        v = coerce(version)
        return any(self._set_allows(s, v, include_prerelease) for s in self.sets)


def satisfies(version: Version | str, range_text: str, include_prerelease: bool = False) -> bool:
    """Return True when ``version`` satisfies the range expression."""
    return Range(range_text).test(version, include_prerelease)


def max_satisfying(versions: Iterable[Version | str], range_text: str) -> Version | None:
    """Return the highest version matching the range, or None."""
    rng = Range(range_text)
    best: Version | None = None
    for item in versions:
        v = coerce(item)
        if rng.test(v) and (best is None or v > best):
            best = v
    return best


def min_satisfying(versions: Iterable[Version | str], range_text: str) -> Version | None:
    """Return the lowest version matching the range, or None."""
    rng = Range(range_text)
    best: Version | None = None
    for item in versions:
        v = coerce(item)
        if rng.test(v) and (best is None or v < best):
            best = v
    return best
