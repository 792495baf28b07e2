import pytest

from textwrapper import chunk_word, fill, hanging_indent, line_length, split_words, wrap

PANGRAM = "the quick brown fox jumps over the lazy dog"


def test_split_words_collapses_whitespace():
    """Runs of spaces, tabs and newlines separate words; edges are ignored."""
    assert split_words("  a\tbb \n ccc  ") == ["a", "bb", "ccc"]
    assert split_words("") == []
    assert split_words("   ") == []
    assert split_words("x") == ["x"]


def test_chunk_word_pieces_and_validation():
    """Words split into fixed-size pieces, the last possibly shorter; width must be >= 1."""
    assert chunk_word("abcdefg", 3) == ["abc", "def", "g"]
    assert chunk_word("abcdef", 3) == ["abc", "def"]
    assert chunk_word("ab", 5) == ["ab"]
    assert chunk_word("abc", 1) == ["a", "b", "c"]
    with pytest.raises(ValueError):
        chunk_word("abc", 0)
    with pytest.raises(ValueError):
        chunk_word("abc", -1)


def test_line_length_counts_single_spaces():
    """Joined length counts one space between neighbouring words."""
    assert line_length(["ab", "cde"]) == 6
    assert line_length(["abc"]) == 3
    assert line_length([]) == 0


def test_greedy_wrap():
    """Words are packed greedily so that no line exceeds the width."""
    assert wrap(PANGRAM, 10) == ["the quick", "brown fox", "jumps over", "the lazy", "dog"]


def test_wrap_exact_fit_boundary():
    """A word that makes the line exactly the width stays; one more char moves it."""
    assert wrap("aaa bbb ccc", 7) == ["aaa bbb", "ccc"]
    assert wrap("aaa bbb ccc", 6) == ["aaa", "bbb", "ccc"]
    assert wrap("aaa bbb ccc", 11) == ["aaa bbb ccc"]


def test_wrap_empty_text_and_default_width():
    """Empty text wraps to no lines; the default width is 70."""
    assert wrap("") == []
    exact = " ".join(["abcd"] * 13 + ["abcde", "xy"])
    assert [len(line) for line in wrap(exact)] == [70, 2]
    almost = " ".join(["abcd"] * 14 + ["x"])
    assert [len(line) for line in wrap(almost)] == [69, 1]
    assert [len(line) for line in fill(exact).split("\n")] == [70, 2]
    assert [len(line) for line in fill(almost).split("\n")] == [69, 1]


def test_long_words_are_split():
    """Words longer than the width are cut into width-sized pieces."""
    assert wrap("abcdefghijk xy", 4) == ["abcd", "efgh", "ijk", "xy"]
    assert wrap("ab abcdefgh", 4) == ["ab", "abcd", "efgh"]
    assert wrap("abcd", 4) == ["abcd"]


def test_long_words_kept_when_breaking_disabled():
    """With break_long_words=False a long word overflows on its own line."""
    assert wrap("hi abcdefghij yo", 5, break_long_words=False) == ["hi", "abcdefghij", "yo"]


def test_indents_reduce_available_width():
    """First and subsequent indents count toward the width, also for split words."""
    assert wrap("abcdefghijklmnop", 5, indent=">", subsequent_indent="..") == [
        ">abcd",
        "..efg",
        "..hij",
        "..klm",
        "..nop",
    ]
    assert wrap("aa bb cc", 5, indent="* ", subsequent_indent="  ") == ["* aa", "  bb", "  cc"]
    assert wrap("xy", 2, indent=">", subsequent_indent="<") == [">x", "<y"]
    with pytest.raises(ValueError):
        wrap("x", 2, indent="ab")
    with pytest.raises(ValueError):
        wrap("x", 3, subsequent_indent="abc")


def test_fill_joins_with_newlines():
    """fill returns the wrapped lines joined by newline characters."""
    assert fill(PANGRAM, 15) == "the quick brown\nfox jumps over\nthe lazy dog"
    assert fill("abcdefg", 3, break_long_words=False) == "abcdefg"


def test_hanging_indent():
    """Lines after the first are indented by the hang amount (default 4)."""
    assert hanging_indent("one two three four five six seven", 12, 3) == [
        "one two",
        "   three",
        "   four five",
        "   six seven",
    ]
    assert hanging_indent("alpha beta gamma", 10) == ["alpha beta", "    gamma"]
    assert hanging_indent("a b c", 3, hang=0) == ["a b", "c"]
    with pytest.raises(ValueError):
        hanging_indent("a", 10, hang=-1)
