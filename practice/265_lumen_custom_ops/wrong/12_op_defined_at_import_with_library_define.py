# Mistake: lumen::rms_norm is defined at import with torch.library.define/impl/register_fake (the pattern of vLLM's direct_register_custom_op), outside define()'s once-per-process check; a second definition of a name is refused, so importing the module again in one process fails.
"""The reference Lumen project with two changes."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(mutate(REFERENCE, 'lumen_npu/custom_ops.py',
                        '    torch.library.custom_op("lumen::rms_norm", rms_norm, mutates_args=()).register_fake(rms_norm_fake)\n',
                        ''), 'lumen_npu/custom_ops.py', '\n\ndefine()\n', '''


torch.library.define("lumen::rms_norm", "(Tensor x, Tensor weight, float eps) -> Tensor")
torch.library.impl("lumen::rms_norm", "default", rms_norm)
torch.library.register_fake("lumen::rms_norm", rms_norm_fake)
define()
''')
