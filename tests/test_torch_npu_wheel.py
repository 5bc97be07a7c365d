"""Every torch_npu call of the Ascend backend, checked against the real torch-npu wheel (read as data, never
installed; see tests/npu_wheel.py and tests/npu_calls.py).

The calls are collected, not listed: recorded while the engine runs tiny Llama, Mixtral and Qwen2-MoE checkpoints
on ``backend="npu"`` under the emulation (eager and with ACL graphs, MoE routing v1 and v2) and while the MLA and
grouped-routing kernels run on DeepSeek-like shapes (:func:`run_mla_kernels`), while the MC2 dispatcher runs one
MoE layer on a one-rank gloo group as an A3 and as an A2 chip (:func:`run_mc2_exchange`), and found by an AST scan
of the sources. Skipped, with the command that fetches it, when the wheel is not on this machine
(``.ci/run`` downloads it).
"""
from __future__ import annotations

import ast
import dataclasses
import importlib.util
import inspect
import re
from pathlib import Path

import pytest

import npu_calls
import npu_wheel
from npu_calls import Call

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch_npu") is not None,
                                reason="a real torch_npu is installed; the emulation refuses to shadow it")

PROMPTS = [[5, 9, 13, 2, 7, 11, 3], [8, 1, 4], [6, 6, 10, 12, 14]]
# (architecture, MoE routing, enforce_eager): each routing once eagerly and once under ACL graphs.
WORKLOADS = [("llama", "v2", True), ("llama", "v2", False), ("mixtral", "v2", True), ("mixtral", "v1", False),
             ("qwen2_moe", "v1", True), ("qwen2_moe", "v2", False)]

# Where the wheel contradicts itself: the emulation follows the op documentation, the meta function says otherwise.
# (op, output index) -> the documentation's words (checked to be in this release's _op_plugin_docs.py).
DOCUMENTED_OVER_META = {
    ("npu_fused_infer_attention_score", 1): "softmax_lse_flag为False时, 则输出shape为[1]的值为0的Tensor",
}


@pytest.fixture(scope="module")
def wheel() -> npu_wheel.Wheel:
    path = npu_wheel.wheel_path()
    if path is None:
        pytest.skip(f"the torch-npu {npu_wheel.pinned_version()} wheel is not here; fetch it (as .ci/run does) with "
                    f"`{npu_wheel.download_command()}` or set {npu_wheel.ENV_VAR}")
    return npu_wheel.open_wheel(path)


def run_workloads(tmp: Path) -> list[Call]:
    """Record every torch_npu call the engine makes on :data:`WORKLOADS` (chunked prefill, prefix reuse, decode)."""
    from mini_platform import LLM, SamplingParams
    from mini_platform.model.tiny import make_tiny_checkpoint

    params = SamplingParams(temperature=0, max_tokens=3, ignore_eos=True)
    calls: list[Call] = []
    for arch, routing, eager in WORKLOADS:
        checkpoint = tmp / arch
        if not checkpoint.exists():
            make_tiny_checkpoint(checkpoint, arch, seed=1)
        with pytest.MonkeyPatch.context() as patch, npu_calls.recording() as recorded:
            patch.setenv("MINI_PLATFORM_NPU_MOE_ROUTING", routing)
            llm = LLM(str(checkpoint), block_size=16, backend="npu", max_num_seqs=4, max_num_batched_tokens=8,
                      enforce_eager=eager)
            llm.generate(PROMPTS, params)
            llm.generate([PROMPTS[0] + [1, 2]], params)      # a prefix-cache hit
        calls += recorded
    return calls


def run_mla_kernels() -> list[Call]:
    """Record the torch_npu calls of the npu MLA kernels, DeepSeek's interleaved rope and grouped top-k routing,
    called directly on DeepSeek-like shapes (latent 512, rope 64): a cache write with padding, a decode with a
    request of length 0, a gather, a prefill with cached context, and the routing with and without renormalising."""
    import torch

    from mini_platform import ops

    g = torch.Generator().manual_seed(0)
    dtype, heads, latent, rope, block = torch.bfloat16, 4, 512, 64, 128
    kv_c_cache, k_pe_cache = torch.zeros(4, block, 1, latent, dtype=dtype), torch.zeros(4, block, 1, rope, dtype=dtype)
    tables, seq_lens = torch.tensor([[2, 0], [1, 3]], dtype=torch.int32), torch.tensor([130, 0], dtype=torch.int32)
    positions = torch.arange(3)
    with npu_calls.recording() as recorded:
        q_pe, k_pe = ops.rotary_embedding(positions, torch.randn(3, heads * rope, generator=g).to(dtype),
                                          torch.randn(3, rope, generator=g).to(dtype), rope,
                                          torch.randn(8, rope, generator=g), False, backend="npu")
        ops.concat_and_cache_mla(torch.randn(3, latent, generator=g).to(dtype), k_pe, kv_c_cache, k_pe_cache,
                                 torch.tensor([256, -1, 129], dtype=torch.int32), backend="npu")
        ops.mla_decode_attention(torch.randn(2, heads, latent, generator=g).to(dtype), torch.randn(2, heads, rope).to(dtype),
                                 kv_c_cache, k_pe_cache, tables, seq_lens, 0.1, backend="npu")
        ops.gather_mla_cache(kv_c_cache, k_pe_cache, tables, seq_lens, backend="npu")
        ops.mla_prefill_attention(torch.randn(3, heads, 192, generator=g).to(dtype),
                                  torch.randn(8, heads, 192, generator=g).to(dtype),
                                  torch.randn(8, heads, 128, generator=g).to(dtype),
                                  torch.tensor([0, 2, 3], dtype=torch.int32), torch.tensor([0, 2, 8], dtype=torch.int32),
                                  0.1, backend="npu")
        logits, bias = torch.randn(5, 32, generator=g).to(dtype), torch.randn(32, generator=g)
        for renormalize in (True, False):
            ops.moe_grouped_topk(logits, 4, 4, 2, renormalize, "sigmoid", bias, 2.5, backend="npu")
    return recorded


def run_mc2_exchange() -> list[Call]:
    """Record the MC2 path (``npu_moe_distribute_dispatch_v2`` / ``combine_v2``, the grouped matmuls between them and
    ``torch.npu.get_soc_version``) on one MoE layer, in this process on a one-rank gloo group (the ops are the same
    calls at any EP size), as an A3 chip (``group_tp``, ``x_active_mask``), as an A2 chip, and as an A3 chip whose
    torch_npu lacks the ``_v2`` ops (vllm-ascend v0.11.0 then calls the v1 ones)."""
    import sys

    import torch
    import torch.distributed as dist

    from mini_platform import ops
    from mini_platform.ascend import mc2
    from mini_platform.ascend.emulation import npu
    from mini_platform.distributed.communicator import DeviceCommunicator
    from mini_platform.distributed.parallel_state import GroupCoordinator
    from mini_platform.executor.multiproc import free_port

    g = torch.Generator().manual_seed(0)
    w13, w2, x = torch.randn(4, 12, 8, generator=g), torch.randn(4, 8, 6, generator=g), torch.randn(3, 8, generator=g)
    router = torch.randn(8, 4, generator=g)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        group = GroupCoordinator("ep", 1, 0, DeviceCommunicator(dist.group.WORLD, torch.device("cpu")))
        with npu_calls.recording() as recorded, ops.use_backend("npu"), pytest.MonkeyPatch.context() as patch:
            for soc, v2 in ((250, True), (220, True), (250, False)):   # without _v2 in torch_npu: the v1 ops
                npu.EMULATED_SOC_VERSION = soc
                if not v2:
                    patch.delattr(sys.modules["torch_npu"], "npu_moe_distribute_dispatch_v2")
                mc2.MC2Dispatcher(group, 4)(x, lambda h: ops.moe_topk_softmax(h @ router, 2, True), w13, w2)
    finally:
        npu.EMULATED_SOC_VERSION = 250
        dist.destroy_process_group()
    return recorded


@pytest.fixture(scope="module")
def calls(tmp_path_factory) -> list[Call]:
    return run_workloads(tmp_path_factory.mktemp("npu_workloads")) + run_mla_kernels() + run_mc2_exchange()


def op_calls(calls: list[Call]) -> list[Call]:
    return [c for c in calls if c.name.startswith("torch_npu.")]


def test_the_workloads_reach_every_family_of_ops(calls):
    names = {c.name for c in calls}
    for expected in ("torch_npu.npu_rms_norm", "torch_npu.npu_add_rms_norm", "torch_npu._npu_rotary_embedding",
                     "torch_npu.npu_swiglu", "torch_npu._npu_reshape_and_cache", "torch_npu._npu_paged_attention",
                     "torch_npu.npu_fused_infer_attention_score", "torch_npu.npu_moe_init_routing",
                     "torch_npu.npu_moe_init_routing_v2", "torch_npu.npu_grouped_matmul",
                     "torch_npu.npu_moe_finalize_routing", "torch_npu.npu_moe_token_unpermute",
                     "torch.npu.graph_task_update_begin", "torch.npu.NPUGraph.replay", "torch.npu.ExternalEvent.record",
                     "torch_npu.npu_interleave_rope", "torch_npu.atb.npu_paged_cache_load", "torch_npu.atb.npu_ring_mla",
                     "torch_npu.npu_moe_gating_top_k", "torch_npu.npu_moe_distribute_dispatch_v2",
                     "torch_npu.npu_moe_distribute_combine_v2", "torch_npu.npu_moe_distribute_dispatch",
                     "torch_npu.npu_moe_distribute_combine", "torch.npu.get_soc_version"):
        assert expected in names


def test_every_recorded_op_call_fits_the_wheel_schema(wheel, calls):
    report = npu_calls.Report()
    for call in op_calls(calls):
        overload, problems = npu_calls.check_op_call(wheel, call)
        if overload is not None:
            problems = npu_calls.check_returns(overload, call.result)
        report.add(call.name, call.site, problems)
    print("\n" + report.table())
    assert not {n: p for n, p in report.problems.items() if p}, report.table()


def test_every_recorded_torch_npu_api_call_fits_the_wheel_source(wheel, calls):
    report = npu_calls.Report()
    for call in calls:
        if call.name.startswith("torch.npu."):
            report.add(call.name, call.site, npu_calls.check_python_call(wheel, call))
    print("\n" + report.table())
    assert {"torch.npu.graph", "torch.npu.NPUGraph", "torch.npu.graph_task_group_end"} <= set(report.sites)
    assert not {n: p for n, p in report.problems.items() if p}, report.table()


def test_the_ast_scan_finds_no_call_the_recording_missed_or_that_does_not_fit(wheel, calls):
    recorded = {(c.name, c.site) for c in calls}
    static_only = [s for s in npu_calls.scan_sources() if (s.name, s.site) not in recorded]
    assert len(static_only) < len(npu_calls.scan_sources()) / 2       # the recording reached most sites
    bad = {s.site: p for s in static_only if (p := npu_calls.check_source_site(wheel, s))}
    assert not bad, bad


def test_the_emulation_returns_what_the_wheels_meta_functions_compute(wheel, calls):
    docs = wheel.op_docs
    for (op, _), words in DOCUMENTED_OVER_META.items():
        assert words in docs[op], f"{op}: the documentation no longer says {words!r}"
    checked, mismatches = set(), {}
    for call in op_calls(calls):
        overload, _ = npu_calls.check_op_call(wheel, call)
        skip = frozenset(i for (op, i) in DOCUMENTED_OVER_META if op == call.op)
        problems = npu_calls.check_meta(wheel, call, overload, skip)
        if problems is not None:
            checked.add(call.op)
        if problems:
            mismatches.setdefault(call.op, problems)
    print(f"\nmeta functions run: {sorted(checked)}")
    assert {"npu_rms_norm", "npu_moe_init_routing_v2", "npu_grouped_matmul", "npu_fused_infer_attention_score",
            "npu_moe_gating_top_k", "npu_interleave_rope"} <= checked
    assert not mismatches, mismatches


def test_the_documented_exception_is_real(wheel, calls):
    """The meta function and the emulation do differ where :data:`DOCUMENTED_OVER_META` says (else drop the entry)."""
    for (op, index) in DOCUMENTED_OVER_META:
        call = first(calls, f"torch_npu.{op}")
        problems = npu_calls.check_meta(wheel, call, npu_calls.check_op_call(wheel, call)[0])
        assert any(p.startswith(f"output {index}:") for p in problems), problems


def test_the_emulated_ops_take_the_wheels_arguments_and_defaults(wheel):
    """Every emulated op, used by the engine or not: the schema's argument names, order, keyword-only split and
    defaults (so a call that relies on a default gets the wheel's)."""
    from mini_platform.ascend.emulation import build_module

    fake = build_module()
    ops = {prefix + name: inspect.unwrap(fn) for namespace, prefix in ((fake, ""), (fake.atb, "atb."))
           for name, fn in vars(namespace).items() if not name.startswith("__") and callable(fn) and name != "npu"}
    assert len(ops) >= 15 and {"atb.npu_ring_mla", "atb.npu_paged_cache_load"} <= set(ops)
    problems = {name: npu_calls.compare_with_overloads(fn, wheel.op_schemas(name)) for name, fn in ops.items()}
    bad = {name: p for name, p in problems.items() if p}
    assert not bad, bad


def test_the_fused_mla_cache_op_returns_what_the_wheels_meta_function_computes(wheel):
    """``npu_kv_rmsnorm_rope_cache`` is emulated (tests/test_npu_mla.py checks its result) but not called by the
    engine, so no workload records it: its outputs' shapes and dtypes are checked here, on the call vllm-ascend
    v0.11.0's ``exec_kv_prefill`` makes."""
    import torch

    from mini_platform.ascend.emulation import mla

    dtype = torch.bfloat16
    args = (torch.randn(3, 1, 1, 576).to(dtype), torch.ones(512, dtype=dtype), torch.ones(3, 1, 1, 64, dtype=dtype),
            torch.zeros(3, 1, 1, 64, dtype=dtype), torch.tensor([0, 5, 9]), torch.zeros(2, 16, 1, 64, dtype=dtype),
            torch.zeros(2, 16, 1, 512, dtype=dtype))
    kwargs = dict(epsilon=1e-6, cache_mode="PA", is_output_kv=True)
    result = mla.npu_kv_rmsnorm_rope_cache(*args, **kwargs)
    call = Call("torch_npu.npu_kv_rmsnorm_rope_cache", "test", npu_calls.describe(args),
                {k: npu_calls.describe(v) for k, v in kwargs.items()}, npu_calls.describe(result))
    overload, problems = npu_calls.check_op_call(wheel, call)
    assert overload is not None, problems
    assert npu_calls.check_meta(wheel, call, overload) == []


def emulated_api(module) -> list[tuple[str, object]]:
    """(``torch.npu`` name, function) for each function of the emulated ``torch.npu``, and for each of its classes
    the class's own ``__init__`` and public methods (``self`` dropped)."""
    members = []
    for name, value in vars(module).items():
        if name.startswith("__"):
            continue
        if not isinstance(value, type):
            members.append((f"torch.npu.{name}", inspect.signature(value)))
            continue
        own = {"": vars(value)["__init__"]} if "__init__" in vars(value) else {}
        own.update({f".{m}": fn for m, fn in vars(value).items() if not m.startswith("_") and inspect.isfunction(fn)})
        for suffix, fn in own.items():
            signature = inspect.signature(fn)
            members.append((f"torch.npu.{name}{suffix}",
                            signature.replace(parameters=list(signature.parameters.values())[1:])))
    return members


def test_the_emulated_torch_npu_api_has_the_wheels_signatures(wheel):
    from mini_platform.ascend.emulation import npu

    members = emulated_api(npu.build_npu_module())
    assert len(members) >= 15
    problems = {}
    for dotted, ours in members:
        theirs = wheel.python_signatures(dotted)    # a class: [__new__, __init__], or the one it defines
        problems[dotted] = npu_calls.compare_signatures(ours, theirs[-1]) if theirs else ["not in the wheel"]
    bad = {name: p for name, p in problems.items() if p}
    assert not bad, bad


# -- the checker itself: a wrong call must be reported ---------------------------------------------------------------

def first(calls: list[Call], name: str) -> Call:
    return next(c for c in calls if c.name == name)


def test_a_misspelt_keyword_is_reported(wheel, calls):
    finalize = first(calls, "torch_npu.npu_moe_finalize_routing")
    assert npu_calls.check_op_call(wheel, finalize)[1] == []
    kwargs = {("expert_for_source_row" if k == "export_for_source_row" else k): v for k, v in finalize.kwargs.items()}
    _, problems = npu_calls.check_op_call(wheel, dataclasses.replace(finalize, kwargs=kwargs))
    assert any("no argument named 'expert_for_source_row'" in p and "'export_for_source_row'" in p for p in problems)
    assert any("missing 'export_for_source_row'" in p for p in problems)

    paged = first(calls, "torch_npu._npu_paged_attention")
    kwargs = {("scale" if k == "scale_value" else k): v for k, v in paged.kwargs.items()}
    assert npu_calls.check_op_call(wheel, dataclasses.replace(paged, kwargs=kwargs))[1]


def test_a_wrong_type_a_missing_argument_and_a_keyword_only_passed_by_position_are_reported(wheel, calls):
    fia = first(calls, "torch_npu.npu_fused_infer_attention_score")
    _, problems = npu_calls.check_op_call(wheel, dataclasses.replace(fia, kwargs={**fia.kwargs, "input_layout": 3}))
    assert any("input_layout=3 does not fit str" in p for p in problems)
    rms = first(calls, "torch_npu.npu_rms_norm")
    _, problems = npu_calls.check_op_call(wheel, dataclasses.replace(rms, args=rms.args[:1]))
    assert any("missing 'gamma'" in p for p in problems)
    routing = first(calls, "torch_npu.npu_moe_init_routing_v2")
    as_positional = dataclasses.replace(routing, args=routing.args + (routing.kwargs["active_num"],),
                                        kwargs={k: v for k, v in routing.kwargs.items() if k != "active_num"})
    assert any("keyword-only" in p for p in npu_calls.check_op_call(wheel, as_positional)[1])
    grouped = first(calls, "torch_npu.npu_grouped_matmul")
    assert npu_calls.check_op_call(wheel, grouped)[0].startswith("npu_grouped_matmul(")   # the Tensor group_list overload
    listed = dataclasses.replace(grouped, kwargs={**grouped.kwargs, "group_list": [1, 2]})
    assert npu_calls.check_op_call(wheel, listed)[0].startswith("npu_grouped_matmul.List(")
    as_text = dataclasses.replace(grouped, kwargs={**grouped.kwargs, "split_item": "2"})
    assert any("split_item='2' does not fit" in p for p in npu_calls.check_op_call(wheel, as_text)[1])


def test_a_wrong_torch_npu_api_call_is_reported(wheel, calls):
    graph = first(calls, "torch.npu.graph")
    assert npu_calls.check_python_call(wheel, graph) == []
    kwargs = {("poll" if k == "pool" else k): v for k, v in graph.kwargs.items()}
    assert any("poll" in p for p in npu_calls.check_python_call(wheel, dataclasses.replace(graph, kwargs=kwargs)))
    update = first(calls, "torch.npu.graph_task_update_begin")
    assert npu_calls.check_python_call(wheel, dataclasses.replace(update, args=update.args[:1]))


def test_a_misspelt_keyword_in_the_source_is_reported(wheel):
    site = npu_calls.SourceSite("torch_npu.npu_moe_init_routing_v2", "x.py:1", 2, ("active_num", "expert_nums"))
    assert any("expert_nums" in p for p in npu_calls.check_source_site(wheel, site))
    assert npu_calls.check_source_site(wheel, npu_calls.SourceSite("torch.npu.set_device", "x.py:2", 1, ())) == []
    assert npu_calls.check_source_site(wheel, npu_calls.SourceSite("torch_npu.npu_swiglu_typo", "x.py:3", 1, ()))


def test_the_emulations_quotes_of_the_op_documentation_are_in_this_release(wheel):
    """Every quoted Chinese passage in the emulation's docstrings is text of the wheel's ``_op_plugin_docs.py``."""
    from mini_platform.ascend import emulation

    squeeze = lambda text: re.sub(r"\s+", "", text)   # noqa: E731  (docstrings wrap lines)
    docs = squeeze("".join(wheel.op_docs.values()))
    quotes = []
    for path in sorted(Path(emulation.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node):
                quotes += [(path.name, q) for q in re.findall(r'"([^"]+)"', ast.get_docstring(node))
                           if re.search(r"[\u4e00-\u9fff]", q)]
    assert len(quotes) >= 8
    assert [(name, q) for name, q in quotes if squeeze(q) not in docs] == []


def test_the_atb_schemas_are_read_out_of_the_library_and_match_their_declarations(wheel):
    """The ATB ops the engine calls were reassembled from libop_plugin_atb.so, agree with AtbOpsInterface.h
    (checked while reading), and carry what the header cannot say: ``workspace`` is keyword-only, default None."""
    declared = npu_wheel._cpp_declarations(wheel.text(npu_wheel.ATB_HEADER))
    for op in ("_npu_reshape_and_cache", "_npu_paged_attention", "_npu_paged_attention_get_workspace",
               "_npu_rotary_embedding"):
        assert op in wheel.atb_top_level and op in declared and len(wheel.op_schemas(op)) == 1
    workspace = wheel.op_schemas("_npu_paged_attention")[0].arguments[-1]
    assert (workspace.name, workspace.kwarg_only, workspace.default_value) == ("workspace", True, None)
    with pytest.raises(ValueError, match="does not match its C\\+\\+ declaration"):
        npu_wheel._check_against_declaration(wheel.op_schemas("_npu_reshape_and_cache")[0],
                                             declared["_npu_reshape_and_cache"][::-1])
