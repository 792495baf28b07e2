import hashlib

import pytest

from bitbloom import base_hashes, hash_indices, item_bytes


def test_item_bytes_canonical_forms():
    """Strings encode as UTF-8, ints as decimal text, bytes-likes unchanged."""
    assert item_bytes("é") == b"\xc3\xa9"
    assert item_bytes(b"ab") == b"ab"
    assert item_bytes(bytearray(b"ab")) == b"ab"
    assert item_bytes(-42) == b"-42"


def test_item_bytes_rejects_bool_and_other_types():
    """Booleans and unsupported types raise TypeError."""
    with pytest.raises(TypeError):
        item_bytes(True)
    with pytest.raises(TypeError):
        item_bytes(1.5)


def test_base_hashes_come_from_seeded_sha256():
    """The hashes are the first two big-endian 64-bit words of SHA-256(seed + data)."""
    digest = hashlib.sha256(b"\x00\x00\x00\x05abc").digest()
    first, second = base_hashes(b"abc", 5)
    assert first == int.from_bytes(digest[:8], "big")
    assert second == int.from_bytes(digest[8:16], "big") | 1
    assert base_hashes(b"") == (16086683699531821019, 4636202025757824841)


def test_hash_indices_are_pinned():
    """Positions are deterministic and depend on the seed."""
    assert hash_indices("apple", 3, 100) == [31, 88, 45]
    assert hash_indices("apple", 3, 100, seed=1) == [37, 82, 27]
    assert hash_indices(b"apple", 4, 64) == [31, 12, 57, 38]
    assert hash_indices(42, 2, 10) == [1, 8]


def test_hash_indices_edges():
    """One bit gives position 0; zero hashes or bits are invalid."""
    assert hash_indices("x", 3, 1) == [0, 0, 0]
    assert len(hash_indices("x", 1, 5)) == 1
    with pytest.raises(ValueError):
        hash_indices("x", 0, 10)
    with pytest.raises(ValueError):
        hash_indices("x", 1, 0)
