# Mistake: lumen::fused_add_rms_norm declares only residual in mutates_args, but the kernel writes x too (the normalized output goes into x).
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/custom_ops.py', 'mutates_args=("x", "residual")', 'mutates_args=("residual",)')
