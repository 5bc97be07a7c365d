"""Capstone stage 261: the reference Lumen NPU plugin project."""
PROJECT = "practice/capstone/solution"
