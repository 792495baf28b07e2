"""Turning INI text into a :class:`Config`."""

from __future__ import annotations

from .config import DEFAULT_SECTION, Config
from .errors import ParseError

COMMENT_CHARS = "#;"


def strip_inline_comment(value: str) -> str:
    """Drop a trailing ``# ...`` / ``; ...`` comment preceded by whitespace."""
    for i in range(1, len(value)):
        if value[i] in COMMENT_CHARS and value[i - 1] in " \t":
            return value[:i].rstrip()
    return value


def split_option(line: str, line_no: int) -> tuple[str, str]:
    """Split ``key = value`` or ``key: value`` at the first delimiter."""
    positions = [pos for pos in (line.find("="), line.find(":")) if pos >= 0]
    if not positions:
        raise ParseError(line_no, "expected 'key = value' or 'key: value'")
    pos = min(positions)
    key = line[:pos].strip().lower()
    if not key:
        raise ParseError(line_no, "empty option name")
    return key, strip_inline_comment(line[pos + 1 :].strip())


def parse_header(line: str, line_no: int) -> str:
    """Return the section name of a ``[name]`` header line."""
    if not line.endswith("]"):
        raise ParseError(line_no, "unterminated section header")
    name = line[1:-1].strip()
    if not name:
        raise ParseError(line_no, "empty section name")
    return name


def parse(text: str) -> Config:
    """Parse INI ``text`` into a new :class:`Config`."""
    config = Config()
    section: str | None = None
    last_key: str | None = None
    for line_no, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            last_key = None
            continue
        if stripped[0] in COMMENT_CHARS:
            continue
        if line[0] in " \t":
            if section is None or last_key is None:
                raise ParseError(line_no, "unexpected continuation line")
            previous = config.section_dict(section)[last_key]
            joined = previous + "\n" + strip_inline_comment(stripped)
            config.set(section, last_key, joined.strip())
            continue
        last_key = None
        if stripped[0] == "[":
            section = parse_header(stripped, line_no)
            if section == DEFAULT_SECTION:
                continue
            if config.has_section(section):
                raise ParseError(line_no, f"duplicate section {section!r}")
            config.add_section(section)
            continue
        if section is None:
            raise ParseError(line_no, "option outside of any section")
        key, value = split_option(stripped, line_no)
        if key in config.section_dict(section):
            raise ParseError(line_no, f"duplicate option {key!r}")
        config.set(section, key, value)
        last_key = key
    return config
