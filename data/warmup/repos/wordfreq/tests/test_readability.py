from wordfreq import readability_label, words_per_sentence


def sentence(n: int) -> str:
    return " ".join(["word"] * n) + "."


def test_words_per_sentence_average():
    """The score is the mean number of words per sentence."""
    assert words_per_sentence("One two three. Four five.") == 2.5
    assert words_per_sentence("Just one sentence here") == 4.0


def test_words_per_sentence_rounding():
    """The average is rounded to two digits by default, or to the requested digits."""
    assert words_per_sentence("a b. c. d.") == 1.33
    assert words_per_sentence("a b. c. d.", digits=1) == 1.3


def test_words_per_sentence_ignores_wordless_sentences():
    """Empty text scores zero and sentences without words are not counted."""
    assert words_per_sentence("") == 0.0
    assert words_per_sentence("123. One two.") == 2.0
    assert words_per_sentence("!!! ...") == 0.0


def test_readability_label_thresholds():
    """Up to 10 words per sentence is easy, up to 20 medium, above that hard."""
    assert readability_label("") == "empty"
    assert readability_label(sentence(1)) == "easy"
    assert readability_label(sentence(10)) == "easy"
    assert readability_label(sentence(11)) == "medium"
    assert readability_label(sentence(20)) == "medium"
    assert readability_label(sentence(21)) == "hard"


def test_readability_label_uses_the_average():
    """A long and a short sentence are judged by their average length."""
    assert readability_label(sentence(11) + " " + sentence(10)) == "medium"
    assert readability_label(sentence(30) + " " + sentence(10)) == "medium"
    assert readability_label(sentence(31) + " " + sentence(10)) == "hard"
