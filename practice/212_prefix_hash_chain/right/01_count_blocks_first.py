# Correct: counts the full blocks first (len // block_size) and hashes each by index; find_cached_prefix limits the usable blocks to (len - 1) // block_size and walks the chain itself with hash_block, returning at the first miss.
from __future__ import annotations

import hashlib


def hash_block(parent_hash: str | None, token_ids: list[int]) -> str:
    """Hash of one full block chained on the previous block's hash (None for the first block). Given."""
    text = f"{parent_hash or ''}|{','.join(map(str, token_ids))}"
    return hashlib.sha256(text.encode()).hexdigest()



def block_hashes(token_ids, block_size, parent_hash=None):
    out = []
    for i in range(len(token_ids) // block_size):
        parent_hash = hash_block(parent_hash, token_ids[i * block_size:(i + 1) * block_size])
        out.append(parent_hash)
    return out


def find_cached_prefix(token_ids, block_size, cached):
    usable = max(len(token_ids) - 1, 0) // block_size
    blocks, parent = [], None
    for i in range(usable):
        parent = hash_block(parent, token_ids[i * block_size:(i + 1) * block_size])
        if parent not in cached:
            return i * block_size, blocks
        blocks.append(cached[parent])
    return usable * block_size, blocks
