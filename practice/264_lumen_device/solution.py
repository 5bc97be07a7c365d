"""Capstone stage 264: the reference Lumen NPU plugin project."""
PROJECT = "practice/capstone/solution"
