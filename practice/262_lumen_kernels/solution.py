"""Capstone stage 262: the reference Lumen NPU plugin project."""
PROJECT = "practice/capstone/solution"
