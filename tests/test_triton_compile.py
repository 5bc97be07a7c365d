"""Every Triton kernel of the engine and of the exercises compiles for sm_80, sm_90 and gfx942 (Triton 3.7.1).

The launches are recorded here, in the Triton interpreter (tests/conftest.py turns it on), while the engine
generates on tiny checkpoints and the exercises' solutions run (benchmarks/triton_compile.py); the compile
runs in subprocesses without TRITON_INTERPRET, since a kernel the interpreter has patched does not compile
in the same process. Compiled, not run: nothing here needs a GPU. The recording and compiling take about
a minute of CPU on this 2-core machine (two compile processes).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from benchmarks import triton_compile
from mini_platform.ops.triton import aot

# The slow tier (python -m pytest -m slow): about a minute and a half of compiling on 2 cores.
pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
# The engine's launches may spill at most this much (bytes per thread, sm_80/sm_90). The one spill left is
# 4 bytes of the fp16 attention launch with one request on sm_90, at 48 registers: not register pressure.
MAX_ENGINE_SPILL = 4


@pytest.fixture(scope="module")
def compiled(request):
    cwd = os.getcwd()
    os.chdir(ROOT)   # the exercises are recorded by their paths relative to the repository
    try:
        launches = triton_compile.record()
        return launches, aot.compile_in_subprocess(launches, keep=("ptx",))
    finally:
        os.chdir(cwd)


def test_every_recorded_launch_compiles_for_every_target(compiled):
    launches, results = compiled
    assert len(results) == len(launches) * len(aot.TARGETS)
    errors = [f"{r['launch']['kernel']} for {r['target']}: {r['error']}" for r in results if "error" in r]
    assert not errors, "\n".join(errors)
    for r in results:
        assert r["regs"] > 0 and r["num_warps"] in (4, 8), r
        if r["target"] in aot.SM_LIMITS:
            assert r["occupancy"]["warps"] > 0, r


def test_every_kernel_is_recorded_in_every_dtype_the_engine_uses(compiled):
    """A kernel the runs never launch would never be compiled: they must reach every @triton.jit function
    but the device functions that kernels call (compiled inside their callers)."""
    launches, _ = compiled
    kernels = set()
    for source in triton_compile.ENGINE_SOURCES + list(triton_compile.EXERCISES.values()):
        jitted = dict(aot.jit_kernels(aot.load_source(source)))
        called = {name for fn in jitted.values() for name in fn.fn.__code__.co_names}
        kernels |= {(source, name) for name in jitted if name not in called}
    assert {(launch.source, launch.kernel) for launch in launches} == kernels
    engine_dtypes = {launch.dtypes().split("/")[0] for launch in launches if launch.source.startswith("mini_platform")}
    assert engine_dtypes == {"fp32", "bf16", "fp16"}


def test_moe_gemm_is_compiled_as_a_gpu_launches_it(compiled):
    """Under the interpreter the wrapper asks for fp32 dots in every dtype; on a GPU only for fp32 operands."""
    launches, _ = compiled
    moe = [launch for launch in launches if launch.kernel == "fused_moe_kernel"]
    by_dtype = {(launch.dtypes().split("/")[0], launch.constexprs()["DOT_IN_FP32"]) for launch in moe}
    assert by_dtype == {("fp32", True), ("bf16", False)}
    assert {launch.constexprs()["BLOCK_M"] for launch in moe} == {16, 64}   # both tile sets of block_config


def test_engine_kernels_do_not_spill(compiled):
    """The finding of issue 21, fixed: the fused-MoE GEMM (255 registers and spills at 4 warps) and the
    HEAD_DIM-128 attention (255 registers, ~340 bytes of spills with 3 pipeline stages)."""
    _, results = compiled
    spills = [(r["launch"]["kernel"], r["target"], r["regs"], r["spills"]) for r in results
              if r["target"] in aot.SM_LIMITS and r["launch"]["source"].startswith("mini_platform")
              and r["spills"] > MAX_ENGINE_SPILL]
    assert not spills


def test_full_precision_dots_compile_without_tf32_and_bf16_dots_on_tensor_cores(compiled):
    """The interpreter ignores input_precision; the compiler would turn an fp32 tl.dot into TF32 tensor-core
    instructions unless the kernel asks for "ieee", as the attention, the MLA kernels, the fp32 MoE GEMM and
    exercise 237 do."""
    _, results = compiled
    dots = [r for r in results if r["launch"]["kernel"] in ("_paged_attention_kernel", "fused_moe_kernel",
                                                            "_mla_decode_stage1_kernel", "_mla_prefill_kernel")
            and "ptx" in r]
    assert len(dots) > 10
    for r in dots:
        launch = aot.Launch.from_json(r["launch"])
        tensor_core = re.search(r"\bw?g?mma\.", r["ptx"]) is not None      # mma.sync on sm_80, wgmma on sm_90
        assert "tf32" not in r["ptx"], (launch.kernel, r["target"])
        bf16_gemm = launch.kernel == "fused_moe_kernel" and not launch.constexprs()["DOT_IN_FP32"]
        assert tensor_core == bf16_gemm, (launch.kernel, launch.dtypes(), r["target"])   # the others dot in fp32
        if bf16_gemm:
            assert ".bf16" in r["ptx"]


def test_mla_decode_compiles_at_deepseek_v3_size_without_spills(compiled):
    """The stage-1 MLA decode at kv_lora_rank 512 and qk_rope_head_dim 64 (DeepSeek-V3), fp32 and bf16 caches:
    no spills on any target at 4 warps (see ``_decode_launch_options`` in ops/triton/mla.py)."""
    _, results = compiled
    stage1 = [r for r in results if r["launch"]["kernel"] == "_mla_decode_stage1_kernel"
              and aot.Launch.from_json(r["launch"]).constexprs()["BLOCK_L"] == 512]
    assert {(aot.Launch.from_json(r["launch"]).dtypes().split("/")[0], r["target"]) for r in stage1} == \
        {(dtype, target) for dtype in ("fp32", "bf16") for target in aot.TARGETS}
    for r in stage1:
        assert r["spills"] == 0, r
        if r["target"] in aot.SM_LIMITS:
            assert r["occupancy"]["warps"] >= 8, r


BAD_KERNEL = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def small_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr):
        i = tl.arange(0, M)
        tile = i[:, None] * M + i[None, :]
        tl.store(c_ptr + tile, tl.dot(tl.load(a_ptr + tile), tl.load(b_ptr + tile)))
''')


def test_a_kernel_the_interpreter_accepts_but_the_compiler_rejects_fails_the_check(tmp_path):
    """tl.dot with K = 8: the interpreter computes it, Triton 3.7.1's NVIDIA backend needs K >= 16 (the AMD one
    accepts it). (A tl.arange of 12 would not do: 3.7.1's interpreter rejects it too.)"""
    path = tmp_path / "bad_kernel.py"
    path.write_text(BAD_KERNEL)
    a, b, c = torch.randn(8, 8), torch.randn(8, 8), torch.zeros(8, 8)
    with aot.record_launches([str(path)]) as launches:
        aot.load_source(str(path)).small_dot_kernel[(1,)](a, b, c, M=8)
    torch.testing.assert_close(c, a @ b)                          # the interpreter ran it
    results = aot.compile_in_subprocess(launches)
    assert [r["target"] for r in results] == list(aot.TARGETS)
    errors = {r["target"]: r.get("error", "") for r in results}
    assert "K >= 16" in errors["sm_80"] and "K >= 16" in errors["sm_90"], errors
    assert errors["gfx942"] == ""
    assert "ERROR" in triton_compile.table(results, markdown=False)


def test_the_recorder_and_the_compiler_refuse_the_wrong_process(monkeypatch):
    launch = aot.Launch("mini_platform.ops.triton.activation", "silu_and_mul_kernel", ())
    with pytest.raises(RuntimeError, match="compile_in_subprocess"):
        aot.compile_launch(launch, "sm_90")                       # this process runs the interpreter
    monkeypatch.delenv("TRITON_INTERPRET")
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET=1"):
        with aot.record_launches(["mini_platform.ops.triton.activation"]):
            pass


@pytest.mark.parametrize("target, regs, shared, warps, want", [
    ("sm_90", 255, 0, 4, (2, "registers")),       # 255 -> 256 per thread, 8192 per warp: 8 warps fit
    ("sm_80", 64, 24576, 4, (6, "shared")),       # 24 KB + 1 KB reserved: 6 blocks in 164 KB
    ("sm_90", 64, 24576, 4, (8, "registers")),    # 228 KB would hold 9; 64 registers allow 32 warps
    ("sm_80", 16, 0, 4, (16, "warps")),           # 64 warps / 4
    ("sm_90", 16, 0, 1, (32, "blocks")),          # at most 32 blocks per SM
])
def test_occupancy_by_hand(target, regs, shared, warps, want):
    occ = aot.occupancy(target, regs, shared, warps)
    assert (occ["blocks"], occ["limit"]) == want
    assert occ["warps"] == want[0] * warps


def test_gpu_check_refuses_without_a_gpu(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: benchmarks/gpu_check.py would run")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "benchmarks/gpu_check.py", "--out", str(tmp_path / "out")], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert "no NVIDIA GPU" in done.stderr and "triton_compile.py" in done.stderr
    assert not (tmp_path / "out").exists()
