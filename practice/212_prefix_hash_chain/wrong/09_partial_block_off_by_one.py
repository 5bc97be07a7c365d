# Mistake: Drops the trailing partial block by hashing only len(token_ids) // block_size - 1 blocks when the length is not a multiple (off by one on the partial block).
"""Exercise 212: chained block hashes and prefix-cache hits (solution)."""
from __future__ import annotations

import hashlib


def hash_block(parent_hash: str | None, token_ids: list[int]) -> str:
    """Hash of one full block chained on the previous block's hash (None for the first block). Given."""
    text = f"{parent_hash or ''}|{','.join(map(str, token_ids))}"
    return hashlib.sha256(text.encode()).hexdigest()


def block_hashes(token_ids: list[int], block_size: int, parent_hash: str | None = None) -> list[str]:
    hashes, parent = [], parent_hash
    for start in range(0, (len(token_ids) // block_size - (len(token_ids) % block_size != 0)) * block_size, block_size):
        parent = hash_block(parent, token_ids[start:start + block_size])
        hashes.append(parent)
    return hashes


def find_cached_prefix(token_ids: list[int], block_size: int, cached: dict[str, int]) -> tuple[int, list[int]]:
    hit = []
    for h in block_hashes(token_ids[:-1], block_size):
        if h not in cached:
            break
        hit.append(cached[h])
    return len(hit) * block_size, hit
