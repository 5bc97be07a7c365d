"""UE8M0 scales in mini_platform.ops.ue8m0, checked against plain arithmetic (powers of two, shifts)."""
from __future__ import annotations

import math

import pytest
import torch

from mini_platform.ops.ue8m0 import ceil_to_ue8m0, decode_ue8m0, encode_ue8m0, pack_ue8m0, unpack_ue8m0


def test_ceil_rounds_up_to_the_next_power_of_two():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(1000, generator=g) * torch.logspace(-20, 20, 1000)
    got = ceil_to_ue8m0(x)
    want = torch.tensor([2.0 ** math.ceil(math.log2(v)) for v in x.tolist()])
    assert torch.equal(got, want)
    assert torch.equal(ceil_to_ue8m0(torch.tensor([1.0, 0.5, 2.0 ** -126])), torch.tensor([1.0, 0.5, 2.0 ** -126]))


def test_encode_is_the_biased_exponent_and_decodes_back():
    powers = list(range(-126, 128))
    scales = torch.tensor([2.0 ** p for p in powers])
    codes = encode_ue8m0(scales)
    assert codes.dtype == torch.uint8 and codes.tolist() == [p + 127 for p in powers]
    assert torch.equal(decode_ue8m0(codes), scales)


@pytest.mark.parametrize("bad", [torch.tensor([3.0]), torch.tensor([-2.0]), torch.tensor([0.0])])
def test_encode_refuses_what_ue8m0_cannot_hold(bad):
    with pytest.raises(ValueError, match="powers of two"):
        encode_ue8m0(bad)


@pytest.mark.parametrize("container, per_word", [(torch.int32, 4), (torch.int16, 2)])
def test_pack_is_little_endian_signed_and_padded(container, per_word):
    codes = torch.tensor([[127, 128, 129, 130, 255], [1, 2, 3, 4, 5]], dtype=torch.uint8)
    words = pack_ue8m0(codes, container)
    assert words.dtype == container and words.shape == (2, -(-5 // per_word))
    bits = 8 * per_word
    for row, packed in zip(codes.tolist(), words.tolist()):
        row = row + [0] * (-len(row) % per_word)
        for w, word in enumerate(packed):
            value = sum(b << (8 * i) for i, b in enumerate(row[w * per_word:(w + 1) * per_word]))
            assert word == (value - (1 << bits) if value >= 1 << (bits - 1) else value)  # two's complement
    assert torch.equal(unpack_ue8m0(words, 5), codes)
    assert pack_ue8m0(codes[:1, :4], torch.int32).item() < 0   # top byte 130 >= 128: a negative int32
