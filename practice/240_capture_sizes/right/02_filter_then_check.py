# Correct: Checks the whole user list for the budget first, then deduplicates with dict.fromkeys and sorts the kept sizes; the default from a comprehension over range(1, N + 1).
from __future__ import annotations


def decode_capture_sizes(max_num_seqs: int, max_num_batched_tokens: int,
                         user_sizes: list[int] | None = None) -> list[int]:
    if user_sizes is not None:
        if not isinstance(user_sizes, list) or not user_sizes:
            raise ValueError("give a non-empty list of capture sizes")
        if any(isinstance(s, int) and not isinstance(s, bool) and s > max_num_batched_tokens for s in user_sizes):
            raise ValueError(f"a capture size is above max_num_batched_tokens={max_num_batched_tokens}")
        if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in user_sizes):
            raise ValueError("capture sizes must be ints >= 1")
        kept = sorted(s for s in dict.fromkeys(user_sizes) if s <= max_num_seqs)
    else:
        n = min(2 * max_num_seqs, 512)
        kept = [s for s in range(1, n + 1) if (s in (1, 2, 4) or s % 8 == 0)
                and s <= max_num_batched_tokens and s <= max_num_seqs]
    if not kept:
        raise ValueError(f"max_num_seqs={max_num_seqs} leaves no capture size")
    return kept
