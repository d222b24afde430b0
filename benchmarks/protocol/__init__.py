"""The generalisation protocol's scripts (issue 38): run as `python -m benchmarks.protocol.<name>`."""
