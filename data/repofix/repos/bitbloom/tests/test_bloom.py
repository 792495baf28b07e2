import pytest

from bitbloom import BitSet, BloomFilter


def test_added_items_are_members():
    """Every added item is reported present and a new add returns True."""
    bf = BloomFilter(64, 3)
    assert bf.add("alpha") is True
    assert bf.add("beta") is True
    assert "alpha" in bf and "beta" in bf
    assert "gamma" not in bf
    assert len(bf) == 2


def test_duplicate_add_is_not_counted():
    """Adding an item twice returns False and does not grow the count."""
    bf = BloomFilter(64, 3)
    assert bf.update(["a", "b", "c", "a"]) == 3
    assert bf.add("b") is False
    assert bf.count == 3


def test_bits_match_hash_positions_and_false_positive():
    """A small filter sets exactly the hashed bits, so 'd' collides as a false positive."""
    bf = BloomFilter(16, 2)
    bf.update(["a", "b", "c"])
    assert list(bf.bits) == [0, 1, 5, 9, 14]
    assert [w for w in "defgh" if w in bf] == ["d"]


def test_for_capacity_sizes():
    """for_capacity picks optimal bits and hashes, with a 1% default error rate."""
    bf = BloomFilter.for_capacity(100, 0.05)
    assert (bf.num_bits, bf.num_hashes, bf.seed) == (624, 4, 0)
    default = BloomFilter.for_capacity(1000)
    assert (default.num_bits, default.num_hashes) == (9586, 7)
    assert BloomFilter.for_capacity(10, seed=9).seed == 9


def test_constructor_validation():
    """Zero bits or zero hashes are rejected; one of each is allowed."""
    with pytest.raises(ValueError):
        BloomFilter(0, 1)
    with pytest.raises(ValueError):
        BloomFilter(1, 0)
    tiny = BloomFilter(1, 1)
    tiny.add("x")
    assert "anything" in tiny


def test_statistics():
    """fill_ratio, approximate_count and the theoretical FP rate track the contents."""
    bf = BloomFilter(64, 3)
    assert (bf.fill_ratio(), bf.approximate_count(), bf.estimated_false_positive_rate()) == (0.0, 0.0, 0.0)
    bf.update(["a", "b", "c"])
    assert bf.fill_ratio() == 9 / 64
    assert bf.approximate_count() == pytest.approx(3.2330644934)
    assert bf.estimated_false_positive_rate() == pytest.approx(0.0022576259)


def test_union_combines_members():
    """The union contains members of both filters and sums their counts."""
    left, right = BloomFilter(64, 3), BloomFilter(64, 3)
    left.update(["a", "b"])
    right.add("z")
    merged = left.union(right)
    assert all(w in merged for w in ("a", "b", "z"))
    assert merged.count == 3
    assert merged.bits == left.bits | right.bits
    assert "z" not in left


def test_union_requires_matching_parameters():
    """Filters with different size, hash count or seed cannot be merged."""
    base = BloomFilter(64, 3)
    for other in (BloomFilter(65, 3), BloomFilter(64, 2), BloomFilter(64, 3, seed=1)):
        with pytest.raises(ValueError):
            base.union(other)


def test_serialisation_layout():
    """to_bytes writes a 14-byte big-endian header followed by the bits."""
    bf = BloomFilter(10, 1)
    bf.update(["a", "b"])
    assert bf.to_bytes().hex() == "0000000a000100000000000000020500"
    assert BloomFilter(8, 1, seed=7).to_bytes().hex() == "000000080001000000070000000000"


def test_round_trip():
    """from_bytes restores bits, parameters and count."""
    bf = BloomFilter(100, 4, seed=3)
    bf.update(["x", "y"])
    copy = BloomFilter.from_bytes(bf.to_bytes())
    assert (copy.num_bits, copy.num_hashes, copy.seed, copy.count) == (100, 4, 3, 2)
    assert copy.bits == bf.bits
    assert "x" in copy


def test_from_bytes_validation():
    """Truncated headers and bodies of the wrong length are rejected."""
    data = BloomFilter(16, 2).to_bytes()
    with pytest.raises(ValueError):
        BloomFilter.from_bytes(data[:13])
    with pytest.raises(ValueError):
        BloomFilter.from_bytes(data[:-1])
    with pytest.raises(ValueError):
        BloomFilter.from_bytes(data + b"\x00")
    assert BloomFilter.from_bytes(data[:14] + b"\x00\x00").bits == BitSet(16)
