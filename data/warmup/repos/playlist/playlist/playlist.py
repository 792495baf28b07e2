"""The Playlist container: ordered tracks with editing operations."""
from __future__ import annotations

from typing import Iterable

from .track import Track, format_duration

DEFAULT_MAX_TRACKS = 100


class PlaylistFullError(Exception):
    """Raised when adding a track to a playlist that is already full."""


class Playlist:
    """An ordered list of tracks with a maximum size."""

    def __init__(self, tracks: Iterable[Track] = (), max_tracks: int = DEFAULT_MAX_TRACKS) -> None:
        if max_tracks < 1:
            raise ValueError("max_tracks must be at least 1")
        self.max_tracks = max_tracks
        self._tracks: list[Track] = []
        for track in tracks:
            self.add(track)

    def __len__(self) -> int:
        return len(self._tracks)

    @property
    def tracks(self) -> list[Track]:
        """A copy of the tracks in playlist order."""
        return list(self._tracks)

    def titles(self) -> list[str]:
        """The track titles in playlist order."""
        return [track.title for track in self._tracks]

    def add(self, track: Track, position: int | None = None) -> None:
        """Insert a track at ``position`` (default: append at the end)."""
        if len(self._tracks) >= self.max_tracks:
            raise PlaylistFullError(f"playlist holds at most {self.max_tracks} tracks")
        if position is None:
            self._tracks.append(track)
            return
        if position < 0 or position > len(self._tracks):
            raise IndexError(f"position {position} out of range")
        self._tracks.insert(position, track)

    def remove(self, title: str) -> Track:
        """Remove and return the first track with the given title."""
        for index, track in enumerate(self._tracks):
            if track.title == title:
                return self._tracks.pop(index)
        raise KeyError(title)

    def move(self, source: int, target: int) -> None:
        """Move the track at index ``source`` so that it ends up at index ``target``."""
        size = len(self._tracks)
        if not 0 <= source < size:
            raise IndexError(f"source {source} out of range")
        if not 0 <= target < size:
            raise IndexError(f"target {target} out of range")
        track = self._tracks.pop(source)
        self._tracks.insert(target, track)

    def total_seconds(self) -> int:
        """The summed length of all tracks in seconds."""
        return sum(track.seconds for track in self._tracks)

    def total_duration(self) -> str:
        """The summed length of all tracks formatted as ``h:mm:ss``."""
        return format_duration(self.total_seconds())

    def filter_by_duration(self, min_seconds: int = 0, max_seconds: int | None = None) -> list[Track]:
        """Tracks whose length lies in ``[min_seconds, max_seconds]`` (both inclusive)."""
        if max_seconds is not None and max_seconds < min_seconds:
            raise ValueError("max_seconds must not be below min_seconds")
        result = []
        for track in self._tracks:
            if track.seconds < min_seconds:
                continue
            if max_seconds is not None and track.seconds > max_seconds:
                continue
            result.append(track)
        return result
