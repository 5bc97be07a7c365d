"""Exercise 222: stop conditions. Keep the names."""
from __future__ import annotations

from typing import Iterable


def generate_until_stop(stream: Iterable[int], prompt_len: int, max_tokens: int, stop_token_ids: list[int],
                        eos_token_ids: list[int], ignore_eos: bool, max_model_len: int) -> tuple[list[int], str | None]:
    output: list[int] = []
    # TODO: take tokens one at a time; after each, check "stop" (stop tokens, EOS unless ignored),
    #       then "length" (max_tokens, max_model_len); return as soon as one applies
    raise NotImplementedError("generate_until_stop")
