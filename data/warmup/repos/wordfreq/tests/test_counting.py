import pytest

from wordfreq import ngram_counts, ngrams, remove_stopwords, tokenize, top_k, word_counts


def test_word_counts_in_first_appearance_order():
    """Counts are exact and keys keep the order in which words first appear."""
    counts = word_counts(["b", "a", "b", "c", "b"])
    assert counts == {"b": 3, "a": 1, "c": 1}
    assert list(counts) == ["b", "a", "c"]
    assert word_counts([]) == {}


def test_top_k_orders_by_count_then_alphabetically():
    """Higher counts come first; equal counts are ordered alphabetically."""
    counts = {"pear": 2, "apple": 2, "fig": 3, "kiwi": 1}
    assert top_k(counts) == [("fig", 3), ("apple", 2), ("pear", 2)]
    assert top_k(counts, 1) == [("fig", 3)]


def test_top_k_limits():
    """k=0 gives nothing, k beyond the size gives everything, negative k is an error."""
    counts = {"b": 1, "a": 1}
    assert top_k(counts, 0) == []
    assert top_k(counts, 10) == [("a", 1), ("b", 1)]
    with pytest.raises(ValueError):
        top_k(counts, -1)


def test_ngrams_sizes():
    """n-grams are consecutive runs of n words; longer n than the text yields nothing."""
    words = ["a", "b", "c"]
    assert ngrams(words) == [("a", "b"), ("b", "c")]
    assert ngrams(words, 1) == [("a",), ("b",), ("c",)]
    assert ngrams(words, 3) == [("a", "b", "c")]
    assert ngrams(words, 4) == []


def test_ngrams_rejects_non_positive_n():
    """n must be at least one."""
    with pytest.raises(ValueError):
        ngrams(["a"], 0)


def test_ngram_counts_with_min_count():
    """Repeated n-grams are counted and min_count is an inclusive threshold."""
    words = "to be or not to be".split()
    assert ngram_counts(words) == {
        ("to", "be"): 2,
        ("be", "or"): 1,
        ("or", "not"): 1,
        ("not", "to"): 1,
    }
    assert ngram_counts(words, min_count=2) == {("to", "be"): 2}
    assert ngram_counts(words, min_count=3) == {}
    assert ngram_counts(words, n=3, min_count=1)[("to", "be", "or")] == 1


def test_pipeline_top_words_without_stopwords():
    """Tokenising, dropping stop words and ranking gives the most frequent content words."""
    text = "The cat and the hat. The cat sat on the mat, and the bat sat!"
    words = remove_stopwords(tokenize(text))
    assert top_k(word_counts(words), 2) == [("cat", 2), ("sat", 2)]
