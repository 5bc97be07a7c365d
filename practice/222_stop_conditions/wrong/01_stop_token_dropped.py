# Mistake: Drops the token that triggered the stop from the output.
"""Exercise 222: stop conditions."""
from __future__ import annotations

from typing import Iterable


def generate_until_stop(stream: Iterable[int], prompt_len: int, max_tokens: int, stop_token_ids: list[int],
                        eos_token_ids: list[int], ignore_eos: bool, max_model_len: int) -> tuple[list[int], str | None]:
    output: list[int] = []
    for token in stream:
        output.append(token)
        if token in stop_token_ids or (not ignore_eos and token in eos_token_ids):
            return output[:-1], "stop"
        if len(output) >= max_tokens or prompt_len + len(output) >= max_model_len:
            return output, "length"
    return output, None
