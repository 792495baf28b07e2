from textdiff import lcs, lcs_length, lcs_table, similarity


def test_lcs_classic_example():
    """The classic ABCBDAB / BDCABA pair has an LCS of length 4."""
    a, b = list("ABCBDAB"), list("BDCABA")
    assert lcs_length(a, b) == 4
    assert lcs(a, b) == ["B", "D", "A", "B"]


def test_lcs_with_empty_inputs():
    """Anything compared with an empty sequence has an empty LCS."""
    assert lcs([], ["a"]) == []
    assert lcs(["a"], []) == []
    assert lcs_length([], []) == 0


def test_lcs_skips_extra_lines_of_b():
    """Lines only present in b are skipped to reach the common tail."""
    assert lcs(["b", "c"], ["x", "y", "b", "c"]) == ["b", "c"]
    assert lcs(["a", "b"], ["x", "a", "y", "b"]) == ["a", "b"]


def test_lcs_identical_and_disjoint():
    """Identical inputs are their own LCS; disjoint ones share nothing; ties skip lines of a."""
    assert lcs(["x", "y", "z"], ["x", "y", "z"]) == ["x", "y", "z"]
    assert lcs(["a", "b"], ["c", "d"]) == []
    assert lcs(["a", "b", "c"], ["c", "a"]) == ["c"]


def test_lcs_table_is_suffix_based():
    """table[i][j] holds the LCS length of a[i:] and b[j:], with a zero border."""
    assert lcs_table(["a", "b"], ["b"]) == [[1, 0], [1, 0], [0, 0]]
    assert lcs_table(["a"], ["a", "a"]) == [[1, 1, 0], [0, 0, 0]]


def test_similarity_ratio():
    """similarity is 2*LCS/(len a + len b), with two empty inputs counted as identical."""
    assert similarity([], []) == 1.0
    assert similarity(["a"], []) == 0.0
    assert similarity(["a", "b"], ["a", "c"]) == 0.5
    assert similarity(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert similarity(["a"], ["a", "b", "c"]) == 0.5
