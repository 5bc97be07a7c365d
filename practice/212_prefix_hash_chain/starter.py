"""Exercise 212: chained block hashes and prefix-cache hits. Keep the names."""
from __future__ import annotations

import hashlib


def hash_block(parent_hash: str | None, token_ids: list[int]) -> str:
    """Hash of one full block chained on the previous block's hash (None for the first block). Given."""
    text = f"{parent_hash or ''}|{','.join(map(str, token_ids))}"
    return hashlib.sha256(text.encode()).hexdigest()


def block_hashes(token_ids: list[int], block_size: int, parent_hash: str | None = None) -> list[str]:
    # TODO: one chained hash per full block; the first block's parent is parent_hash
    raise NotImplementedError("block_hashes")


def find_cached_prefix(token_ids: list[int], block_size: int, cached: dict[str, int]) -> tuple[int, list[int]]:
    # TODO: walk the chain until the first miss; only blocks inside token_ids[:-1] may hit
    raise NotImplementedError("find_cached_prefix")
