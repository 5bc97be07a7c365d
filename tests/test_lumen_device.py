"""Lumen as a real PyTorch device (the capstone's reference plugin, practice/capstone/solution/lumen_npu):
PrivateUse1 renamed to ``lumen``, a device module, a C++ allocator and basic kernels, every other op through a
``torch.library`` fallback on CPU views of the same memory, and the engine serving a model from Lumen memory, its
RMSNorm replaced by the plugin's LumenRMSNorm (``CustomOp.register_oot``), which calls Lumen's ``torch.library`` custom
ops (with fake implementations, so that the piecewise graphs of ``torch.compile`` can trace them).

The C++ part is built once per machine into ~/.cache/mini-platform/lumen/ (``LUMEN_BUILD_DIR``), so at most
once per test session; tensor parallelism on Lumen is tests/test_capstone.py's multi-process test.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "practice"))
from capstone import harness  # noqa: E402

PROMPTS = ((1, 17, 42, 99, 7), (1, 5), tuple(range(3, 43)))


@pytest.fixture(scope="module")
def site():
    return harness.install(harness.REFERENCE)


@pytest.fixture
def lumen(site, monkeypatch):
    """The reference plugin as this process's platform, two Lumen devices; everything put back afterwards."""
    from mini_platform import ops, platforms, plugins
    from mini_platform.model.custom_op import CustomOp
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in ("MINI_PLATFORM_PLUGINS", "MINI_PLATFORM_TARGET_DEVICE", "MINI_PLATFORM_KERNEL_BACKEND",
                 "LUMEN_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LUMEN_DEVICE_ROOT", str(harness.fake_device_root("lumen0", "lumen1")))
    monkeypatch.setenv("MINI_PLATFORM", "lumen")
    harness.activate(site)
    import lumen_npu.device
    yield lumen_npu.device
    for name in [m for m in sys.modules if m == harness.PACKAGE or m.startswith(harness.PACKAGE + ".")]:
        del sys.modules[name]   # torch keeps "lumen" (a process registers a device once)
    platforms.clear_current_platform()
    plugins.clear_general_plugins()
    ops.unregister_backend(harness.KERNEL_BACKEND)
    CustomOp.clear_oot()        # later tests build the in-tree layers
    harness.forget_custom_ops()


def test_empty_and_copies_both_ways(lumen):
    x = torch.empty(3, device="lumen")
    assert x.device == torch.device("lumen:0") and x.is_lumen and torch.lumen is lumen
    g = torch.Generator().manual_seed(0)
    host = torch.randn(4, 5, generator=g)
    on_lumen = host.to("lumen")
    assert on_lumen.device.type == "lumen" and torch.equal(on_lumen.cpu(), host)
    assert torch.equal(host.t().to("lumen").cpu(), host.t())             # a strided source
    assert torch.equal(on_lumen.t().contiguous().cpu(), host.t())        # lumen -> lumen, strided
    assert torch.equal(on_lumen.to("lumen:1").cpu(), host) and on_lumen.to("lumen:1").device.index == 1
    assert torch.equal(host.to("lumen", torch.bfloat16).cpu(), host.to(torch.bfloat16))
    lumen.set_device("lumen:1")
    try:
        assert torch.empty(2, device="lumen").device.index == 1 and lumen.current_device() == 1
    finally:
        lumen.set_device(0)
    with pytest.raises(ValueError, match="not visible"):
        lumen.set_device(2)


def test_fill_views_and_ops_through_the_fallback(lumen):
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(3, 4, generator=g), torch.randn(4, 2, generator=g)
    la, lb = a.to("lumen"), b.to("lumen")
    assert torch.equal(torch.empty(2, 3, device="lumen").fill_(1.5).cpu(), torch.full((2, 3), 1.5))
    checks = {
        "matmul": (la @ lb, a @ b), "softmax": (la.softmax(-1), a.softmax(-1)), "cat": (torch.cat([la, la]), torch.cat([a, a])),
        "arange": (torch.arange(5, device="lumen"), torch.arange(5)), "index_select":
        (la.index_select(0, torch.tensor([2, 0]).to("lumen")), a.index_select(0, torch.tensor([2, 0]))),
        "silu": (torch.nn.functional.silu(la), torch.nn.functional.silu(a)), "sum": (la.sum(0), a.sum(0)),
    }
    for name, (got, want) in checks.items():
        assert got.device.type == "lumen", name
        torch.testing.assert_close(got.cpu(), want, msg=name)
    same = la.add_(1)                               # in place: the same tensor object, the memory updated
    assert same is la and torch.equal(la.cpu(), a + 1)
    view = la.t()                                   # a view shares Lumen memory
    view[0, 0] = 100.0
    assert la[0, 0].item() == 100.0
    out = torch.empty(0, device="lumen")            # out= of the wrong size is resized, as on the CPU
    torch.add(lb, 1, out=out)
    assert out.shape == (4, 2) and torch.equal(out.cpu(), b + 1)


def test_memory_comes_back_when_tensors_go(lumen):
    torch.empty(1, device="lumen")
    before = lumen.memory_allocated()
    x = torch.empty(1024, 1024, device="lumen")
    assert lumen.memory_allocated() == before + 4 * 1024 * 1024
    del x
    assert lumen.memory_allocated() == before


def test_the_engine_on_lumen_equals_the_cpu_engine(lumen, monkeypatch):
    from mini_platform import LLM, SamplingParams, platforms
    from mini_platform.model.custom_op import CustomOp
    from mini_platform.model.layers import RMSNorm
    path, expected = harness.tiny_llama(PROMPTS, 6)
    greedy = SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)
    tokens = {}
    for target in ("lumen", "cpu"):
        if target == "cpu":
            monkeypatch.setenv("MINI_PLATFORM_TARGET_DEVICE", "cpu")
            monkeypatch.delenv("MINI_PLATFORM")
            CustomOp.clear_oot()   # replacements are process-wide, as in vLLM: forget Lumen's before the CPU engine
        platforms.clear_current_platform()
        llm = LLM(path, block_size=32, num_kv_blocks=16, enforce_eager=False, cudagraph_capture_sizes=[1, 2, 4])
        assert platforms.current_platform.device_type == target
        engine = llm.engine
        assert next(engine.model.parameters()).device.type == target
        assert engine.runner.attention.kv_caches[0][0].device.type == target
        norms = {type(m).__name__ for m in engine.model.modules() if isinstance(m, RMSNorm)}
        assert norms == {"LumenRMSNorm" if target == "lumen" else "RMSNorm"}
        tokens[target] = [o.token_ids for o in llm.generate([list(p) for p in PROMPTS], greedy)]
        assert engine.stats()["num_graph_steps"] > 0
    assert tokens["lumen"] == tokens["cpu"] == expected


def test_lumen_rms_norm_runs_lumen_custom_ops_in_piecewise_graphs(lumen):
    """The fakes let torch.compile trace the plugin's ops (opcheck checks them against the kernels), and the piecewise
    engine on Lumen, with LumenRMSNorm in place of RMSNorm, equals transformers."""
    from mini_platform import LLM, SamplingParams
    from mini_platform.compilation.split import node_op_name
    from mini_platform.model.layers import RMSNorm
    import lumen_npu.custom_ops  # noqa: F401
    g = torch.Generator().manual_seed(2)
    x, residual = (torch.randn(3, 2, 16, generator=g).to(torch.bfloat16).to("lumen") for _ in range(2))
    weight = torch.randn(16, generator=g).to("lumen")
    torch.library.opcheck(torch.ops.lumen.rms_norm.default, (x, weight, 1e-6))
    torch.library.opcheck(torch.ops.lumen.fused_add_rms_norm.default, (x, residual, weight, 1e-6))
    path, expected = harness.tiny_llama(PROMPTS, 6)
    llm = LLM(path, block_size=32, num_kv_blocks=16, max_num_seqs=4, cudagraph_capture_sizes=[1, 2, 4],
              compilation_config={"cudagraph_mode": "PIECEWISE"})
    engine = llm.engine
    assert {type(m).__name__ for m in engine.model.modules() if isinstance(m, RMSNorm)} == {"LumenRMSNorm"}
    greedy = SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)
    assert [o.token_ids for o in llm.generate([list(p) for p in PROMPTS], greedy)] == expected
    assert engine.stats()["steps_by_mode"]["PIECEWISE"] > 0
    traced = {node_op_name(n) for n in engine.runner.piecewise.backend.graph_modules[0].graph.nodes}
    assert {"lumen::rms_norm", "lumen::fused_add_rms_norm"} <= traced


def test_a_machine_without_a_compiler_is_told_what_to_install(lumen, tmp_path):
    """A fresh process with an empty build cache and no compiler: the first Lumen tensor says what is missing."""
    env = {**os.environ, "LUMEN_BUILD_DIR": str(tmp_path), "CXX": "no-such-c++",
           "PYTHONPATH": os.pathsep.join([str(harness.REFERENCE), str(harness.REPO)])}
    code = "import torch, lumen_npu.device\ntorch.empty(3, device='lumen')"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "LumenBuildError" in done.stderr and "C++ compiler" in done.stderr, done.stderr[-800:]
    assert "'no-such-c++' is not on PATH" in done.stderr and "apt-get install g++" in done.stderr
    assert not list(tmp_path.iterdir()), "nothing is built (or half built) without a compiler"
