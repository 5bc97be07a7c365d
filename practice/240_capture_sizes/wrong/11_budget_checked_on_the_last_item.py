# Mistake: Checks the token budget on user_sizes[-1], as if the caller's list were already ascending.
from __future__ import annotations


def decode_capture_sizes(max_num_seqs: int, max_num_batched_tokens: int,
                         user_sizes: list[int] | None = None) -> list[int]:
    if user_sizes is None:
        largest = min(2 * max_num_seqs, 512)
        sizes = [s for s in [1, 2, 4] + list(range(8, largest + 1, 8)) if s <= max_num_batched_tokens]
    else:
        if not user_sizes or any(not isinstance(s, int) or isinstance(s, bool) or s < 1 for s in user_sizes):
            raise ValueError(f"capture sizes must be a non-empty list of ints >= 1, got {user_sizes}")
        if user_sizes[-1] > max_num_batched_tokens:
            raise ValueError(f"capture size {max(user_sizes)} exceeds max_num_batched_tokens={max_num_batched_tokens}")
        sizes = sorted(set(user_sizes))
    decode = [s for s in sizes if s <= max_num_seqs]
    if not decode:
        raise ValueError(f"no capture size in {sizes} is at most max_num_seqs={max_num_seqs}")
    return decode
