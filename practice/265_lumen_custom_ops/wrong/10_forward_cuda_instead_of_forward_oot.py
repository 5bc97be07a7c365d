# Mistake: LumenRMSNorm overrides forward_cuda, the method vLLM's CUDA platform runs, so on Lumen (an out-of-tree platform, which runs forward_oot) the Lumen ops are never called.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/layers.py', '    def forward_oot(self,', '    def forward_cuda(self,')
