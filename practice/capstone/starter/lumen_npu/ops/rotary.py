"""Rotary embedding on Lumen: the vendor library's kernel has the engine's contract already."""
from mini_platform.ops.cpu.rotary import rotary_embedding  # noqa: F401
