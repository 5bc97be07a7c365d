"""Paged KV-cache write and paged attention on Lumen: the vendor library's kernels have the engine's contracts."""
from mini_platform.ops.cpu.attention import paged_attention, paged_decode_attention, reshape_and_cache  # noqa: F401
