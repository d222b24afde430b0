"""A stand-in for llama-cpp-python in the tests: CI never builds the real engine (see server.py)."""

__version__ = "0.0.0-fake"
