"""Parsing, precedence and bumping of semantic versions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

Identifier = int | str

ALLOWED = set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")


class VersionError(ValueError):
    """Raised for text that is not a valid semantic version."""


def _numeric(text: str, what: str) -> int:
    if not text.isdigit() or not text.isascii():
        raise VersionError(f"{what} must be a non-negative integer: {text!r}")
    if len(text) > 1 and text[0] == "0":
        raise VersionError(f"{what} must not have leading zeros: {text!r}")
    return int(text)


def _identifiers(text: str, what: str, numeric: bool) -> tuple[Identifier, ...]:
    parts = text.split(".")
    result: list[Identifier] = []
    for part in parts:
        if not part or not set(part) <= ALLOWED:
            raise VersionError(f"invalid {what} identifier: {part!r}")
        if numeric and part.isdigit():
            result.append(_numeric(part, what))
        else:
            result.append(part)
    return tuple(result)


@dataclass(frozen=True)
class Version:
    """A semantic version; ordering follows semver precedence and ignores build."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[Identifier, ...] = ()
    build: tuple[str, ...] = ()

    @property
    def core(self) -> tuple[int, int, int]:
        """The (major, minor, patch) triple."""
        return (self.major, self.minor, self.patch)

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(str(p) for p in self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __lt__(self, other: Version) -> bool:
        return compare(self, other) < 0

    def __le__(self, other: Version) -> bool:
        return compare(self, other) <= 0

    def __gt__(self, other: Version) -> bool:
        return compare(self, other) > 0

    def __ge__(self, other: Version) -> bool:
        return compare(self, other) >= 0


def parse(text: str, loose: bool = False) -> Version:
    """Parse ``MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]``; ``loose`` allows a leading v and spaces."""
    if loose:
        text = text.strip()
        if text[:1] in ("v", "V"):
            text = text[1:]
    rest, plus, build_text = text.partition("+")
    core_text, dash, pre_text = rest.partition("-")
    nums = core_text.split(".")
    if len(nums) != 3:
        raise VersionError(f"expected MAJOR.MINOR.PATCH: {text!r}")
    major, minor, patch = (_numeric(n, "version number") for n in nums)
    prerelease = _identifiers(pre_text, "prerelease", True) if dash else ()
    build = _identifiers(build_text, "build", False) if plus else ()
    return Version(major, minor, patch, prerelease, tuple(str(b) for b in build))


def _compare_ids(a: Identifier, b: Identifier) -> int:
    if isinstance(a, int) and isinstance(b, int):
        return (a > b) - (a < b)
    if isinstance(a, int):
        return -1
    if isinstance(b, int):
        return 1
    return (a > b) - (a < b)


def compare(a: Version, b: Version) -> int:
    """Return -1, 0 or 1 comparing two versions by semver precedence."""
    if a.core != b.core:
        return -1 if a.core < b.core else 1
    if not a.prerelease or not b.prerelease:
        return (not a.prerelease) - (not b.prerelease)
    for x, y in zip(a.prerelease, b.prerelease):
        result = _compare_ids(x, y)
        if result != 0:
            return result
    return (len(a.prerelease) > len(b.prerelease)) - (len(a.prerelease) < len(b.prerelease))


def coerce(value: Version | str) -> Version:
    """Return ``value`` as a Version, parsing strings."""
    return value if isinstance(value, Version) else parse(value)


def sort_versions(items: Iterable[Version | str], reverse: bool = False) -> list[Version]:
    """Sort versions by precedence, oldest first unless ``reverse``."""
    return sorted((coerce(v) for v in items), reverse=reverse)


def bump(version: Version | str, part: str, tag: str = "rc") -> Version:
    """Return the next version for ``part``: major, minor, patch or prerelease."""
    v = coerce(version)
    if part == "major":
        if v.prerelease and v.minor == 0 and v.patch == 0:
            return Version(v.major, 0, 0)
        return Version(v.major + 1, 0, 0)
    if part == "minor":
        if v.prerelease and v.patch == 0:
            return Version(v.major, v.minor, 0)
        return Version(v.major, v.minor + 1, 0)
    if part == "patch":
        if v.prerelease:
            return Version(v.major, v.minor, v.patch)
        return Version(v.major, v.minor, v.patch + 1)
    if part == "prerelease":
        if not v.prerelease:
            return Version(v.major, v.minor, v.patch + 1, (tag, 0))
        last = v.prerelease[-1]
        if isinstance(last, int):
            return Version(v.major, v.minor, v.patch, v.prerelease[:-1] + (last + 1,))
        return Version(v.major, v.minor, v.patch, v.prerelease + (0,))
    raise ValueError(f"unknown part: {part!r}")
