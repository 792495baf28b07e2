"""Tokenising text into words and sentences."""
from __future__ import annotations

from typing import Iterable

STOPWORDS: frozenset[str] = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "in", "is",
     "it", "of", "on", "or", "that", "the", "to", "was", "with"}
)

SENTENCE_ENDINGS = ".!?"


def _is_letter(char: str) -> bool:
    return "a" <= char <= "z"


def tokenize(text: str) -> list[str]:
    """Split text into lowercase words; apostrophes inside a word are kept."""
    lowered = text.lower()
    words: list[str] = []
    current: list[str] = []
    for index, char in enumerate(lowered):
        if _is_letter(char):
            current.append(char)
            continue
        nxt = lowered[index + 1] if index + 1 < len(lowered) else ""
        if char == "'" and current and _is_letter(nxt):
            current.append(char)
            continue
        if current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return words


def split_sentences(text: str) -> list[str]:
    """Split text into sentences ending in '.', '!' or '?' (a trailing fragment counts too)."""
    sentences: list[str] = []
    start = 0
    for index, char in enumerate(text):
        if char in SENTENCE_ENDINGS:
            piece = text[start:index].strip()
            if piece:
                sentences.append(piece)
            start = index + 1
    rest = text[start:].strip()
    if rest:
        sentences.append(rest)
    return sentences


def remove_stopwords(words: Iterable[str], stopwords: Iterable[str] = STOPWORDS) -> list[str]:
    """Drop every word that is in the stop-word set, keeping the order of the rest."""
    blocked = set(stopwords)
    return [word for word in words if word not in blocked]
