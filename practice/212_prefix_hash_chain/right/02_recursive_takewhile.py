# Correct: block_hashes is recursive on the remaining tokens; find_cached_prefix hashes the whole prompt, keeps the hashes of blocks ending before the last token, and takes hits with itertools.takewhile.
from __future__ import annotations

import hashlib
from itertools import takewhile


def hash_block(parent_hash: str | None, token_ids: list[int]) -> str:
    """Hash of one full block chained on the previous block's hash (None for the first block). Given."""
    text = f"{parent_hash or ''}|{','.join(map(str, token_ids))}"
    return hashlib.sha256(text.encode()).hexdigest()



def block_hashes(token_ids, block_size, parent_hash=None):
    if len(token_ids) < block_size:
        return []
    head = hash_block(parent_hash, list(token_ids[:block_size]))
    return [head] + block_hashes(token_ids[block_size:], block_size, head)


def find_cached_prefix(token_ids, block_size, cached):
    chain = block_hashes(token_ids, block_size)
    inside = [h for i, h in enumerate(chain) if (i + 1) * block_size <= len(token_ids) - 1]
    hits = [cached[h] for h in takewhile(lambda h: h in cached, inside)]
    return block_size * len(hits), hits
