"""Serialising a :class:`Config` back to INI text."""

from __future__ import annotations

from .config import DEFAULT_SECTION, Config

INDENT = "    "


def format_value(value: str) -> str:
    """Render a (possibly multi-line) value with indented continuation lines."""
    lines = value.split("\n")
    for extra in lines[1:]:
        if not extra.strip():
            raise ValueError("multi-line values cannot contain blank lines")
    return ("\n" + INDENT).join(lines)


def format_section(name: str, options: dict[str, str]) -> str:
    """Render one ``[name]`` block ending with a newline."""
    lines = [f"[{name}]"]
    for key, value in options.items():
        text = format_value(value)
        lines.append(f"{key} = {text}" if text else f"{key} =")
    return "\n".join(lines) + "\n"


def dumps(config: Config) -> str:
    """Serialise ``config``; DEFAULT comes first and only when non-empty."""
    blocks: list[str] = []
    if config.defaults:
        blocks.append(format_section(DEFAULT_SECTION, config.defaults))
    for name in config.sections():
        blocks.append(format_section(name, config.section_dict(name)))
    return "\n".join(blocks)
