"""Tunesmith's benchmarks: scripts that measure speed and quality, run from the repository root as
`python -m benchmarks.<name>` (benchmarks/README.md is the index: script, what it measures, the JSON it writes
under benchmarks/results/, the docs page that renders it). Shared helpers live in benchmarks/_lib/."""
