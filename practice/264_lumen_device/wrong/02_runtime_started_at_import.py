# Mistake: importing the device module starts the runtime (loads, maybe builds, the C++ part) instead of waiting for the first Lumen tensor.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/device.py', 'if not hasattr(torch.Tensor, "is_lumen"):', '_lazy_init()\nif not hasattr(torch.Tensor, "is_lumen"):')
