"""Stage 264: Lumen is a PyTorch device (PrivateUse1 renamed, a device module, the C++ runtime started on first
use, a fallback for every other op), the engine's tensors live on it, and its collectives run gloo on its memory."""
import json
import os
import subprocess
import sys

import pytest
import torch

import submission
from capstone import harness
from mini_platform import LLM, SamplingParams, platforms
from mini_platform.utils import resolve_obj_by_qualname

PROMPTS = [[1, 17, 42, 99, 7], [1, 5], list(range(3, 43))]
GREEDY = SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)
# Runs in a fresh interpreter: what importing the platform module alone did to torch.
PROBE = """
import json, sys, torch
import lumen_npu.platform
try:
    device = str(torch.device("lumen:1"))
except RuntimeError as exc:
    device = f"RuntimeError: {exc}"
module = getattr(torch, "lumen", None)
started = bool(module is not None and module.is_initialized())
try:  # the first tensors of the process, on the second device, and ops that only the fallback serves
    x = torch.ones(2, 2, device="lumen:1")
    ops = f"{(x @ x).softmax(-1).device} {(x @ x).sum().item()}"
except Exception as exc:
    ops = f"{type(exc).__name__}: {str(exc)[:300]}"
print(json.dumps({"device": device, "module": getattr(module, "__name__", None), "started": started, "ops": ops}))
"""


@pytest.fixture(scope="module")
def site():
    return harness.install(submission.PROJECT)


@pytest.fixture(scope="module")
def lumen(site):
    harness.activate(site)
    with harness.lumen_selected("lumen0", "lumen1"):
        yield platforms.current_platform


def test_example_a_tensor_on_lumen(lumen):
    x = torch.empty(3, device="lumen")
    assert x.device == torch.device("lumen:0")
    assert torch.equal(x.fill_(2.0).cpu(), torch.full((3,), 2.0))


def test_the_platform_names_the_lumen_device(lumen):
    assert lumen.device_type == "lumen"
    assert lumen.device_module() is torch.lumen, "torch.lumen must be the runtime's device module (lumen_npu.device)"


def test_importing_the_platform_makes_lumen_a_device_without_starting_it(site):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LUMEN_", "MINI_PLATFORM"))}
    env["PYTHONPATH"] = os.pathsep.join([str(site), *(os.path.abspath(p) for p in sys.path if p)])
    env["LUMEN_DEVICE_ROOT"] = str(harness.fake_device_root("lumen0", "lumen1"))
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"importing lumen_npu.platform failed:\n{harness.source_paths(done.stderr[-1500:])}"
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe["device"] == "lumen:1", f"torch.device('lumen:1') after importing lumen_npu.platform: {probe['device']}"
    assert probe["module"] == "lumen_npu.device", f"torch.lumen is {probe['module']}, not lumen_npu.device"
    assert not probe["started"], "importing the platform started the runtime (is_initialized() is True): start it on first use"
    assert probe["ops"] == "lumen:1 8.0", \
        ("in a fresh process, x = torch.ones(2, 2, device='lumen:1'); (x @ x).softmax(-1).device, (x @ x).sum().item() "
         f"gave: {probe['ops']}")


def test_the_device_module(lumen, monkeypatch):
    runtime = torch.lumen
    assert runtime.is_available() and runtime.device_count() == 2
    try:
        for device, index in (("lumen:1", 1), (torch.device("lumen", 0), 0), (1, 1), (0, 0)):
            runtime.set_device(device)
            assert runtime.current_device() == index, f"set_device({device!r}) then current_device()"
            assert torch.empty(1, device="lumen").device.index == index, f"set_device({device!r}): new tensors go there"
        with pytest.raises(ValueError):
            runtime.set_device(2)
    finally:  # the current device belongs to the process: put it back for the tests that follow
        try:
            runtime.set_device(0)
        except (ValueError, TypeError):
            pass
    monkeypatch.setenv("LUMEN_VISIBLE_DEVICES", "1")
    assert runtime.device_count() == 1


def test_copies_both_ways_and_on_the_second_device(lumen):
    g = torch.Generator().manual_seed(3)
    host = torch.randn(4, 6, generator=g)
    repro = "g = torch.Generator().manual_seed(3); host = torch.randn(4, 6, generator=g)"  # noqa: F841
    assert torch.equal(host.to("lumen").cpu(), host)
    assert torch.equal(host.t().to("lumen:1").cpu(), host.t())
    assert host.to("lumen:1").device == torch.device("lumen:1")


def test_every_other_op_runs_through_the_fallback(lumen):
    g = torch.Generator().manual_seed(4)
    a, b = torch.randn(3, 4, generator=g), torch.randn(4, 5, generator=g)
    repro = "g = torch.Generator().manual_seed(4); a, b = torch.randn(3, 4, generator=g), torch.randn(4, 5, generator=g)"  # noqa: F841
    la, lb = a.to("lumen"), b.to("lumen")
    for name, got, want in (("a @ b", la @ lb, a @ b), ("softmax", la.softmax(-1), a.softmax(-1)),
                            ("cat", torch.cat([la, la]), torch.cat([a, a])), ("arange", torch.arange(4, device="lumen"), torch.arange(4))):
        assert got.device.type == "lumen", f"{name} on Lumen tensors gave a {got.device} tensor"
        torch.testing.assert_close(got.cpu(), want, msg=name)


def test_the_engine_serves_from_lumen_memory_like_transformers(lumen):
    path, expected = harness.tiny_llama(tuple(map(tuple, PROMPTS)), GREEDY.max_tokens)
    for options in (dict(enforce_eager=True), dict(enforce_eager=False, cudagraph_capture_sizes=[1, 2, 4])):
        llm = LLM(path, block_size=32, num_kv_blocks=16, **options)
        engine = llm.engine
        assert next(engine.model.parameters()).device.type == "lumen", f"{options}: the weights are not on Lumen"
        assert engine.runner.attention.kv_caches[0][0].device.type == "lumen", f"{options}: the KV cache is not on Lumen"
        tokens = [out.token_ids for out in llm.generate(PROMPTS, GREEDY)]
        assert tokens == expected, f"{options}: greedy tokens differ from transformers"
        if not options["enforce_eager"]:
            assert engine.stats()["num_graph_steps"] > 0, "no decode step replayed a graph"


def test_the_graph_wrapper_records_lumen_tensors(lumen):
    wrapper_cls = resolve_obj_by_qualname(lumen.get_static_graph_wrapper_cls())
    x = torch.zeros(4, device="lumen")
    wrapper = wrapper_cls(lambda size: x[:size].add_(1).mul(2), torch.device("lumen:0"))
    wrapper.capture(2)
    out = wrapper.replay(2)
    assert out.device.type == "lumen" and x.cpu().tolist() == [2.0, 2.0, 0.0, 0.0] and out.cpu().tolist() == [4.0, 4.0]


@pytest.fixture
def group(tmp_path):
    import torch.distributed as dist
    if not dist.is_initialized():
        dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    yield dist.group.WORLD
    dist.destroy_process_group()


def test_the_communicator_runs_gloo_on_lumen_memory(lumen, group):
    communicator = resolve_obj_by_qualname(lumen.get_device_communicator_cls())(group, torch.device("lumen:0"))
    x = torch.arange(6.0).reshape(2, 3).to("lumen")
    for name, run in (("all_reduce", lambda: communicator.all_reduce(x)), ("broadcast", lambda: communicator.broadcast(x)),
                      ("all_gather", lambda: communicator.all_gather(x, dim=0)),
                      ("reduce_scatter", lambda: communicator.reduce_scatter(x, dim=0)),
                      ("all_to_all", lambda: communicator.all_to_all(x))):
        out = run()
        assert out.device == x.device, f"{name} of a Lumen tensor returned a {out.device} tensor"
        assert torch.equal(out.cpu(), torch.arange(6.0).reshape(2, 3)), f"{name} on one rank changes nothing"
    assert communicator.all_reduce(x) is x, "all_reduce works in place and returns its argument"


def test_a_second_import_in_one_process_replaces_torch_lumen(lumen):
    """The judge and the notebook import a project afresh in one process: the device module must import again."""
    import importlib
    old = sys.modules.pop("lumen_npu.device")
    try:
        new = importlib.import_module("lumen_npu.device")
    except Exception as exc:  # noqa: BLE001 - any failure of the second import is the finding
        sys.modules["lumen_npu.device"] = old
        raise AssertionError(f"importing lumen_npu.device a second time raised {type(exc).__name__}: {exc}") from None
    assert torch.lumen is new, "after a second import torch.lumen must be the new module"
    assert torch.empty(2, device="lumen").device.type == "lumen"
