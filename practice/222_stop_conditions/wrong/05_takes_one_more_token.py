# Mistake: Decides whether the previous token finished the request only after pulling the next token from the stream.
"""Exercise 222: stop conditions."""
from __future__ import annotations

from typing import Iterable


def generate_until_stop(stream: Iterable[int], prompt_len: int, max_tokens: int, stop_token_ids: list[int],
                        eos_token_ids: list[int], ignore_eos: bool, max_model_len: int) -> tuple[list[int], str | None]:
    output: list[int] = []
    reason = None
    for token in stream:
        if reason is not None:
            return output, reason
        output.append(token)
        if token in stop_token_ids or (not ignore_eos and token in eos_token_ids):
            reason = "stop"
        elif len(output) >= max_tokens or prompt_len + len(output) >= max_model_len:
            reason = "length"
    return output, reason
