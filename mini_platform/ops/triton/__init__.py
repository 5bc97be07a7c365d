"""Triton kernels for NVIDIA GPUs; on a CPU they run only under TRITON_INTERPRET=1 (set before any @triton.jit)."""
