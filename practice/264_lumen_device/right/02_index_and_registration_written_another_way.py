# Correct: set_device reads the index through torch.device for every argument (torch.device('lumen', i) for an int), and the module registers itself by setting torch.lumen and sys.modules itself.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(mutate(REFERENCE, 'lumen_npu/device.py', '    index = _index(device)\n', '''    as_device = torch.device("lumen", device) if isinstance(device, int) else torch.device(device)
    if as_device.type != "lumen":
        raise ValueError(f"not a lumen device: {device}")
    index = 0 if as_device.index is None else as_device.index
'''), 'lumen_npu/device.py', '''if hasattr(torch, "lumen"):
    torch.lumen = sys.modules["torch.lumen"] = sys.modules[__name__]
else:
    torch._register_device_module("lumen", sys.modules[__name__])''', '''torch.lumen = sys.modules["torch.lumen"] = sys.modules[__name__]''')
