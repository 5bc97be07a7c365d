# Mistake: the device module registers itself with torch._register_device_module on every import, and a second import in the same process (the judge, the notebook) fails because torch.lumen exists.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/device.py', 'if hasattr(torch, "lumen"):', 'if False:')
