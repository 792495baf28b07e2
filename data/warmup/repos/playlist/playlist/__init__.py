"""A small music playlist library."""
from .track import Track, format_duration, parse_duration
from .playlist import Playlist, PlaylistFullError
from .shuffle import smart_shuffle, artist_runs

__all__ = [
    "Track",
    "format_duration",
    "parse_duration",
    "Playlist",
    "PlaylistFullError",
    "smart_shuffle",
    "artist_runs",
]
