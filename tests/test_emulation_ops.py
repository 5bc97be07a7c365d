"""The torch_npu emulation on its own: hand-computed cases for each op, and the context manager.

These check the emulation against the documented semantics; they say nothing about the hardware
(verified against an emulation of torch_npu semantics; not run on Ascend hardware here).
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import math
import sys
import types

import pytest
import torch

from mini_platform.ascend import emulation
from mini_platform.ascend.emulation import EMULATION_NOTE, RealTorchNpuPresentError, emulated_torch_npu

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch_npu") is not None,
                                reason="a real torch_npu is installed: the emulation refuses to shadow it")

SILU1 = 1 / (1 + math.exp(-1))  # silu(1)


def t(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype)


# -- norm ----------------------------------------------------------------------------------------------

def test_rms_norm_hand_computed(emulated_npu):
    x = t([[1, 1, 1, 1], [2, -2, 2, -2]])
    y, rstd = emulated_npu.npu_rms_norm(x, t([1, 2, 3, 4]), 0.0)
    torch.testing.assert_close(y, t([[1, 2, 3, 4], [1, -2, 3, -4]]))
    torch.testing.assert_close(rstd, t([[1.0], [0.5]]))


def test_rms_norm_over_two_trailing_dims_and_rstd_shape(emulated_npu):
    x = t([[[1, 1], [1, 1]], [[3, 0], [0, 4]]], torch.float16)
    y, rstd = emulated_npu.npu_rms_norm(x, torch.ones(2, 2, dtype=torch.float16), 0.0)
    assert y.dtype == torch.float16 and rstd.dtype == torch.float32 and rstd.shape == (2, 1, 1)
    torch.testing.assert_close(rstd.flatten(), t([1.0, 0.4]))
    torch.testing.assert_close(y[1], t([[1.2, 0], [0, 1.6]], torch.float16))


def test_rms_norm_default_epsilon_is_1e_6(emulated_npu):
    x = torch.zeros(1, 4)
    _, rstd = emulated_npu.npu_rms_norm(x, torch.ones(4))
    torch.testing.assert_close(rstd, t([[1e6 ** 0.5]]))


def test_rms_norm_rejects_bad_input(emulated_npu):
    with pytest.raises(ValueError, match="trailing dims"):
        emulated_npu.npu_rms_norm(torch.ones(2, 4), torch.ones(3))
    with pytest.raises(TypeError, match="float16, bfloat16, float32"):
        emulated_npu.npu_rms_norm(torch.ones(2, 4, dtype=torch.float64), torch.ones(4, dtype=torch.float64))


def test_add_rms_norm_hand_computed(emulated_npu):
    y, rstd, x = emulated_npu.npu_add_rms_norm(t([[1, -1, 3, 0]]), t([[1, -1, -1, -2]]), torch.ones(4), 0.0)
    torch.testing.assert_close(x, t([[2, -2, 2, -2]]))
    torch.testing.assert_close(rstd, t([[0.5]]))
    torch.testing.assert_close(y, t([[1, -1, 1, -1]]))


def test_add_rms_norm_sums_in_the_input_dtype(emulated_npu):
    # 2048 + 1 is not representable in fp16 (spacing 2 there): the sum rounds to 2048, and the
    # norm is taken of that rounded sum, as in op-plugin's numpy reference.
    x1, x2 = t([[2048, 2048]], torch.float16), t([[1, 1]], torch.float16)
    y, rstd, x = emulated_npu.npu_add_rms_norm(x1, x2, torch.ones(2, dtype=torch.float16), 0.0)
    assert x.dtype == torch.float16 and x.tolist() == [[2048.0, 2048.0]]
    torch.testing.assert_close(rstd, t([[1 / 2048]]))
    with pytest.raises(ValueError, match="same shape and dtype"):
        emulated_npu.npu_add_rms_norm(torch.ones(2, 4), torch.ones(1, 4), torch.ones(4))


# -- activation ----------------------------------------------------------------------------------------

def test_swiglu_hand_computed(emulated_npu):
    out = emulated_npu.npu_swiglu(t([[0, 1, 2, 3]]))
    torch.testing.assert_close(out, t([[0.0, 3 * SILU1]]))
    out = emulated_npu.npu_swiglu(t([[1], [5]]), dim=0)  # gate is the first half along dim 0
    torch.testing.assert_close(out, t([[5 * SILU1]]))
    assert emulated_npu.npu_swiglu(t([[1, 2]], torch.bfloat16)).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="even size"):
        emulated_npu.npu_swiglu(torch.ones(2, 3))


# -- rotary --------------------------------------------------------------------------------------------

def test_rotary_mul_modes(emulated_npu):
    x = t([[[[1, 2, 3, 4]]]])
    zeros, ones = torch.zeros(1, 1, 1, 4), torch.ones(1, 1, 1, 4)
    torch.testing.assert_close(emulated_npu.npu_rotary_mul(x, zeros, ones), t([[[[-3, -4, 1, 2]]]]))
    torch.testing.assert_close(emulated_npu.npu_rotary_mul(x, zeros, ones, "interleave"), t([[[[-2, 1, -4, 3]]]]))
    torch.testing.assert_close(emulated_npu.npu_rotary_mul(x, ones, zeros), x)
    c, s = math.cos(0.5), math.sin(0.5)  # x * cos + rotate(x) * sin with a broadcast angle
    out = emulated_npu.npu_rotary_mul(x[0], torch.full((1, 1, 4), c), torch.full((1, 1, 4), s))
    torch.testing.assert_close(out, t([[[c - 3 * s, 2 * c - 4 * s, 3 * c + s, 4 * c + 2 * s]]]))


def test_rotary_mul_rejects_bad_input(emulated_npu):
    with pytest.raises(ValueError, match="3-D or 4-D"):
        emulated_npu.npu_rotary_mul(torch.ones(2, 4), torch.ones(2, 4), torch.ones(2, 4))
    with pytest.raises(ValueError, match="rotary_mode"):
        emulated_npu.npu_rotary_mul(torch.ones(1, 1, 4), torch.ones(1, 1, 4), torch.ones(1, 1, 4), "quarter")


# Rows are positions; per row [cos t0, cos t1, sin t0, sin t1]. Position 1: t0 = 90 degrees, t1 = 0.
CACHE = t([[1, 1, 0, 0], [0, 1, 1, 0]])


@pytest.mark.parametrize("is_neox,expected", [
    (True, [-3, 2, 1, 4]),    # pairs (x0, x2) by 90 degrees, (x1, x3) by 0
    (False, [-2, 1, 3, 4]),   # pairs (x0, x1) by 90 degrees, (x2, x3) by 0
])
def test_rotary_embedding_in_place_hand_computed(emulated_npu, is_neox, expected):
    q, k = t([[1, 2, 3, 4]]), t([[1, 2, 3, 4, 1, 2, 3, 4]])
    assert emulated_npu._npu_rotary_embedding(t([1], torch.long), q, k, 4, CACHE, is_neox) is None
    torch.testing.assert_close(q, t([expected]))
    torch.testing.assert_close(k, t([expected * 2]))
    q = t([[1, 2, 3, 4]])
    emulated_npu._npu_rotary_embedding(t([0], torch.long), q, k.clone(), 4, CACHE, is_neox)
    torch.testing.assert_close(q, t([[1, 2, 3, 4]]))  # position 0 is the identity


def test_rotary_embedding_keeps_its_first_table(emulated_npu):
    q, k = torch.ones(1, 4), torch.ones(1, 4)
    emulated_npu._npu_rotary_embedding(t([0], torch.long), q, k, 4, CACHE, True)
    emulated_npu._npu_rotary_embedding(t([0], torch.long), q, k, 4, CACHE.clone(), True)  # same values: fine
    with pytest.raises(RuntimeError, match="C\\+\\+ static"):
        emulated_npu._npu_rotary_embedding(t([0], torch.long), q, k, 4, CACHE * 2, True)
    with emulated_torch_npu() as fresh:  # a new "process" starts with no table
        fresh._npu_rotary_embedding(t([0], torch.long), q, k, 4, CACHE * 2, True)


def test_rotary_embedding_rejects_partial_heads(emulated_npu):
    with pytest.raises(ValueError, match="whole heads"):
        emulated_npu._npu_rotary_embedding(t([0], torch.long), torch.ones(1, 8), torch.ones(1, 8), 8, CACHE, True)


def test_rotary_embedding_needs_one_row_per_position(emulated_npu):
    # [2, 8] holds as many numbers as [4, 4]: rows must still match the 4 positions, not be reshaped to fit
    with pytest.raises(ValueError, match="ntokens=4"):
        emulated_npu._npu_rotary_embedding(t([0, 1, 0, 1], torch.long), torch.ones(2, 8), torch.ones(4, 4), 4,
                                           CACHE, True)
    q = torch.ones(0, 8)  # no tokens: nothing to rotate
    emulated_npu._npu_rotary_embedding(t([], torch.long), q, torch.ones(0, 4), 4, CACHE, True)
    assert q.shape == (0, 8)


# -- the context manager -------------------------------------------------------------------------------

def test_context_installs_and_restores():
    assert "torch_npu" not in sys.modules
    with emulated_torch_npu() as fake:
        import torch_npu

        assert torch_npu is fake and fake.EMULATION_NOTE == EMULATION_NOTE
        assert EMULATION_NOTE == "verified against an emulation of torch_npu semantics; not run on Ascend hardware here"
        for name in ("norm", "rotary", "activation"):
            for op in sys.modules[f"mini_platform.ascend.emulation.{name}"].__all__:
                assert callable(getattr(fake, op))
        with emulated_torch_npu() as inner:  # nesting is allowed and restores the outer module
            assert sys.modules["torch_npu"] is inner is not fake
        assert sys.modules["torch_npu"] is fake
    assert "torch_npu" not in sys.modules


def test_refuses_to_shadow_a_real_torch_npu(monkeypatch):
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args):
        if name == "torch_npu":
            return importlib.machinery.ModuleSpec("torch_npu", None, origin="/site-packages/torch_npu/__init__.py")
        return real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(RealTorchNpuPresentError, match="refusing to shadow"):
        with emulated_torch_npu():
            pass
    assert "torch_npu" not in sys.modules


def test_refuses_to_replace_an_imported_torch_npu(monkeypatch):
    real = types.ModuleType("torch_npu")
    monkeypatch.setitem(sys.modules, "torch_npu", real)
    with pytest.raises(RealTorchNpuPresentError):
        with emulated_torch_npu():
            pass
    assert sys.modules["torch_npu"] is real


def test_build_module_rejects_an_op_defined_twice(monkeypatch):
    from mini_platform.ascend.emulation import activation

    monkeypatch.setattr(activation, "__all__", ["npu_swiglu", "npu_rms_norm"])
    monkeypatch.setattr(activation, "npu_rms_norm", lambda *a: None, raising=False)
    with pytest.raises(RuntimeError, match="defined twice"):
        emulation.build_module()
