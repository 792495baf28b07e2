import pytest

from wordfreq import STOPWORDS, remove_stopwords, split_sentences, tokenize


def test_tokenize_lowercases_and_strips_punctuation():
    """Words are lowercased and separated by anything that is not a letter."""
    assert tokenize("Hello, World!") == ["hello", "world"]
    assert tokenize("abc123def") == ["abc", "def"]
    assert tokenize("") == []


def test_tokenize_keeps_alphabet_boundary_letters():
    """The letters 'a' and 'z' belong to words, including the last character of the text."""
    assert tokenize("Zap a jazz") == ["zap", "a", "jazz"]
    assert tokenize("x") == ["x"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Don't stop", ["don't", "stop"]),
        ("rock'n'roll", ["rock'n'roll"]),
        ("'quoted' words", ["quoted", "words"]),
        ("dogs' bones", ["dogs", "bones"]),
        ("a''b", ["a", "b"]),
        ("It's", ["it's"]),
    ],
    ids=["contraction", "double_inner", "quotes", "trailing", "double_apostrophe", "at_end"],
)
def test_tokenize_apostrophes(text, expected):
    """Only apostrophes between two letters stay inside a word."""
    assert tokenize(text) == expected


def test_split_sentences_on_terminators():
    """Sentences end at '.', '!' or '?', and a trailing fragment is its own sentence."""
    assert split_sentences("Hi. How are you? Fine!") == ["Hi", "How are you", "Fine"]
    assert split_sentences("No ending here") == ["No ending here"]
    assert split_sentences("Done. Tail") == ["Done", "Tail"]
    assert split_sentences("One.Two!Three") == ["One", "Two", "Three"]


def test_split_sentences_skips_empty_pieces():
    """Repeated punctuation and blank text produce no empty sentences."""
    assert split_sentences("Wait... what?!") == ["Wait", "what"]
    assert split_sentences("") == []
    assert split_sentences("  .  ") == []


def test_remove_stopwords_default_and_custom():
    """Default stop words are removed; a custom list replaces the default one."""
    words = ["the", "cat", "and", "a", "hat"]
    assert remove_stopwords(words) == ["cat", "hat"]
    assert remove_stopwords(words, stopwords=["cat"]) == ["the", "and", "a", "hat"]
    assert remove_stopwords(words, stopwords=[]) == words
    assert "the" in STOPWORDS and "cat" not in STOPWORDS
