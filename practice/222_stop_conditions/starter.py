"""Exercise 222: stop conditions. Keep the names."""
from __future__ import annotations

from typing import Sequence


def check_stop(output_token_ids: Sequence[int], prompt_len: int, max_tokens: int, stop_token_ids: Sequence[int],
               eos_token_ids: Sequence[int], ignore_eos: bool, max_model_len: int) -> str | None:
    # TODO: look at the last output token: "stop" for a stop token, or for EOS unless ignore_eos;
    #       then "length" when max_tokens or max_model_len is reached; else None
    raise NotImplementedError("check_stop")
