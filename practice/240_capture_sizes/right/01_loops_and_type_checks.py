# Correct: Builds the default with a while loop, validates item by item with type(s) is int and its own messages, filters at the end.
from __future__ import annotations


def decode_capture_sizes(max_num_seqs, max_num_batched_tokens, user_sizes=None):
    if user_sizes is None:
        cap = min(2 * max_num_seqs, 512)
        candidates = [1, 2, 4]
        s = 8
        while s <= cap:
            candidates.append(s)
            s += 8
        candidates = [s for s in candidates if s <= max_num_batched_tokens]
    else:
        if len(user_sizes) == 0:
            raise ValueError("user_sizes is empty")
        for s in user_sizes:
            if type(s) is not int or s < 1:
                raise ValueError(f"bad capture size {s!r}: need an int >= 1")
            if s > max_num_batched_tokens:
                raise ValueError(f"size {s} > max_num_batched_tokens ({max_num_batched_tokens})")
        candidates = sorted(set(user_sizes))
    result = []
    for s in candidates:
        if s <= max_num_seqs:
            result.append(s)
    if not result:
        raise ValueError(f"nothing left at most max_num_seqs ({max_num_seqs})")
    return result
