"""A GEMV over bf16 weights compiled with numba: one token's row times a ``[N, K]`` weight, the product a decode step
at batch 1 spends nearly all its time in. Imported only by :func:`.compiled._kernel`, when numba is installed.

A decode step at batch 1 reads every weight once, so it is bound by memory bandwidth. Measured with torch 2.13 on the
2-core Xeon (AVX-512) this was written on (a 1 GB working set, so that the weights come from memory, as in a real step):
torch's bf16 ``F.linear`` (oneDNN) reads a bf16 weight at 11-16 GB/s, where its fp32 ``F.linear`` reads 22-25 GB/s;
this kernel reads bf16 at 18-22 GB/s (``benchmarks/decode_floor.py`` shows the whole step). How:

- a bf16 value is the top half of an fp32 one, so ``bits << 16`` is its exact fp32 value; products and sums run in
  fp32, as oneDNN's do, and the caller rounds the result to bf16 once;
- the rows are split over the threads (``prange``); each row is one dot product that LLVM vectorizes (``fastmath``
  lets it reorder the sum, so a result may differ from ``F.linear`` in its last bf16 bit);
- each row first asks the memory system for a row about 8 KiB further on (a software prefetch). Without it, the same
  loop read 12-14 GB/s: the conversion makes the loop long enough per cache line that the hardware prefetcher alone
  does not keep enough reads in flight.
"""
from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


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


def gemv_bf16(x, weight, bias, out, ahead):
    """``out[n] = sum_k x[k] * weight[n, k] + bias[n]`` in fp32: ``x`` ``[K]``, ``weight`` ``[N, K]`` and ``bias``
    ``[N]`` (or ``[0]``: no bias) are the int16 bits of bf16 values; ``out`` is fp32 ``[N]``. ``ahead``: how many rows
    ahead to prefetch. Jitted by :func:`.compiled._kernel` (``parallel``, ``fastmath``); the caller checks the shapes
    (compiled code does not check bounds)."""
    rows, width = weight.shape
    xs = np.empty(width, dtype=np.float32)
    for k in range(width):
        xs[k] = bf16_to_f32(x[k])
    for n in numba.prange(rows):
        if n + ahead < rows:
            for k in range(0, width, 32):   # one request per 64-byte cache line
                prefetch(weight, n + ahead, k)
        acc = np.float32(0.0)
        for k in range(width):
            acc += xs[k] * bf16_to_f32(weight[n, k])
        if bias.shape[0]:
            acc += bf16_to_f32(bias[n])
        out[n] = acc
