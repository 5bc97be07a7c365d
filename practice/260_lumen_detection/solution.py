"""Capstone stage 260: the reference Lumen NPU plugin project."""
PROJECT = "practice/capstone/solution"
