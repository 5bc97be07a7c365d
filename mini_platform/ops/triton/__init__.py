"""Triton kernels for NVIDIA GPUs; on a CPU they run only under TRITON_INTERPRET=1 (set before any @triton.jit)."""

# The platform these kernels belong to: its graph wrapper captures them.
PLATFORM = "mini_platform.platforms.cuda.CudaPlatform"
