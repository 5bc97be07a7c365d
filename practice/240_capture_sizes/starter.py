"""Exercise 240: which batch sizes get a full decode graph. Keep the names."""
from __future__ import annotations


def decode_capture_sizes(max_num_seqs: int, max_num_batched_tokens: int,
                         user_sizes: list[int] | None = None) -> list[int]:
    # TODO 1: the default list: N = min(2 * max_num_seqs, 512); [1, 2, 4] + 8, 16, ... up to N;
    #         drop sizes above max_num_batched_tokens
    # TODO 2: user sizes: ints >= 1, not empty, none above max_num_batched_tokens; deduplicate and sort
    # TODO 3: keep the sizes <= max_num_seqs; ValueError naming max_num_seqs when none is left
    raise NotImplementedError("decode_capture_sizes")
