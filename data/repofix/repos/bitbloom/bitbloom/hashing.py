"""Deterministic hashing of items to bit positions (SHA-256 double hashing)."""

from __future__ import annotations

import hashlib

Item = str | bytes | int


def item_bytes(item: Item) -> bytes:
    """Canonical bytes for an item: UTF-8 for str, decimal text for int."""
    if isinstance(item, bool):
        raise TypeError("bool items are ambiguous; use int or str")
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, (bytes, bytearray)):
        return bytes(item)
    if isinstance(item, int):
        return str(item).encode("ascii")
    raise TypeError(f"unhashable item type: {type(item).__name__}")


def base_hashes(data: bytes, seed: int = 0) -> tuple[int, int]:
    """Two 64-bit hashes from one SHA-256 digest; the second is always odd."""
    digest = hashlib.sha256(seed.to_bytes(4, "big") + data).digest()
    first = int.from_bytes(digest[:8], "big")
    second = int.from_bytes(digest[8:16], "big") | 1
    return first, second


def hash_indices(item: Item, num_hashes: int, num_bits: int, seed: int = 0) -> list[int]:
    """The ``num_hashes`` bit positions (in ``range(num_bits)``) for ``item``."""
    if num_hashes < 1 or num_bits < 1:
        raise ValueError("num_hashes and num_bits must be positive")
    first, second = base_hashes(item_bytes(item), seed)
    return [(first + i * second) % num_bits for i in range(num_hashes)]
