# Mistake: _lazy_init loads the C++ part but never installs the fallback, so every op without a C++ kernel (matmul, softmax, ...) has no Lumen implementation.
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/device.py', '    fallback.install()\n', '')
