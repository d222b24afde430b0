"""Where the benchmarks read and write: the repository root, and benchmarks/results/, the one folder every
script writes its JSON into."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
