# Mistake: set_device treats its argument as an index, so set_device('lumen:1') or a worker's torch.device fails.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/device.py', '    index = _index(device)\n', '    index = device\n')
