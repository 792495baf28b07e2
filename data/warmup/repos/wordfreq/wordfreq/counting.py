"""Word and n-gram counting."""
from __future__ import annotations

from typing import Hashable, Mapping, Sequence, TypeVar

K = TypeVar("K", bound=Hashable)


def word_counts(words: Sequence[str]) -> dict[str, int]:
    """Count occurrences of each word, keys in order of first appearance."""
    counts: dict[str, int] = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    return counts


def top_k(counts: Mapping[K, int], k: int = 3) -> list[tuple[K, int]]:
    """The ``k`` most frequent items; equal counts are ordered alphabetically."""
    if k < 0:
        raise ValueError("k must not be negative")
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ranked[:k]


def ngrams(words: Sequence[str], n: int = 2) -> list[tuple[str, ...]]:
    """All runs of ``n`` consecutive words, in text order."""
    if n < 1:
        raise ValueError("n must be at least 1")
    if len(words) < n:
        return []
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


def ngram_counts(words: Sequence[str], n: int = 2, min_count: int = 1) -> dict[tuple[str, ...], int]:
    """Count n-grams, keeping only those seen at least ``min_count`` times."""
    counts: dict[tuple[str, ...], int] = {}
    for gram in ngrams(words, n):
        counts[gram] = counts.get(gram, 0) + 1
    return {gram: count for gram, count in counts.items() if count >= min_count}
