# Mistake: LumenRMSNorm passes a fixed eps of 1e-6 to the Lumen ops instead of the layer's own eps (the model's rms_norm_eps).
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/layers.py', '''            return torch.ops.lumen.rms_norm(x, self.weight, self.eps)
        torch.ops.lumen.fused_add_rms_norm(x, residual, self.weight, self.eps)''', '''            return torch.ops.lumen.rms_norm(x, self.weight, 1e-6)
        torch.ops.lumen.fused_add_rms_norm(x, residual, self.weight, 1e-6)''')
