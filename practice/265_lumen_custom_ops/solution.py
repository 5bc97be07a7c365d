"""Capstone stage 265: the reference Lumen NPU plugin project."""
PROJECT = "practice/capstone/solution"
