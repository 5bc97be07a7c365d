"""Capstone stage 263: the reference Lumen NPU plugin project."""
PROJECT = "practice/capstone/solution"
