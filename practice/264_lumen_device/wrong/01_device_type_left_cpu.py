# Mistake: device_type stays 'cpu', so the engine keeps its weights and KV cache in CPU memory and Lumen is never used as a device.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/platform.py', '    device_type = "lumen"', '    device_type = "cpu"')
