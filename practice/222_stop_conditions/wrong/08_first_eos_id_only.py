# Mistake: Compares the token with the first EOS id only, so a model with several EOS ids does not stop on the others.
"""Exercise 222: stop conditions."""
from __future__ import annotations

from typing import Sequence


def check_stop(output_token_ids: Sequence[int], prompt_len: int, max_tokens: int, stop_token_ids: Sequence[int],
               eos_token_ids: Sequence[int], ignore_eos: bool, max_model_len: int) -> str | None:
    last = output_token_ids[-1]
    if last in stop_token_ids or (not ignore_eos and len(eos_token_ids) > 0 and last == eos_token_ids[0]):
        return "stop"
    if len(output_token_ids) >= max_tokens or prompt_len + len(output_token_ids) >= max_model_len:
        return "length"
    return None
