"""A fixed-size set of bits stored in a bytearray (bit i lives in byte i // 8)."""

from __future__ import annotations

from typing import Iterable, Iterator


class BitSet:
    """A set of integers in ``range(size)`` backed by packed bits."""

    __slots__ = ("size", "_data")

    def __init__(self, size: int, bits: Iterable[int] = ()) -> None:
        if size < 0:
            raise ValueError("size must be non-negative")
        self.size = size
        self._data = bytearray((size + 7) // 8)
        for index in bits:
            self.set(index)

    def _locate(self, index: int) -> tuple[int, int]:
        if not 0 <= index < self.size:
            raise IndexError(f"bit {index} out of range for size {self.size}")
        return index >> 3, 1 << (index & 7)

    def set(self, index: int) -> None:
        """Turn bit ``index`` on."""
        byte, mask = self._locate(index)
        self._data[byte] |= mask

    def clear(self, index: int) -> None:
        """Turn bit ``index`` off."""
        byte, mask = self._locate(index)
        self._data[byte] &= ~mask & 0xFF

    def flip(self, index: int) -> bool:
        """Toggle bit ``index`` and return its new state."""
        byte, mask = self._locate(index)
        self._data[byte] ^= mask
        return bool(self._data[byte] & mask)

    def test(self, index: int) -> bool:
        """Return whether bit ``index`` is on (IndexError when out of range)."""
        byte, mask = self._locate(index)
        return bool(self._data[byte] & mask)

    def __contains__(self, index: object) -> bool:
        return isinstance(index, int) and 0 <= index < self.size and self.test(index)

    def __len__(self) -> int:
        return self.size

    def popcount(self) -> int:
        """Number of bits that are on."""
        return sum(byte.bit_count() for byte in self._data)

    def __iter__(self) -> Iterator[int]:
        """Yield the indices of set bits in increasing order."""
        for byte_index, byte in enumerate(self._data):
            if not byte:
                continue
            for bit in range(8):
                if byte >> bit & 1:
                    yield byte_index * 8 + bit

    def _check_compatible(self, other: BitSet) -> None:
        if not isinstance(other, BitSet):
            raise TypeError("expected a BitSet")
        if other.size != self.size:
            raise ValueError(f"size mismatch: {self.size} != {other.size}")

    def _combine(self, other: BitSet, op: str) -> BitSet:
        self._check_compatible(other)
        result = BitSet(self.size)
        for i in range(len(self._data)):
            a, b = self._data[i], other._data[i]
            if op == "or":
                result._data[i] = a | b
            elif op == "and":
                result._data[i] = a & b
            elif op == "sub":
                result._data[i] = a & ~b & 0xFF
            else:
                result._data[i] = a ^ b
        return result

    def union(self, other: BitSet) -> BitSet:
        """Bits on in either set."""
        return self._combine(other, "or")

    def intersection(self, other: BitSet) -> BitSet:
        """Bits on in both sets."""
        return self._combine(other, "and")

    def difference(self, other: BitSet) -> BitSet:
        """Bits on in ``self`` but not in ``other``."""
        return self._combine(other, "sub")

    def symmetric_difference(self, other: BitSet) -> BitSet:
        """Bits on in exactly one of the sets."""
        return self._combine(other, "xor")

    __or__ = union
    __and__ = intersection
    __sub__ = difference
    __xor__ = symmetric_difference

    def issubset(self, other: BitSet) -> bool:
        """True if every bit on in ``self`` is also on in ``other``."""
        return self.difference(other).popcount() == 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BitSet):
            return NotImplemented
        return self.size == other.size and self._data == other._data

    def __repr__(self) -> str:
        return f"BitSet({self.size}, {list(self)})"

    def to_bytes(self) -> bytes:
        """Packed little-endian bit order: bit 0 is the low bit of byte 0."""
        return bytes(self._data)

    @classmethod
    def from_bytes(cls, data: bytes, size: int | None = None) -> BitSet:
        """Inverse of :meth:`to_bytes`; padding bits beyond ``size`` must be zero."""
        if size is None:
            size = len(data) * 8
        if size < 0 or (size + 7) // 8 != len(data):
            raise ValueError(f"{len(data)} bytes cannot hold exactly {size} bits")
        spare = size % 8
        if spare and data[-1] >> spare:
            raise ValueError("padding bits beyond size must be zero")
        result = cls(size)
        result._data[:] = data
        return result
