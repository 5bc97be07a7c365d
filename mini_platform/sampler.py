"""Sampling parameters and the sampler: logits of the last position -> the next token of each request.

Per row: greedy (``temperature`` 0, or below 1e-5) takes the argmax; otherwise the logits are divided by
the temperature, filtered by top-k then top-p, and one token is drawn. A request with a ``seed`` draws
from its own ``torch.Generator``, so the same seed gives the same tokens whatever else is in the batch.
:func:`sample` takes plain per-row lists, not :class:`SamplingParams`: it is the contract of exercise 224,
and the engine looks it up as ``sampler.sample`` at call time, so a replacement can stand in for it.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import torch


# A temperature below this is greedy, as in vLLM (``_SAMPLING_EPS``): dividing fp32 logits by it could overflow,
# and 1e-50 is even 0 in fp32, which would turn the logits into NaN.
MIN_TEMPERATURE = 1e-5


@dataclass
class SamplingParams:
    """How to pick tokens for one request.

    - ``temperature``: 0 (or anything below 1e-5) = greedy; otherwise higher = flatter.
    - ``top_k``: keep the k most likely tokens; 0 or -1 keeps all.
    - ``top_p``: keep the smallest set of most likely tokens whose probability reaches ``top_p``; in (0, 1].
    - ``max_tokens``: the most tokens to generate (>= 1).
    - ``seed``: a request-private random stream (None = the engine's shared stream).
    - ``stop_token_ids``: generation ends after any of these (the token is kept in the output).
    - ``ignore_eos``: keep going past the model's end-of-sequence token.
    """
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    max_tokens: int = 16
    seed: int | None = None
    stop_token_ids: list[int] = field(default_factory=list)
    ignore_eos: bool = False

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first field out of range (run when built, and again by the engine when a
        request is added: a field may have been changed in between); ``stop_token_ids`` becomes a list."""
        def is_int(x: object) -> bool:
            return isinstance(x, int) and not isinstance(x, bool)

        def is_num(x: object) -> bool:
            return isinstance(x, (int, float)) and not isinstance(x, bool)

        if not is_num(self.temperature) or not self.temperature >= 0 or self.temperature == float("inf"):
            raise ValueError(f"temperature must be a finite number >= 0 (0 = greedy), got {self.temperature!r}")
        if not is_int(self.top_k) or self.top_k < -1:
            raise ValueError(f"top_k must be an integer >= 1, or 0 / -1 to keep all tokens, got {self.top_k!r}")
        if not is_num(self.top_p) or not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if not is_int(self.max_tokens) or self.max_tokens < 1:
            raise ValueError(f"max_tokens must be an integer >= 1, got {self.max_tokens!r}")
        if self.seed is not None and not (is_int(self.seed) and 0 <= self.seed < 2**64):
            raise ValueError(f"seed must be None or an integer in [0, 2**64) (a torch.Generator seed), got {self.seed!r}")
        stop = self.stop_token_ids
        stop = list(stop) if isinstance(stop, Iterable) and not isinstance(stop, (str, bytes)) else None
        if stop is None or not all(is_int(t) and t >= 0 for t in stop):
            raise ValueError(f"stop_token_ids must be a list of non-negative integers, got {self.stop_token_ids!r}")
        self.stop_token_ids = stop
        if not isinstance(self.ignore_eos, bool):
            raise ValueError(f"ignore_eos must be True or False, got {self.ignore_eos!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature < MIN_TEMPERATURE


def apply_top_k(logits: torch.Tensor, top_k: torch.Tensor) -> torch.Tensor:
    """Set to -inf every logit below the row's k-th largest (ties with it are kept). ``top_k`` long ``[B]``;
    k <= 0 or k >= vocab keeps the whole row."""
    vocab = logits.shape[-1]
    k = torch.where((top_k <= 0) | (top_k > vocab), vocab, top_k)
    kth = logits.sort(dim=-1, descending=True).values.gather(-1, (k - 1).unsqueeze(-1))
    return logits.masked_fill(logits < kth, float("-inf"))


def apply_top_p(logits: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """Keep, per row, the most likely tokens until their probability reaches ``top_p`` (float ``[B]``);
    the most likely token always survives. Others are set to -inf."""
    sorted_logits, order = logits.sort(dim=-1, descending=True, stable=True)  # ties: lower token id first
    probs = sorted_logits.softmax(dim=-1)
    mass_before = probs.cumsum(dim=-1) - probs  # probability of the tokens ranked above each one
    drop_sorted = mass_before >= top_p.unsqueeze(-1)
    drop_sorted[..., 0] = False
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


def make_generator(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return generator


def check_logits(logits: torch.Tensor) -> None:
    """Raise FloatingPointError naming the rows when the model produced NaN logits."""
    # A NaN anywhere makes the sum NaN (so does +inf with -inf): one cheap reduction screens the whole batch.
    if bool(logits.sum().isnan()) and bool(logits.isnan().any()):
        bad = logits.isnan().any(dim=-1).nonzero().flatten().tolist()
        raise FloatingPointError(f"the model produced NaN logits for batch row(s) {bad}: the weights or the "
                                 "activations overflowed; check the checkpoint, or run in float32")


def sample(logits: torch.Tensor, temperatures: list[float], top_ks: list[int], top_ps: list[float],
           generators: list[torch.Generator | None]) -> list[int]:
    """One token per row of ``logits`` ``[B, V]`` (exercise 224). Row i is greedy (argmax, no random number)
    when ``temperatures[i]`` is below 1e-5; otherwise its logits are divided by the temperature, filtered by
    top-k (0 or -1: all) then top-p, and one token is drawn from ``generators[i]`` (None: torch's default stream)."""
    logits = logits.float()
    device = logits.device
    tokens = logits.argmax(dim=-1)
    rows = [i for i, t in enumerate(temperatures) if t >= MIN_TEMPERATURE]
    if rows:
        idx = torch.tensor(rows, device=device)
        rows_logits = logits[idx]
        temperature = torch.tensor([temperatures[i] for i in rows], device=device)
        # Shift the maximum to 0 first: a tiny temperature then sends the others to -inf, never the top to inf.
        scaled = (rows_logits - rows_logits.amax(dim=-1, keepdim=True)) / temperature.unsqueeze(-1)
        scaled = apply_top_k(scaled, torch.tensor([top_ks[i] for i in rows], device=device))
        scaled = apply_top_p(scaled, torch.tensor([top_ps[i] for i in rows], device=device))
        probs = scaled.softmax(dim=-1)
        for j, i in enumerate(rows):
            tokens[i] = torch.multinomial(probs[j], 1, generator=generators[i]).squeeze(0)
    return tokens.tolist()
