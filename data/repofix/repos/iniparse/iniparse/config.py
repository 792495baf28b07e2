"""The in-memory configuration model with typed getters."""

from __future__ import annotations

from typing import Any, Callable

from .errors import NoOptionError, NoSectionError
from .interpolation import expand

DEFAULT_SECTION = "DEFAULT"
TRUE_WORDS = frozenset({"1", "yes", "true", "on"})
FALSE_WORDS = frozenset({"0", "no", "false", "off"})
_MISSING: Any = object()


def to_bool(text: str) -> bool:
    """Convert yes/no, on/off, true/false, 1/0 (any case) to a bool."""
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"not a boolean: {text!r}")


def to_list(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` and newlines, stripping items and dropping empty ones."""
    items: list[str] = []
    for line in text.splitlines():
        items.extend(part.strip() for part in line.split(sep))
    return [item for item in items if item]


class Config:
    """Ordered sections of options plus a DEFAULT section inherited by all."""

    def __init__(self) -> None:
        self.defaults: dict[str, str] = {}
        self._sections: dict[str, dict[str, str]] = {}

    def sections(self) -> list[str]:
        """Names of the sections in insertion order (DEFAULT excluded)."""
        return list(self._sections)

    def has_section(self, section: str) -> bool:
        """True if ``section`` exists (DEFAULT does not count)."""
        return section in self._sections

    def add_section(self, section: str) -> None:
        """Create an empty section; refuses DEFAULT and duplicates."""
        if section == DEFAULT_SECTION:
            raise ValueError("cannot add the DEFAULT section")
        if section in self._sections:
            raise ValueError(f"section {section!r} already exists")
        self._sections[section] = {}

    def _table(self, section: str) -> dict[str, str]:
        if section == DEFAULT_SECTION:
            return self.defaults
        try:
            return self._sections[section]
        except KeyError:
            raise NoSectionError(section) from None

    def options(self, section: str) -> list[str]:
        """Own option names followed by inherited DEFAULT names."""
        own = list(self._table(section))
        return own + [key for key in self.defaults if key not in own]

    def has_option(self, section: str, key: str) -> bool:
        """True if ``key`` is set in ``section`` or inherited from DEFAULT."""
        if section != DEFAULT_SECTION and section not in self._sections:
            return False
        return key.lower() in self.options(section)

    def set(self, section: str, key: str, value: str) -> None:
        """Set ``key`` (case-insensitive) to the string ``value``."""
        self._table(section)[key.lower()] = value

    def remove_option(self, section: str, key: str) -> bool:
        """Remove an own option; returns whether it existed."""
        return self._table(section).pop(key.lower(), None) is not None

    def get_raw(self, section: str, key: str) -> str:
        """Uninterpolated value, looking in ``section`` then DEFAULT."""
        table = self._table(section)
        key = key.lower()
        if key in table:
            return table[key]
        if key in self.defaults:
            return self.defaults[key]
        raise NoOptionError(f"{section}:{key}")

    def get(self, section: str, key: str, fallback: Any = _MISSING, raw: bool = False) -> Any:
        """Interpolated value, or ``fallback`` when the option is missing."""
        if not self.has_option(section, key):
            if fallback is _MISSING:
                self._table(section)
                raise NoOptionError(f"{section}:{key.lower()}")
            return fallback
        if raw:
            return self.get_raw(section, key)
        return expand(self, section, key.lower())

    def _convert(self, section: str, key: str, fallback: Any, func: Callable[[str], Any]) -> Any:
        if fallback is not _MISSING and not self.has_option(section, key):
            return fallback
        return func(self.get(section, key))

    def getint(self, section: str, key: str, fallback: Any = _MISSING) -> Any:
        """Value converted with ``int`` (fallback is returned unconverted)."""
        return self._convert(section, key, fallback, int)

    def getfloat(self, section: str, key: str, fallback: Any = _MISSING) -> Any:
        """Value converted with ``float``."""
        return self._convert(section, key, fallback, float)

    def getboolean(self, section: str, key: str, fallback: Any = _MISSING) -> Any:
        """Value converted with :func:`to_bool`."""
        return self._convert(section, key, fallback, to_bool)

    def getlist(self, section: str, key: str, fallback: Any = _MISSING, sep: str = ",") -> Any:
        """Value split into a list with :func:`to_list`."""
        return self._convert(section, key, fallback, lambda text: to_list(text, sep))

    def items(self, section: str) -> list[tuple[str, str]]:
        """(key, interpolated value) pairs, own options first."""
        return [(key, self.get(section, key)) for key in self.options(section)]

    def section_dict(self, section: str) -> dict[str, str]:
        """Own options of ``section`` (raw, no DEFAULT), as a copy."""
        return dict(self._table(section))
