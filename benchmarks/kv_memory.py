"""How much reserved KV-cache memory holds real tokens: contiguous reservation versus paging.

Pure arithmetic on a synthetic request trace, so the figures do not depend on the machine.

Trace "T1" (the default): ``--requests`` requests (1000) drawn with ``random.Random(--seed)`` (0):
prompt lengths log-uniform between 16 and 1024 tokens; output lengths geometric with mean 256
tokens (at least 1); each sequence capped at ``--max-model-len`` (2048) tokens.

Schemes, per request while it decodes (one token per step):
- contiguous, max length: a slab of ``max_model_len`` slots reserved at admission (what systems
  that cannot grow a request's KV in place do, since the output length is unknown);
- contiguous, exact length: an oracle that knows the final length (an upper bound for contiguous);
- paged, block size ``bs``: ``ceil(tokens / bs)`` blocks, a new block only when the last one is full.

The share is (token slots in use) / (slots reserved), summed over every decode step of every
request, i.e. averaged over the time the memory is held. Run: ``python benchmarks/kv_memory.py``.
"""
from __future__ import annotations

import argparse
import math
import random

PAPER = ("PagedAttention paper (Kwon et al., SOSP'23): in existing systems only 20.4%-38.2% of KV memory "
         "holds token states")
BLOG = "vLLM blog (2023-06-20): with PagedAttention, 'a mere waste of under 4%'"


def make_trace(num_requests: int = 1000, seed: int = 0, max_model_len: int = 2048) -> list[tuple[int, int]]:
    """``(prompt_len, output_len)`` per request for trace T1 (see the module docstring)."""
    rng = random.Random(seed)
    trace = []
    for _ in range(num_requests):
        prompt = min(int(math.exp(rng.uniform(math.log(16), math.log(1024)))), max_model_len - 1)
        output = 1 + int(math.log(1.0 - rng.random()) / math.log(1.0 - 1.0 / 256))   # geometric, mean ~256
        trace.append((prompt, max(1, min(output, max_model_len - prompt))))
    return trace


def reserved_slots(tokens: int, final_len: int, scheme: str, max_model_len: int, block_size: int = 0) -> int:
    """Slots a request holds when it has ``tokens`` tokens under ``scheme``."""
    if scheme == "contiguous-max":
        return max_model_len
    if scheme == "contiguous-exact":
        return final_len
    return -(-tokens // block_size) * block_size


def useful_share(trace: list[tuple[int, int]], scheme: str, max_model_len: int = 2048, block_size: int = 0) -> float:
    """Token slots in use / slots reserved, summed over every decode step of every request."""
    used = reserved = 0
    for prompt, output in trace:
        final = prompt + output
        for tokens in range(prompt + 1, final + 1):      # KV length after each decode step
            used += tokens
            reserved += reserved_slots(tokens, final, scheme, max_model_len, block_size)
    return used / reserved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-model-len", type=int, default=2048)
    args = parser.parse_args()
    trace = make_trace(args.requests, args.seed, args.max_model_len)
    lens = sorted(p + o for p, o in trace)
    print(f"trace T1: {len(trace)} requests, seed {args.seed}; prompt log-uniform [16, 1024], output geometric "
          f"mean 256, cap {args.max_model_len}")
    print(f"  final sequence length: median {lens[len(lens) // 2]}, mean {sum(lens) / len(lens):.0f}, max {lens[-1]}")
    print(f"{'scheme':<28}{'tokens / reserved':>18}{'waste':>9}")
    rows = [("contiguous, max length", "contiguous-max", 0), ("contiguous, exact (oracle)", "contiguous-exact", 0),
            ("paged, block 16", "paged", 16), ("paged, block 128", "paged", 128)]
    for label, scheme, block_size in rows:
        share = useful_share(trace, scheme, args.max_model_len, block_size)
        print(f"{label:<28}{share:>17.1%}{1 - share:>9.1%}")
    print("(ours: arithmetic on trace T1, machine-independent)")
    print("Theirs, for comparison (measured on their traces and systems):")
    print(f"  {PAPER}")
    print(f"  {BLOG}")


if __name__ == "__main__":
    main()
