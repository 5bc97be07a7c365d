# Correct: Turns the id sequences into sets and checks each condition with its own if, the total length computed once.
"""Exercise 222: stop conditions."""
from __future__ import annotations

from typing import Sequence


def check_stop(output_token_ids: Sequence[int], prompt_len: int, max_tokens: int, stop_token_ids: Sequence[int],
               eos_token_ids: Sequence[int], ignore_eos: bool, max_model_len: int) -> str | None:
    last = output_token_ids[len(output_token_ids) - 1]
    stops, eos = set(stop_token_ids), set(eos_token_ids)
    if last in stops:
        return "stop"
    if last in eos and not ignore_eos:
        return "stop"
    total = prompt_len + len(output_token_ids)
    if len(output_token_ids) == max_tokens:
        return "length"
    if total >= max_model_len:
        return "length"
    return None
