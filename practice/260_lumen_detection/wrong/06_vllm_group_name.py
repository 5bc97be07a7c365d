# Mistake: the entry point is declared in vLLM's group vllm.platform_plugins instead of mini_platform.platform_plugins.
"""The reference Lumen project with one change in pyproject.toml."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'pyproject.toml',
                 '[project.entry-points."mini_platform.platform_plugins"]',
                 '[project.entry-points."vllm.platform_plugins"]')
