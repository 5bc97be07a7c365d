"""Exercise 223: temperature, top-k and top-p. Keep the names."""
from __future__ import annotations

import math


def sampling_probs(logits: list[float], temperature: float, top_k: int, top_p: float) -> list[float]:
    # TODO 1: temperature 0 -> one-hot argmax (lowest index on ties)
    # TODO 2: softmax(logits / temperature), subtracting the max first
    # TODO 3: top-k keeps probabilities >= the k-th largest; renormalize
    # TODO 4: top-p over the survivors sorted by (-prob, index); renormalize
    raise NotImplementedError("sampling_probs")
