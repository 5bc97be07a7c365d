# Mistake: all_gather returns the gathered CPU tensor instead of bringing it back to the Lumen device.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/communicator.py', '        return super().all_gather(host(x), dim).to(x.device)', '        return super().all_gather(host(x), dim)')
