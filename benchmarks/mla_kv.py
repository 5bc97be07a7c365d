"""MLA's KV cache: bytes per token for real configs, and what a decode step reads, absorbed against expanded.

1. Arithmetic, machine-independent: KV-cache bytes per token (all layers, bf16) and per 131,072-token (128k)
   request, from the ``config.json`` fields written in :data:`CONFIGS` (each with the hub repository it comes
   from). MHA and GQA cache ``2 * layers * kv_heads * head_dim`` values per token (K and V); MLA caches one latent
   ``layers * (kv_lora_rank + qk_rope_head_dim)``, shared by every head. Two "what if" rows: Llama-3-70B with all
   64 heads keeping their own K/V, and DeepSeek-V3 caching each of its 128 heads' key (128 + 64) and value (128).
2. One decode step of one MLA layer on a tiny DeepSeek-V3-shaped checkpoint built here (``make_tiny_checkpoint``;
   the per-head dims and the latent of DeepSeek-V3, 8 heads: what one rank holds when TP=16 splits V3's 128):
   - analytically, per cached token: the values the attention reads (absorbed: the latent, ``L + R``; expanded:
     the latent, then every head's key and value made from it, ``nh * (dn + R + dv)``) and the multiply-adds;
   - measured, one run on this machine's CPU: ``ops.mla_decode_attention`` with ``W_UK`` folded into the query
     and ``W_UV`` applied after (the engine's decode), against ``gather_mla_cache`` + ``expand_latents`` +
     ``mla_prefill_attention`` (expand-then-attend, the engine's prefill form used for a decode step), fp32,
     cpu backend, medians of ``--repeats`` alternating runs, as ratios.

No timing is asserted anywhere. Run: ``python benchmarks/mla_kv.py`` (``--quick`` for a short run).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.hostinfo import describe  # noqa: E402
from mini_platform import ops  # noqa: E402
from mini_platform.model import load_model, make_tiny_checkpoint  # noqa: E402
from mini_platform.model.mla import expand_latents  # noqa: E402

BF16 = 2
CONTEXT_128K = 131_072
# The attention fields of each config.json (hub repository named; every field below was checked against copies of
# that file; head_dim = hidden_size // num_attention_heads where the file has no head_dim).
CONFIGS = {
    "Llama-3-70B": ("meta-llama/Meta-Llama-3-70B", {"num_hidden_layers": 80, "hidden_size": 8192,
                                                    "num_attention_heads": 64, "num_key_value_heads": 8}),
    "Qwen2.5-72B": ("Qwen/Qwen2.5-72B", {"num_hidden_layers": 80, "hidden_size": 8192, "num_attention_heads": 64,
                                         "num_key_value_heads": 8}),
    "DeepSeek-V3": ("deepseek-ai/DeepSeek-V3", {"num_hidden_layers": 61, "hidden_size": 7168,
                                                "num_attention_heads": 128, "num_key_value_heads": 128,
                                                "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                                                "v_head_dim": 128}),
}


def kv_values_per_token(cfg: dict, every_head: bool = False) -> int:
    """Cached values per token over all layers. MLA: one latent + rotary key per layer (``every_head``: as if each
    head kept its own key ``dn + R`` and value ``dv``); MHA/GQA: K and V of each KV head (``every_head``: of every
    query head)."""
    layers, heads = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    if cfg.get("kv_lora_rank") is not None:
        if every_head:
            return layers * heads * (cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"] + cfg["v_head_dim"])
        return layers * (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"])
    kv_heads = heads if every_head else cfg.get("num_key_value_heads") or heads
    return 2 * layers * kv_heads * (cfg.get("head_dim") or cfg["hidden_size"] // heads)


def kv_table() -> list[tuple[str, str, int]]:
    """(model, what is cached, bf16 bytes per token) for part 1."""
    llama, qwen, v3 = (CONFIGS[name][1] for name in ("Llama-3-70B", "Qwen2.5-72B", "DeepSeek-V3"))
    return [("Llama-3-70B", "MHA-equivalent: 64 KV heads x 128", BF16 * kv_values_per_token(llama, every_head=True)),
            ("Llama-3-70B", "GQA: 8 KV heads x 128 (real)", BF16 * kv_values_per_token(llama)),
            ("Qwen2.5-72B", "GQA: 8 KV heads x 128 (real)", BF16 * kv_values_per_token(qwen)),
            ("DeepSeek-V3", "MHA-equivalent: 128 heads x (192 + 128)", BF16 * kv_values_per_token(v3, every_head=True)),
            ("DeepSeek-V3", "MLA: latent 512 + rope 64 (real)", BF16 * kv_values_per_token(v3))]


def part1() -> None:
    print("1. KV-cache bytes, bf16, all layers (arithmetic from the config.json fields; machine-independent)")
    for name, (repo, fields) in CONFIGS.items():
        print(f"   {name:12s} huggingface.co/{repo} config.json: {fields}")
    rows = kv_table()
    mla = rows[-1][2]
    print(f"   {'model':12s} {'cached per token and layer':40s} {'bytes/token':>12s} {'128k request':>12s} {'x MLA':>7s}")
    for name, what, per_token in rows:
        print(f"   {name:12s} {what:40s} {per_token:12,d} {per_token * CONTEXT_128K / 2**30:8.2f} GiB "
              f"{per_token / mla:6.1f}x")
    print("   (128k request = 131,072 tokens. Llama-3-70B's own context is 8,192; Llama-3.1-70B has the same attention "
          "shape and a 128k context.)")


def tiny_v3_layer(folder: Path, heads: int = 8):
    """Layer 0's attention of a tiny checkpoint with DeepSeek-V3's MLA dims and ``heads`` heads."""
    path = make_tiny_checkpoint(folder / "tiny-v3", "deepseek_v3", num_attention_heads=heads,
                                num_key_value_heads=heads, kv_lora_rank=512, qk_rope_head_dim=64,
                                qk_nope_head_dim=128, v_head_dim=128, q_lora_rank=96)
    attn = load_model(path).model.layers[0].self_attn
    attn.process_weights_after_loading()
    return attn


def decode_inputs(attn, batch: int, context: int, block_size: int = 16, seed: int = 0) -> dict:
    """A filled paged latent cache (``batch`` requests of ``context`` tokens) and one decode query per request."""
    g = torch.Generator().manual_seed(seed)
    nh, latent, rope, dn = attn.num_heads, attn.latent, attn.dr, attn.dn
    blocks = -(-context // block_size)
    kv_c_cache = torch.randn(batch * blocks, block_size, 1, latent, generator=g)
    k_pe_cache = torch.randn(batch * blocks, block_size, 1, rope, generator=g)
    tables = torch.randperm(batch * blocks, generator=g).view(batch, blocks).to(torch.int32)
    return {"q_nope": torch.randn(batch, nh, dn, generator=g), "q_pe": torch.randn(batch, nh, rope, generator=g),
            "kv_c_cache": kv_c_cache, "k_pe_cache": k_pe_cache, "block_tables": tables,
            "seq_lens": torch.full((batch,), context, dtype=torch.int32)}


def absorbed_step(attn, x: dict) -> torch.Tensor:
    """The engine's decode: W_UK into the query, attention over the latent cache, W_UV after. ``[B, nh, dv]``."""
    q_latent = torch.einsum("bhd,hdl->bhl", x["q_nope"], attn.w_uk)
    latent = ops.mla_decode_attention(q_latent, x["q_pe"], x["kv_c_cache"], x["k_pe_cache"], x["block_tables"],
                                      x["seq_lens"], attn.scale, backend="cpu")
    return torch.einsum("bhl,hvl->bhv", latent, attn.w_uv)


def expanded_step(attn, x: dict) -> torch.Tensor:
    """Expand-then-attend for the same decode: every cached latent becomes each head's key and value. ``[B, nh, dv]``."""
    c, pe = ops.gather_mla_cache(x["kv_c_cache"], x["k_pe_cache"], x["block_tables"], x["seq_lens"], backend="cpu")
    keys, values = expand_latents(c, pe, attn.w_uk, attn.w_uv)
    batch = x["seq_lens"].shape[0]
    q_start = torch.arange(batch + 1, dtype=torch.int32)
    kv_start = torch.nn.functional.pad(x["seq_lens"].cumsum(0), (1, 0)).to(torch.int32)
    query = torch.cat((x["q_nope"], x["q_pe"]), dim=-1)
    return ops.mla_prefill_attention(query, keys, values, q_start, kv_start, attn.scale, backend="cpu")


def per_cached_token(nh: int, latent: int, rope: int, dn: int, dv: int) -> dict[str, tuple[int, int]]:
    """(values read by the attention, multiply-adds) per cached token, per layer, for one decode query."""
    absorbed = (latent + rope, nh * (latent + rope) + nh * latent)            # scores on L + R, output on L
    expanded = (latent + rope + nh * (dn + rope + dv),                        # latent, then the expanded K and V
                latent * nh * (dn + dv) + nh * (dn + rope) + nh * dv)         # expansion + scores + output
    return {"absorbed": absorbed, "expanded": expanded}


def part2(contexts: list[int], batch: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        attn = tiny_v3_layer(Path(folder))
    nh, latent, rope, dn, dv = attn.num_heads, attn.latent, attn.dr, attn.dn, attn.dv
    print(f"\n2. One MLA decode step, tiny DeepSeek-V3-shaped layer: nh={nh} (V3: 128; 8 = one rank under TP=16), "
          f"L={latent}, R={rope}, dn={dn}, dv={dv}")
    costs = per_cached_token(nh, latent, rope, dn, dv)
    for name, (values, macs) in costs.items():
        print(f"   {name:9s} per cached token and layer: reads {values:6,d} values = {values * BF16:7,d} bytes in bf16, "
              f"{macs:9,d} multiply-adds")
    ratio = costs["expanded"][0] / costs["absorbed"][0]
    full = per_cached_token(128, 512, 64, 128, 128)
    print(f"   expanded / absorbed bytes read: {ratio:.1f}x here; {full['expanded'][0] / full['absorbed'][0]:.1f}x "
          f"with V3's 128 heads (a cache that stored the expanded K/V would read only the expanded part: "
          f"{128 * (128 + 64 + 128) / (512 + 64):.1f}x)")
    torch.set_num_threads(1)
    print(f"   measured on this machine, cpu backend, fp32, 1 thread, batch {batch}, median of {repeats} alternating runs:")
    print(f"   machine: {describe()}")
    print(f"   {'context':>8s} {'absorbed ms':>12s} {'expanded ms':>12s} {'expanded/absorbed':>18s} {'max |diff|':>11s}")
    with torch.inference_mode():
        for context in contexts:
            x = decode_inputs(attn, batch, context)
            diff = (absorbed_step(attn, x) - expanded_step(attn, x)).abs().max().item()
            times: dict[str, list[float]] = {"absorbed": [], "expanded": []}
            for _ in range(repeats):
                for name, step in (("absorbed", absorbed_step), ("expanded", expanded_step)):
                    start = time.perf_counter()
                    step(attn, x)
                    times[name].append(time.perf_counter() - start)
            a, e = (statistics.median(times[n]) * 1e3 for n in ("absorbed", "expanded"))
            print(f"   {context:8d} {a:12.2f} {e:12.2f} {e / a:17.1f}x {diff:11.1e}")
    print("   (a CPU ratio of one run; on a GPU the decode is bound by the bytes read, which the analytic rows give)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two short contexts, 3 repeats")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=2)
    args = parser.parse_args()
    part1()
    contexts, repeats = ([128, 512], 3) if args.quick else ([256, 1024, 4096], args.repeats)
    part2(contexts, args.batch, repeats)


if __name__ == "__main__":
    main()
