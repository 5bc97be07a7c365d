"""A GEMV over bf16 weights compiled with numba: one token's row times a ``[N, K]`` weight, the product a decode step
at batch 1 spends nearly all its time in. Imported only by :func:`.compiled._kernel`, when numba is installed.

A decode step at batch 1 reads every weight once, so it is bound by memory bandwidth. Measured with torch 2.13 on the
2-core Xeon (AVX-512) this was written on (a 1 GB working set, so that the weights come from memory, as in a real step):
torch's bf16 ``F.linear`` (oneDNN) reads a bf16 weight at 11-16 GB/s, where its fp32 ``F.linear`` reads 21-27 GB/s;
this kernel reads bf16 at 20-22 GB/s (``benchmarks/decode_floor.py`` shows the whole step). How:

- a bf16 value is the top half of an fp32 one, so ``bits << 16`` is its exact fp32 value; products and sums run in
  fp32, as oneDNN's do, and each sum is rounded to bf16 once, in the kernel (:func:`round_to_bf16`: no conversion
  pass after it);
- the weight is read as 32-bit words, two bf16 values each (the even column in the low half, the odd one in the high
  half on a little-endian machine): ``word << 16`` and ``word & 0xFFFF0000`` are the two fp32 values, one instruction
  each and no widening load, against the even and odd halves of ``x``;
- the rows are split over the threads (``prange``); each row is one dot product that LLVM vectorizes (``fastmath``
  lets it reorder the sum, so a result may differ from ``F.linear`` in its last bf16 bit);
- each row first asks the memory system for a row about 4 KiB further on (a software prefetch; 2 rows of 896 values
  ahead read faster than 4, 8 or 16, and without it the loop read 14.5 GB/s instead of 20): the hardware prefetcher
  alone does not keep enough reads in flight.

Against the previous form of this kernel (one bf16 widened at a time, the fp32 result converted by torch after, 8 KiB
ahead), one pass over the 97 weights of a Qwen2.5-0.5B-sized step took 9-10 % less time, the two alternating in one
process (medians 66.6 against 73.1 ms, then 73.4 against 81.2 ms, at a slow moment of the machine); alone on a 17 MB
weight it read 19.8-20.0 GB/s against 16.5-17.7.

Tried and left out: AVX512-BF16's ``vdpbf16ps`` (the dot product of bf16 pairs into fp32 sums, one instruction per 64
bytes of the weight instead of two shifts and two fused multiply-adds per word), which the Xeon above has. It was no
faster, alone (22.8 against 23.1 GB/s over the 97 weights of a step) or in the decode step (56.6 against 56.4 ms and
68.4 against 69.9 ms, the two alternating in one process): the loop waits on memory, not on its arithmetic. What is
left between it and reading the weights alone (``benchmarks/decode_floor.py``, ``reading alone``) is elsewhere.
"""
from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, register_jitable


@intrinsic
def bf16_to_f32(typingctx, bits):
    """The fp32 value of a bf16 given as its 16 bits (an int16): ``bits`` in the top half of a 32-bit word."""
    if not (isinstance(bits, types.Integer) and bits.bitwidth == 16):
        return None

    def codegen(context, builder, signature, args):
        word = builder.zext(args[0], ir.IntType(32))
        return builder.bitcast(builder.shl(word, ir.Constant(ir.IntType(32), 16)), ir.FloatType())
    return types.float32(bits), codegen


@intrinsic
def prefetch(typingctx, array, row, col):
    """Ask for the cache line holding ``array[row, col]`` (LLVM's ``llvm.prefetch``: a read, kept in every level of
    the cache). A hint: it never faults, and the kernel only passes rows it owns."""
    if not (isinstance(array, types.Array) and array.ndim == 2):
        return None

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        view = context.make_array(array_type)(context, builder, args[0])
        where = cgutils.get_item_pointer(context, builder, array_type, view, args[1:], wraparound=False)
        byte_ptr = builder.bitcast(where, ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr.type, i32, i32, i32]), "llvm.prefetch.p0i8")
        builder.call(function, [byte_ptr, i32(0), i32(3), i32(1)])   # read, highest locality, data cache
        return context.get_dummy_value()
    return types.void(array, types.intp, types.intp), codegen


@intrinsic
def word_as_f32(typingctx, word):
    """The fp32 number whose bits are the low 32 bits of the integer ``word`` (numba widens 32-bit integer
    arithmetic to 64 bits; the bits above are dropped)."""
    if not isinstance(word, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        bits = args[0]
        if word.bitwidth > 32:
            bits = builder.trunc(bits, ir.IntType(32))
        elif word.bitwidth < 32:
            bits = builder.zext(bits, ir.IntType(32))
        return builder.bitcast(bits, ir.FloatType())
    return types.float32(word), codegen


@intrinsic
def f32_bits(typingctx, value):
    """The 32 bits of the fp32 number ``value``, as an unsigned integer."""
    if not isinstance(value, types.Float) or value.bitwidth != 32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.uint32(value), codegen


@register_jitable(inline="always")
def round_to_bf16(value):
    """The bits of the bf16 nearest ``value`` (an fp32), ties to even, as an int16: what torch's ``.to(torch.bfloat16)``
    gives (``c10::BFloat16``'s ``round_to_nearest_even``), NaN as its quiet NaN 0x7FC0. NaN is found from the bits:
    under ``fastmath`` LLVM assumes there is none and drops a ``value != value`` test."""
    bits = f32_bits(value)
    if bits & np.uint32(0x7FFFFFFF) > np.uint32(0x7F800000):
        return np.int16(0x7FC0)
    return np.int16((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))


def gemv_bf16(x, weight_pairs, bias, out, ahead):
    """``out[n] = sum_k x[k] * weight[n, k] + bias[n]`` in fp32. ``x`` ``[K]`` and ``bias`` ``[N]`` (or ``[0]``: no
    bias) are the int16 bits of bf16 values; ``weight_pairs`` ``[N, K/2]`` (uint32) holds the bits of the bf16 weight
    ``[N, K]`` two at a time, ``weight[n, 2j]`` in the low half of ``weight_pairs[n, j]`` and ``weight[n, 2j + 1]`` in
    the high half (a little-endian view); ``out`` ``[N]`` (int16) gets the bits of each sum rounded to bf16 once
    (:func:`round_to_bf16`). ``ahead``: how many rows ahead to prefetch. Jitted
    by :func:`.compiled._kernel` (``parallel``, ``fastmath``); the caller checks the shapes (compiled code does not
    check bounds)."""
    rows, half = weight_pairs.shape
    x_even, x_odd = np.empty(half, dtype=np.float32), np.empty(half, dtype=np.float32)
    for j in range(half):
        x_even[j], x_odd[j] = bf16_to_f32(x[2 * j]), bf16_to_f32(x[2 * j + 1])
    for n in numba.prange(rows):
        if n + ahead < rows:
            for j in range(0, half, 16):   # one request per 64-byte cache line
                prefetch(weight_pairs, n + ahead, j)
        acc = np.float32(0.0)
        for j in range(half):
            pair = weight_pairs[n, j]
            acc += x_even[j] * word_as_f32(pair << np.uint32(16)) + x_odd[j] * word_as_f32(pair & np.uint32(0xFFFF0000))
        if bias.shape[0]:
            acc += bf16_to_f32(bias[n])
        out[n] = round_to_bf16(acc)
