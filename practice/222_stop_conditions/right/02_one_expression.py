# Correct: Computes the stop and length flags first and picks the reason with a conditional expression.
"""Exercise 222: stop conditions."""
from __future__ import annotations

from typing import Sequence


def check_stop(output_token_ids: Sequence[int], prompt_len: int, max_tokens: int, stop_token_ids: Sequence[int],
               eos_token_ids: Sequence[int], ignore_eos: bool, max_model_len: int) -> str | None:
    token = output_token_ids[-1]
    stopped = token in stop_token_ids or (token in eos_token_ids and not ignore_eos)
    too_long = len(output_token_ids) >= max_tokens or len(output_token_ids) + prompt_len >= max_model_len
    return "stop" if stopped else "length" if too_long else None
