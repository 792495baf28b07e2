"""Word statistics for plain English text."""
from .tokens import STOPWORDS, remove_stopwords, split_sentences, tokenize
from .counting import ngram_counts, ngrams, top_k, word_counts
from .readability import readability_label, words_per_sentence

__all__ = [
    "STOPWORDS",
    "tokenize",
    "split_sentences",
    "remove_stopwords",
    "word_counts",
    "top_k",
    "ngrams",
    "ngram_counts",
    "words_per_sentence",
    "readability_label",
]
