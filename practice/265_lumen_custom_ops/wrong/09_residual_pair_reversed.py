# Mistake: with a residual, LumenRMSNorm returns (new residual, normed) instead of (normed, new residual), the order RMSNorm returns and the decoder layer unpacks.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/layers.py', '        return x, residual\n', '        return residual, x\n')
