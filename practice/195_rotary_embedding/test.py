"""Tests of exercise 195: the cos/sin table and both rotary styles against a complex-number rotation."""
import math

import pytest
import torch

from submission import build_cos_sin_cache, rotary_embedding


def test_example():
    cache = build_cos_sin_cache(max_pos=8, rot_dim=4, base=10000.0)
    assert cache.shape == (8, 4) and cache.dtype == torch.float32
    torch.testing.assert_close(cache[1], torch.tensor([math.cos(1), math.cos(0.01), math.sin(1), math.sin(0.01)]))
    q = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    neox = rotary_embedding(torch.tensor([1]), q, q, 4, cache, True)[0]
    torch.testing.assert_close(neox, torch.tensor([[math.cos(1), 0.0, math.sin(1), 0.0]]))
    gptj = rotary_embedding(torch.tensor([1]), q, q, 4, cache, False)[0]
    torch.testing.assert_close(gptj, torch.tensor([[math.cos(1), math.sin(1), 0.0, 0.0]]))


def reference(x, positions, head_size, rot_dim, base, neox):
    """Each pair as a complex number times exp(i * p * theta)."""
    T = x.shape[0]
    heads = x.double().reshape(T, -1, head_size)
    theta = base ** (-torch.arange(0, rot_dim, 2, dtype=torch.float64) / rot_dim)
    turn = torch.polar(torch.ones(T, rot_dim // 2, dtype=torch.float64), positions.double()[:, None] * theta)[:, None]
    rot = heads[..., :rot_dim]
    if neox:
        z = torch.complex(rot[..., : rot_dim // 2], rot[..., rot_dim // 2:]) * turn
        out = torch.cat((z.real, z.imag), -1)
    else:
        z = torch.complex(rot[..., 0::2], rot[..., 1::2]) * turn
        out = torch.stack((z.real, z.imag), -1).flatten(-2)
    return torch.cat((out, heads[..., rot_dim:]), -1).reshape(x.shape)


CASES = [  # (num_heads, num_kv_heads, head_size, rot_dim, base)
    (4, 2, 16, 16, 10000.0), (3, 1, 24, 8, 10000.0), (2, 2, 64, 64, 1e6), (5, 1, 20, 12, 500.0),
]


@pytest.mark.parametrize("case,neox,dtype", [
    (0, True, torch.float32), (0, False, torch.float16), (1, True, torch.bfloat16), (1, False, torch.float32),
    (2, True, torch.float16), (2, False, torch.float32), (3, True, torch.float32), (3, False, torch.bfloat16),
])
def test_random_against_complex_rotation(case, neox, dtype):
    nh, nkv, hd, rot_dim, base = CASES[case]
    g = torch.Generator().manual_seed(100 + case)
    T = 6
    positions = torch.randint(0, 512, (T,), generator=g)
    q, k = torch.randn(T, nh * hd, generator=g).to(dtype), torch.randn(T, nkv * hd, generator=g).to(dtype)
    q0, k0 = q.clone(), k.clone()
    repro = (f"g = torch.Generator().manual_seed({100 + case}); positions = torch.randint(0, 512, ({T},), generator=g); "  # noqa: F841
             f"q = torch.randn({T}, {nh * hd}, generator=g).to({dtype}); k = torch.randn({T}, {nkv * hd}, generator=g).to({dtype}); "
             f"q_out, k_out = rotary_embedding(positions, q, k, {hd}, build_cos_sin_cache(512, {rot_dim}, {base}), {neox})")
    cache = build_cos_sin_cache(512, rot_dim, base)
    q_out, k_out = rotary_embedding(positions, q, k, hd, cache, neox)
    assert torch.equal(q, q0) and torch.equal(k, k0), "inputs must not be modified"
    assert q_out.dtype == k_out.dtype == dtype and q_out.shape == q.shape and k_out.shape == k.shape
    tol = {torch.float32: 1e-4, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]   # fp32: as exercise 203; vLLM builds the table in fp32
    torch.testing.assert_close(q_out.double(), reference(q, positions, hd, rot_dim, base, neox), rtol=tol, atol=tol)
    torch.testing.assert_close(k_out.double(), reference(k, positions, hd, rot_dim, base, neox), rtol=tol, atol=tol)
    if rot_dim < hd:  # the pass-through part is bit-exact
        tail = q.reshape(T, nh, hd)[..., rot_dim:]
        assert torch.equal(q_out.reshape(T, nh, hd)[..., rot_dim:], tail)


def test_large_fp16_values_are_rotated_in_fp32():
    """Products of values near 1000 are rounded to 0.5 in fp16; computed in fp32 and rounded once,
    a rotated value is within fp16's relative precision."""
    g = torch.Generator().manual_seed(195)
    q = ((torch.rand(8, 2 * 16, generator=g) * 2 - 1) * 1000).half()
    positions = torch.randint(0, 64, (8,), generator=g)
    cache = build_cos_sin_cache(64, 16, 10000.0)
    out, _ = rotary_embedding(positions, q, q, 16, cache, True)
    torch.testing.assert_close(out.double(), reference(q, positions, 16, 16, 10000.0, True), rtol=2e-3, atol=0.05)


def test_position_zero_is_identity_and_bad_shapes():
    cache = build_cos_sin_cache(4, 8, 10000.0)
    q = torch.randn(2, 16, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(rotary_embedding(torch.tensor([0, 0]), q, q, 8, cache, True)[0], q)
    with pytest.raises(ValueError):
        rotary_embedding(torch.tensor([0]), torch.ones(1, 8), torch.ones(1, 8), 4, cache, True)  # rot_dim > head_size
    with pytest.raises(ValueError):
        rotary_embedding(torch.tensor([0]), torch.ones(1, 12), torch.ones(1, 8), 8, cache, True)
    with pytest.raises(ValueError):
        rotary_embedding(torch.tensor([0]), torch.ones(1, 16), torch.ones(1, 12), 8, cache, True)  # the key's width


def test_each_output_has_its_inputs_dtype():
    g = torch.Generator().manual_seed(1950)
    positions = torch.tensor([3, 0, 7])
    q, k = torch.randn(3, 2 * 8, generator=g, dtype=torch.float64), torch.randn(3, 8, generator=g).to(torch.bfloat16)
    cache = build_cos_sin_cache(8, 8, 10000.0)
    q_out, k_out = rotary_embedding(positions, q, k, 8, cache, False)
    assert (q_out.dtype, k_out.dtype) == (torch.float64, torch.bfloat16), f"got {q_out.dtype}, {k_out.dtype}"
    torch.testing.assert_close(q_out, reference(q, positions, 8, 8, 10000.0, False), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError):
        build_cos_sin_cache(4, 7, 10000.0)
