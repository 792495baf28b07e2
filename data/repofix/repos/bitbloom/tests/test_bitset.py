import pytest

from bitbloom import BitSet


def test_new_bitset_is_empty():
    """A fresh BitSet has no bits set and reports its size as its length."""
    bs = BitSet(10)
    assert (len(bs), bs.popcount(), list(bs)) == (10, 0, [])
    assert list(BitSet(0)) == []
    with pytest.raises(ValueError):
        BitSet(-1)


def test_set_and_test_at_boundaries():
    """The first and last bits are usable; one past the end is not."""
    bs = BitSet(10)
    bs.set(0)
    bs.set(9)
    assert [bs.test(i) for i in (0, 1, 8, 9)] == [True, False, False, True]
    with pytest.raises(IndexError):
        bs.test(10)
    with pytest.raises(IndexError):
        bs.set(-1)


def test_clear_only_affects_one_bit():
    """Clearing a bit leaves its neighbours in the same byte untouched."""
    bs = BitSet(8, [1, 2, 3])
    bs.clear(2)
    bs.clear(5)
    assert list(bs) == [1, 3]
    with pytest.raises(IndexError):
        bs.clear(8)


def test_flip_returns_new_state():
    """flip toggles a bit and reports the resulting value."""
    bs = BitSet(4)
    assert bs.flip(3) is True
    assert bs.flip(3) is False
    assert bs.popcount() == 0


def test_contains_is_lenient():
    """'in' answers False for out-of-range or non-integer values instead of raising."""
    bs = BitSet(10, [0, 9])
    assert (0 in bs, 9 in bs, 5 in bs) == (True, True, False)
    assert (10 in bs, -1 in bs, "0" in bs) == (False, False, False)


def test_iteration_crosses_byte_boundaries():
    """Set bits are yielded in increasing order across bytes."""
    assert list(BitSet(20, [19, 0, 7, 8])) == [0, 7, 8, 19]
    assert BitSet(17, range(17)).popcount() == 17


def test_set_algebra():
    """Union, intersection, difference and symmetric difference work bitwise."""
    a = BitSet(12, [0, 3, 8, 11])
    b = BitSet(12, [3, 4, 11])
    assert list(a | b) == [0, 3, 4, 8, 11]
    assert list(a & b) == [3, 11]
    assert list(a - b) == [0, 8]
    assert list(b - a) == [4]
    assert list(a ^ b) == [0, 4, 8]


def test_set_algebra_requires_same_size_and_type():
    """Combining sets of different sizes or with non-BitSets is rejected."""
    with pytest.raises(ValueError):
        BitSet(8).union(BitSet(9))
    with pytest.raises(TypeError):
        BitSet(8).intersection({1, 2})


def test_issubset():
    """issubset holds for contained sets, including equal and empty sets."""
    small, big = BitSet(9, [1, 8]), BitSet(9, [1, 2, 8])
    assert small.issubset(big) is True
    assert big.issubset(small) is False
    assert BitSet(9).issubset(small) is True
    assert big.issubset(big) is True


def test_equality_and_repr():
    """Equal sets need the same size and bits; repr lists the set bits."""
    assert BitSet(8, [1]) == BitSet(8, [1])
    assert BitSet(8, [1]) != BitSet(9, [1])
    assert BitSet(8, [1]) != BitSet(8, [2])
    assert BitSet(8) != "BitSet(8, [])"
    assert repr(BitSet(5, [4, 0])) == "BitSet(5, [0, 4])"


def test_to_bytes_little_endian_bits():
    """Bit 0 is the low bit of byte 0; bit 8 starts the second byte."""
    assert BitSet(10, [0, 9]).to_bytes() == b"\x01\x02"
    assert BitSet(16, [7, 8]).to_bytes() == b"\x80\x01"
    assert BitSet(0).to_bytes() == b""


def test_from_bytes_round_trip_and_default_size():
    """from_bytes inverts to_bytes and defaults to eight bits per byte."""
    assert BitSet.from_bytes(b"\x01\x02", 10) == BitSet(10, [0, 9])
    assert BitSet.from_bytes(b"\x81") == BitSet(8, [0, 7])
    assert BitSet.from_bytes(b"\x03", 2) == BitSet(2, [0, 1])
    assert BitSet.from_bytes(b"", 0) == BitSet(0)


def test_from_bytes_validation():
    """Wrong byte counts and non-zero padding bits are rejected."""
    with pytest.raises(ValueError):
        BitSet.from_bytes(b"\x00\x00", 17)
    with pytest.raises(ValueError):
        BitSet.from_bytes(b"\x00\x00", 8)
    with pytest.raises(ValueError):
        BitSet.from_bytes(b"\x04", 2)
    with pytest.raises(ValueError):
        BitSet.from_bytes(b"", -1)
