"""Expansion of ``${key}`` and ``${section:key}`` references."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .errors import (
    InterpolationCycleError,
    InterpolationDepthError,
    InterpolationError,
    NoOptionError,
    NoSectionError,
)

if TYPE_CHECKING:
    from .config import Config

MAX_DEPTH = 10
_TOKEN = re.compile(r"\$(?:(\$)|\{([^}]*)\}|(.?))")


def split_reference(ref: str, section: str) -> tuple[str, str]:
    """Split ``sec:key`` (or plain ``key``) into a (section, key) pair."""
    if ":" in ref:
        sec, _, key = ref.partition(":")
        sec, key = sec.strip(), key.strip()
    else:
        sec, key = section, ref.strip()
    if not sec or not key:
        raise InterpolationError(f"bad reference ${{{ref}}}")
    return sec, key.lower()


def expand(
    config: Config, section: str, key: str, stack: tuple[tuple[str, str], ...] = ()
) -> str:
    """Return the fully expanded value of ``key`` in ``section``."""
    here = (section, key)
    if here in stack:
        chain = " -> ".join(f"{s}:{k}" for s, k in stack + (here,))
        raise InterpolationCycleError(f"reference cycle: {chain}")
    if len(stack) >= MAX_DEPTH:
        raise InterpolationDepthError(f"references nested deeper than {MAX_DEPTH}")
    raw = config.get_raw(section, key)
    return expand_text(config, section, raw, stack + (here,))


def expand_text(
    config: Config, section: str, text: str, stack: tuple[tuple[str, str], ...] = ()
) -> str:
    """Expand every reference found in ``text`` relative to ``section``."""

    def replace(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return "$"
        if match.group(3) is not None:
            raise InterpolationError(f"bad '$' usage in {text!r}")
        sec, key = split_reference(match.group(2), section)
        try:
            return expand(config, sec, key, stack)
        except (NoSectionError, NoOptionError) as exc:
            raise InterpolationError(f"unresolved reference ${{{match.group(2)}}}") from exc

    return _TOKEN.sub(replace, text)
