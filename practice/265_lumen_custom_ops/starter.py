"""Capstone stage 265 judges your Lumen NPU plugin project, not this file.

PROJECT is the folder of your project (pyproject.toml + lumen_npu/), relative to the repository root.
Make it once from the vendor's skeleton:

    cp -r practice/capstone/starter practice/workspace/lumen-npu

then fill in its TODOs and run:  python practice/judge.py 265
"""
PROJECT = "practice/workspace/lumen-npu"
