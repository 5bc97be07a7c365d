# Mistake: The learner wrote range(8, largest, 8), so the largest size N is never captured.
from __future__ import annotations

import bisect


def capture_sizes(max_num_seqs: int, max_num_batched_tokens: int, user_sizes: list[int] | None = None) -> list[int]:
    if user_sizes is None:
        largest = min(2 * max_num_seqs, 512)
        candidates = [1, 2, 4] + list(range(8, largest, 8))
        return [s for s in candidates if s <= max_num_batched_tokens]
    if any(s < 1 for s in user_sizes):
        raise ValueError(f"capture sizes must be >= 1, got {sorted(user_sizes)}")
    sizes = sorted(s for s in set(user_sizes) if s <= max_num_batched_tokens)
    if not sizes:
        raise ValueError(f"no capture size in {user_sizes} fits max_num_batched_tokens={max_num_batched_tokens}")
    return sizes


def padded_size(num_reqs: int, sizes: list[int]) -> int | None:
    if num_reqs < 1:
        raise ValueError(f"num_reqs must be >= 1, got {num_reqs}")
    i = bisect.bisect_left(sizes, num_reqs)
    return sizes[i] if i < len(sizes) else None
