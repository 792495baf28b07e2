"""bitbloom: a packed BitSet and a deterministic Bloom filter."""

from .bitset import BitSet
from .bloom import BloomFilter
from .hashing import base_hashes, hash_indices, item_bytes
from .sizing import estimate_items, false_positive_rate, optimal_num_bits, optimal_num_hashes
