"""Track model and duration formatting."""
from __future__ import annotations

from dataclasses import dataclass

SECONDS_PER_MINUTE = 60
SECONDS_PER_HOUR = 3600


@dataclass(frozen=True)
class Track:
    """A single track with a title, an artist and a length in seconds."""

    title: str
    artist: str
    seconds: int

    def __post_init__(self) -> None:
        if not self.title.strip():
            raise ValueError("title must not be empty")
        if not self.artist.strip():
            raise ValueError("artist must not be empty")
        if self.seconds <= 0:
            raise ValueError("seconds must be positive")


def format_duration(seconds: int) -> str:
    """Format a number of seconds as ``h:mm:ss``."""
    if seconds < 0:
        raise ValueError("duration cannot be negative")
    hours, rest = divmod(seconds, SECONDS_PER_HOUR)
    minutes, secs = divmod(rest, SECONDS_PER_MINUTE)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def parse_duration(text: str) -> int:
    """Parse ``m:ss`` or ``h:mm:ss`` into a number of seconds."""
    parts = text.strip().split(":")
    if len(parts) < 2 or len(parts) > 3:
        raise ValueError(f"bad duration: {text!r}")
    if not all(part.isdigit() for part in parts):
        raise ValueError(f"bad duration: {text!r}")
    numbers = [int(part) for part in parts]
    for value in numbers[1:]:
        if value >= SECONDS_PER_MINUTE:
            raise ValueError(f"bad duration: {text!r}")
    total = 0
    for value in numbers:
        total = total * SECONDS_PER_MINUTE + value
    return total
