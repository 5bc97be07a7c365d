"""Every Triton kernel of the engine and of the exercises, compiled for sm_80, sm_90 and gfx942 (not run).

    python benchmarks/triton_compile.py [--markdown]

1. In this process, in the Triton interpreter, the launches are recorded as they happen
   (``mini_platform.ops.triton.aot.record_launches``): the engine (``LLM`` on ``backend="triton"``)
   generating on one-layer tiny Llama checkpoints in fp32, fp16 (head_dim 16) and bf16 (head_dim 128, as
   in Llama-3-8B) and tiny Mixtral checkpoints in fp32 and bf16 (head_dim 128), with chunked prefills and
   decodes; the DeepSeek kernels (MLA and grouped top-k routing) called directly on DeepSeek-V3-like shapes
   in fp32 and bf16 (the engine runs no DeepSeek checkpoint yet); and the reference solutions of exercises
   196, 215 and 237 on shapes like their tests'. The capstone ships no Triton kernel.
2. In subprocesses without ``TRITON_INTERPRET`` (two at once), each distinct launch is compiled by Triton for the
   three targets, and the table prints registers per thread, spill bytes (NVIDIA: ``ptxas -v`` of the
   wheel; AMD: VGPR spills), shared memory, warps and the occupancy those allow on an A100 / H100
   (limits in ``aot.SM_LIMITS``) or, for MI300, the compiler's own waves per SIMD (of 8).

One launch is recorded differently from how it ran: ``invokefused_moe_kernel`` passes
``DOT_IN_FP32=True`` for every dtype under the interpreter (which miscomputes bf16 dots) and
``a.dtype == float32`` on a GPU; :func:`as_on_gpu` applies the GPU rule, so the bf16/fp16 GEMMs are
compiled for the tensor cores as a GPU would run them. A compile error prints ``ERROR`` and exits 1.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

from mini_platform import LLM, SamplingParams
from mini_platform.model import make_tiny_checkpoint
from mini_platform.ops.triton import aot   # imports no kernel module

REPO = Path(__file__).resolve().parent.parent
ENGINE_SOURCES = [f"mini_platform.ops.triton.{m}" for m in ("activation", "attention", "layernorm", "mla", "moe",
                                                               "rotary")]
EXERCISES = {196: "practice/196_triton_silu_and_mul/solution.py", 215: "practice/215_triton_paged_decode/solution.py",
             237: "practice/237_triton_grouped_gemm/solution.py"}
WIDE = {"hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 128,
        "intermediate_size": 512}   # head_dim 128 as in Llama-3-8B and Mixtral-8x7B; 4 query heads per KV head
# (arch, dtype, config overrides) of the engine runs the recorder watches; one layer is enough (every layer
# launches the same kernels with the same arguments)
ENGINE_RUNS = [("llama", "float32", {}), ("llama", "float16", {}), ("llama", "bfloat16", WIDE),
               ("mixtral", "float32", {}), ("mixtral", "bfloat16", {**WIDE, "num_attention_heads": 2})]


def run_engine(arch: str, dtype: str, overrides: dict, workdir: Path) -> None:
    """Generate on a one-layer tiny checkpoint: a 37-token prompt split into chunks of 32 (so the MoE GEMMs
    see more rows than experts and take the large tiles) beside a short one, then batched decodes (fewer
    rows than experts: the small tiles)."""
    model = make_tiny_checkpoint(workdir / f"{arch}-{dtype}-{len(overrides)}", arch=arch, seed=1,
                                 num_hidden_layers=1, **overrides)
    llm = LLM(model=str(model), backend="triton", device="cpu", dtype=dtype, max_num_batched_tokens=32)
    llm.generate([list(range(3, 40)), [7, 8, 9]], SamplingParams(temperature=0, max_tokens=2, ignore_eos=True))


def run_deepseek_kernels() -> None:
    """The MLA kernels and grouped top-k routing on DeepSeek-V3's shapes (kv_lora_rank 512, qk_rope_head_dim 64,
    16 heads per rank, a 192/128 Dqk/Dv prefill; 256 experts in 8 groups, 4 kept, 8 chosen, sigmoid scores and a
    correction bias) and DeepSeek-V2's routing (160 experts, 8 groups, 3 kept, 6 chosen, softmax, no bias), with
    block size 16 and a padding slot. The prefill uses two heads: the head count changes no compiled argument."""
    from mini_platform import ops

    gen = torch.Generator().manual_seed(0)
    rand = lambda *shape, dtype: torch.randn(*shape, generator=gen).to(dtype)  # noqa: E731
    latent, rope, heads, block_size, tokens = 512, 64, 16, 16, 20
    for dtype in (torch.float32, torch.bfloat16):
        kv_c_cache = torch.zeros(4, block_size, 1, latent, dtype=dtype)
        k_pe_cache = torch.zeros(4, block_size, 1, rope, dtype=dtype)
        slots = torch.cat([torch.arange(tokens - 1), torch.tensor([-1])]).to(torch.int32)
        ops.concat_and_cache_mla(rand(tokens, latent, dtype=dtype), rand(tokens, rope, dtype=dtype), kv_c_cache,
                                 k_pe_cache, slots, backend="triton")
        tables = torch.arange(4, dtype=torch.int32).view(2, 2)
        seq_lens = torch.tensor([3, tokens - 1], dtype=torch.int32)
        ops.mla_decode_attention(rand(2, heads, latent, dtype=dtype), rand(2, heads, rope, dtype=dtype), kv_c_cache,
                                 k_pe_cache, tables, seq_lens, 192 ** -0.5, backend="triton")
        ops.gather_mla_cache(kv_c_cache, k_pe_cache, tables, seq_lens, backend="triton")
        starts = torch.tensor([0, 3, tokens - 1], dtype=torch.int32)
        ops.mla_prefill_attention(rand(tokens - 1, 2, 192, dtype=dtype), rand(tokens - 1, 2, 192, dtype=dtype),
                                  rand(tokens - 1, 2, 128, dtype=dtype), starts, starts, 192 ** -0.5, backend="triton")
    ops.moe_grouped_topk(rand(3, 256, dtype=torch.float32), 8, 8, 4, True, "sigmoid",
                         rand(256, dtype=torch.float32), 2.5, backend="triton")
    ops.moe_grouped_topk(rand(3, 160, dtype=torch.bfloat16), 6, 8, 3, False, "softmax", None, 1.0, backend="triton")


def run_exercises() -> None:
    """The exercises' reference solutions in fp32, bf16 and fp16, on shapes like their tests' (masked tails,
    GQA, the small and the large M tiles of the MoE GEMM) plus head_dim 128 for exercise 215."""
    gen = torch.Generator().manual_seed(0)
    dtypes = (torch.float32, torch.bfloat16, torch.float16)
    silu = aot.load_source(EXERCISES[196])
    for dtype in dtypes:
        for shape in ((3, 2 * 40), (2, 2 * 3000)):
            silu.silu_and_mul(torch.randn(*shape, generator=gen).to(dtype))
    decode = aot.load_source(EXERCISES[215])
    for dtype, (nh, nkv, bs, hd) in zip(dtypes, ((4, 2, 16, 16), (8, 2, 16, 128), (3, 1, 8, 12))):
        caches = [torch.randn(8, bs, nkv, hd, generator=gen).to(dtype) for _ in range(2)]
        tables = torch.randperm(8, generator=gen).view(2, 4).to(torch.int32)
        decode.paged_decode_attention(torch.randn(2, nh, hd, generator=gen).to(dtype), *caches, tables,
                                      torch.tensor([5, 3 * bs], dtype=torch.int32), hd ** -0.5)
    # 237's kernel has the engine's contract: the engine's fused_experts launches it in place of its own.
    from mini_platform.ops.triton import moe

    engine_kernel, moe.fused_moe_kernel = moe.fused_moe_kernel, aot.load_source(EXERCISES[237]).fused_moe_kernel
    try:
        for dtype, tokens in ((torch.float32, 1), (torch.float32, 40), (torch.bfloat16, 1)):   # BLOCK_M 16 and 64
            ids = torch.randint(0, 4, (tokens, 2), generator=gen, dtype=torch.int32)
            w13, w2 = torch.randn(4, 48, 40, generator=gen).to(dtype), torch.randn(4, 40, 24, generator=gen).to(dtype)
            moe.fused_experts(torch.randn(tokens, 40, generator=gen).to(dtype), w13, w2,
                              torch.rand(tokens, 2, generator=gen), ids)
    finally:
        moe.fused_moe_kernel = engine_kernel


def as_on_gpu(launch: aot.Launch) -> aot.Launch:
    """The launch as a GPU would make it: ``fused_moe_kernel``'s DOT_IN_FP32 is the operand dtype's (see module doc)."""
    if launch.kernel != "fused_moe_kernel":
        return launch
    a_type = next(kind for name, kind, _ in launch.params if name == "a_ptr")
    params = tuple((name, kind, a_type == "*fp32") if name == "DOT_IN_FP32" else (name, kind, key)
                   for name, kind, key in launch.params)
    if params == launch.params and a_type != "*fp32":
        raise RuntimeError("fused_moe_kernel has no DOT_IN_FP32 constexpr any more: update as_on_gpu")
    return aot.Launch(launch.source, launch.kernel, params, launch.options)


def record(engine_runs=ENGINE_RUNS, exercises: bool = True) -> list[aot.Launch]:
    """The distinct launches of the given engine runs, of the DeepSeek kernels and of the exercises, as a GPU
    would make them."""
    with tempfile.TemporaryDirectory() as tmp, aot.record_launches(ENGINE_SOURCES + list(EXERCISES.values())) as got:
        for arch, dtype, overrides in engine_runs:
            run_engine(arch, dtype, overrides, Path(tmp))
        run_deepseek_kernels()
        if exercises:
            run_exercises()
    return list(dict.fromkeys(as_on_gpu(launch) for launch in got))


def config_text(launch: aot.Launch) -> str:
    """The constexprs and launch options, short (``BLOCK_M=16 ... num_warps=8``), then the integer and pointer
    arguments the JIT did not find divisible by 16 (``not16=H,x_row_stride``): launches that differ only there
    are compiled apart."""
    items = [(k, v) for k, v in launch.constexprs().items() if v is not None] + list(launch.options)
    text = " ".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in items)
    odd = [name for name, kind, key in launch.params if key == "" and kind != "constexpr"]
    return text + (f" not16={','.join(odd)}" if odd else "")


def kernel_name(launch: aot.Launch) -> str:
    source = launch.source
    short = source.rsplit(".", 1)[-1] if not source.endswith(".py") else f"ex{Path(source).parent.name[:3]}"
    return f"{short}.{launch.kernel}"


def occupancy_text(result: dict) -> str:
    if "occupancy" in result:
        occ = result["occupancy"]
        return f"{occ['warps']}/64 warps ({occ['fraction']:.0%}, {occ['limit']})"
    return f"{result['waves_per_simd']}/8 waves per SIMD" if "waves_per_simd" in result else ""


def table(results: list[dict], markdown: bool) -> str:
    head = ["kernel", "dtype", "config", "target", "regs", "spill B", "smem B", "warps", "occupancy"]
    rows = []
    for r in results:
        launch = aot.Launch.from_json(r["launch"])
        base = [kernel_name(launch), launch.dtypes(), config_text(launch), r["target"]]
        if "error" in r:
            rows.append(base + ["ERROR", r["error"].splitlines()[0][:80], "", "", ""])
        else:
            rows.append(base + [str(r["regs"]), str(r["spills"]), str(r["shared"]), str(r["num_warps"]),
                                occupancy_text(r)])
    if markdown:
        return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                         + ["| " + " | ".join(row) + " |" for row in rows])
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    return "\n".join("  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip() for row in [head, *rows])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    args = parser.parse_args()
    # The recording runs the kernels on CPU tensors: the interpreter, chosen before any kernel module is imported
    # (here, not at import time, so that importing this module never turns a GPU test run into an interpreted one).
    os.environ["TRITON_INTERPRET"] = "1"
    os.chdir(REPO)   # the exercises are recorded by their paths relative to the repository
    start = time.perf_counter()
    launches = record()
    recorded = time.perf_counter()
    results = aot.compile_in_subprocess(launches)
    compiled = time.perf_counter()
    import triton

    print(f"Triton {triton.__version__}: {len(launches)} distinct launches x {len(aot.TARGETS)} targets, "
          f"compiled, not run; recorded in {recorded - start:.0f} s (interpreter), compiled in "
          f"{compiled - recorded:.0f} s (subprocesses without the interpreter)")
    print(table(results, args.markdown))
    limits = "; ".join(f"{t} ({s.gpu}): {s.max_warps} warps, {s.registers} registers, {s.shared_per_sm // 1024} KB "
                       f"shared per SM" for t, s in aot.SM_LIMITS.items())
    print(f"occupancy limits: {limits} (see mini_platform/ops/triton/aot.py SmLimits)")
    errors = [r for r in results if "error" in r]
    for r in errors:
        print(f"\nERROR {r['launch']['kernel']} for {r['target']}:\n{r['error']}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
