"""A simple readability measure based on sentence length."""
from __future__ import annotations

from .tokens import split_sentences, tokenize

EASY_LIMIT = 10.0
MEDIUM_LIMIT = 20.0


def words_per_sentence(text: str, digits: int = 2) -> float:
    """Average number of words per non-empty sentence, rounded to ``digits``."""
    sentences = [s for s in split_sentences(text) if tokenize(s)]
    if not sentences:
        return 0.0
    total_words = sum(len(tokenize(sentence)) for sentence in sentences)
    return round(total_words / len(sentences), digits)


def readability_label(text: str) -> str:
    """Classify text as 'empty', 'easy' (<= 10 words/sentence), 'medium' (<= 20) or 'hard'."""
    score = words_per_sentence(text)
    if score == 0:
        return "empty"
    if score <= EASY_LIMIT:
        return "easy"
    if score <= MEDIUM_LIMIT:
        return "medium"
    return "hard"
