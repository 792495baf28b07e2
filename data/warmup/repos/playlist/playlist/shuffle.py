"""Deterministic "smart shuffle" that spreads out artists."""
from __future__ import annotations

from .track import Track


def artist_runs(tracks: list[Track]) -> int:
    """Count adjacent pairs of tracks that share the same artist."""
    runs = 0
    for index in range(1, len(tracks)):
        if tracks[index].artist == tracks[index - 1].artist:
            runs += 1
    return runs


def _group_by_artist(tracks: list[Track]) -> list[list[Track]]:
    """Group tracks per artist, artists in order of first appearance."""
    groups: dict[str, list[Track]] = {}
    for track in tracks:
        groups.setdefault(track.artist, []).append(track)
    return list(groups.values())


def smart_shuffle(tracks: list[Track]) -> list[Track]:
    """Reorder tracks so that the same artist rarely plays twice in a row.

    Rule: at every step take the next track of the artist with the most
    remaining tracks, skipping the artist that just played; ties go to the
    artist that appeared first.  Only when no other artist is left is the
    same artist played again.  Each artist's tracks keep their relative order.
    """
    groups = _group_by_artist(tracks)
    result: list[Track] = []
    previous: str | None = None
    for _ in range(len(tracks)):
        best = -1
        for index, group in enumerate(groups):
            if not group or group[0].artist == previous:
                continue
            if best == -1 or len(group) > len(groups[best]):
                best = index
        if best == -1:
            best = next(i for i, group in enumerate(groups) if group)
        track = groups[best].pop(0)
        result.append(track)
        previous = track.artist
    return result
