"""The emulated torch_npu attention ops on cases computed by hand (verified against an emulation of
torch_npu semantics; not run on Ascend hardware here), plus their input validation."""
from __future__ import annotations

import math

import pytest
import torch

MASK = torch.triu(torch.ones(2048, 2048), diagonal=1).to(torch.int8)


def test_reshape_and_cache_by_hand(emulated_npu):
    key_cache, value_cache = torch.zeros(2, 16, 1, 2), torch.zeros(2, 16, 1, 2)
    key = torch.tensor([[[1.0, 2.0]], [[3.0, 4.0]], [[5.0, 6.0]]])
    emulated_npu._npu_reshape_and_cache(key=key, value=-key, key_cache=key_cache, value_cache=value_cache,
                                        slot_indices=torch.tensor([17, -1, 0], dtype=torch.int32))
    assert key_cache[1, 1, 0].tolist() == [1.0, 2.0] and key_cache[0, 0, 0].tolist() == [5.0, 6.0]
    assert value_cache[1, 1, 0].tolist() == [-1.0, -2.0]
    assert key_cache.abs().sum() == 1 + 2 + 5 + 6          # nothing else written, padding (-1) skipped
    with pytest.raises(ValueError, match="int32"):
        emulated_npu._npu_reshape_and_cache(key=key, value=key, key_cache=key_cache, value_cache=value_cache,
                                            slot_indices=torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="outside the cache"):
        emulated_npu._npu_reshape_and_cache(key=key, value=key, key_cache=key_cache, value_cache=value_cache,
                                            slot_indices=torch.tensor([1, 32, 3], dtype=torch.int32))


def _two_token_cache(block_size=16):
    """Keys k0=[1,0], k1=[0,1]; values v0=[4,0], v1=[0,8]; every other slot holds a large value."""
    key_cache = torch.full((2, block_size, 1, 2), 100.0)
    value_cache = torch.full((2, block_size, 1, 2), 100.0)
    key_cache[1, :2, 0] = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    value_cache[1, :2, 0] = torch.tensor([[4.0, 0.0], [0.0, 8.0]])
    return key_cache, value_cache


def test_paged_attention_decode_by_hand(emulated_npu):
    # q = [ln 3, 0]: scores [ln 3, 0] -> weights [3/4, 1/4] -> out = 3/4*[4,0] + 1/4*[0,8] = [3, 2].
    # Two query heads share the one KV head; the second head's q = 0 weighs both keys equally: [2, 4].
    key_cache, value_cache = _two_token_cache()
    query = torch.tensor([[[math.log(3.0), 0.0], [0.0, 0.0]]])
    out = torch.empty_like(query)
    emulated_npu._npu_paged_attention(query=query, key_cache=key_cache, value_cache=value_cache, num_kv_heads=1,
                                      num_heads=2, scale_value=1.0,
                                      block_table=torch.tensor([[1, 0]], dtype=torch.int32),
                                      context_lens=torch.tensor([2], dtype=torch.int32), out=out)
    torch.testing.assert_close(out, torch.tensor([[[3.0, 2.0], [2.0, 4.0]]]))


def test_paged_attention_rejects_block_size_atb_does_not_take(emulated_npu):
    query = torch.zeros(1, 1, 2)
    cache = torch.zeros(2, 8, 1, 2)
    with pytest.raises(ValueError, match="multiple of 16"):
        emulated_npu._npu_paged_attention(query=query, key_cache=cache, value_cache=cache, num_kv_heads=1, num_heads=1,
                                          scale_value=1.0, block_table=torch.zeros(1, 1, dtype=torch.int32),
                                          context_lens=torch.ones(1, dtype=torch.int32), out=torch.empty_like(query))


def _fia_paged(emulated_npu, q_len, kv_len, sparse_mode, mask):
    """One request, keys all zero (uniform weights over visible keys), values 3, 6, 9 at positions 0, 1, 2."""
    key_cache, value_cache = torch.zeros(1, 16, 1, 1), torch.zeros(1, 16, 1, 1)
    value_cache[0, :3, 0, 0] = torch.tensor([3.0, 6.0, 9.0])
    return emulated_npu.npu_fused_infer_attention_score(
        query=torch.ones(q_len, 1, 1), key=key_cache.view(1, 16, -1), value=value_cache.view(1, 16, -1),
        atten_mask=mask, block_table=torch.zeros(1, 1, dtype=torch.int32), input_layout="TND", block_size=16,
        actual_seq_lengths=[q_len], actual_seq_lengths_kv=[kv_len], num_key_value_heads=1, num_heads=1,
        scale=1.0, sparse_mode=sparse_mode, softmax_lse_flag=True)


def test_fia_right_down_causal_by_hand(emulated_npu):
    # 2 queries at KV positions 1 and 2: the first sees v0, v1 (mean 4.5), the second all three (mean 6).
    out, lse = _fia_paged(emulated_npu, 2, 3, 3, MASK)
    torch.testing.assert_close(out.flatten(), torch.tensor([4.5, 6.0]))
    torch.testing.assert_close(lse.flatten(), torch.tensor([math.log(2.0), math.log(3.0)]))
    out, _ = _fia_paged(emulated_npu, 2, 3, 0, None)             # sparse_mode 0, no mask: both see everything
    torch.testing.assert_close(out.flatten(), torch.tensor([6.0, 6.0]))


def test_fia_without_block_table_is_packed_and_cumulative(emulated_npu):
    # Prompts of 2, 1 and 2 tokens, keys zero: prompt 0 -> [v0, mean(v0, v1)], prompt 1 -> [v2],
    # prompt 2 -> [v3, mean(v3, v4)]. Reading the KV lengths as per-request would give prompt 1 three keys.
    value = torch.tensor([3.0, 5.0, 7.0, 9.0, 11.0]).view(5, 1, 1)
    out, lse = emulated_npu.npu_fused_infer_attention_score(
        query=torch.ones(5, 1, 1), key=torch.zeros(5, 1, 1), value=value, atten_mask=MASK, input_layout="TND",
        actual_seq_lengths=[2, 3, 5], actual_seq_lengths_kv=[2, 3, 5], num_heads=1, num_key_value_heads=1,
        scale=1.0, sparse_mode=3)
    torch.testing.assert_close(out.flatten(), torch.tensor([3.0, 4.0, 7.0, 9.0, 10.0]))
    assert lse.shape == (1,) and lse.item() == 0                 # softmax_lse_flag=False: a one-element zero


def test_fia_gqa_head_mapping(emulated_npu):
    # 4 query heads on 2 KV heads: heads 0, 1 read KV head 0 (value 1), heads 2, 3 read KV head 1 (value 2).
    value = torch.tensor([1.0, 2.0]).view(1, 2, 1)
    out, _ = emulated_npu.npu_fused_infer_attention_score(
        query=torch.randn(1, 4, 1), key=torch.randn(1, 2, 1), value=value, input_layout="TND",
        actual_seq_lengths=[1], actual_seq_lengths_kv=[1], num_heads=4, num_key_value_heads=2, sparse_mode=0)
    torch.testing.assert_close(out.flatten(), torch.tensor([1.0, 1.0, 2.0, 2.0]))


@pytest.mark.parametrize("kwargs, error", [
    ({"input_layout": "BSH"}, NotImplementedError),
    ({"sparse_mode": 2}, NotImplementedError),
    ({"sparse_mode": 0, "atten_mask": MASK}, NotImplementedError),
    ({"pse_shift": torch.zeros(1)}, NotImplementedError),
    ({"atten_mask": torch.ones(128, 128, dtype=torch.int8)}, ValueError),
    ({"atten_mask": MASK.T.contiguous()}, ValueError),
    ({"actual_seq_lengths": [1, 0]}, ValueError),
])
def test_fia_validates_what_it_supports(emulated_npu, kwargs, error):
    args = dict(query=torch.zeros(1, 1, 1), key=torch.zeros(1, 1, 1), value=torch.zeros(1, 1, 1), atten_mask=MASK,
                input_layout="TND", actual_seq_lengths=[1], actual_seq_lengths_kv=[1], num_heads=1, sparse_mode=3)
    args.update(kwargs)
    if len(args["actual_seq_lengths"]) == 2:
        args["actual_seq_lengths_kv"] = [1, 1]
    with pytest.raises(error):
        emulated_npu.npu_fused_infer_attention_score(**args)
