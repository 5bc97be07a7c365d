"""Chapter 9 capstone: bring up the invented Lumen NPU as an out-of-tree mini_platform plugin.

- ``starter/``: the vendor's skeleton project (``pyproject.toml`` + ``lumen_npu/``) with TODOs;
  copy it to ``practice/workspace/lumen-npu/`` and fill it in.
- ``solution/``: the reference project.
- ``harness.py``: what the stage exercises 260-265 use to install a project into a temporary site
  directory (never the learner's environment) and run it.
"""
