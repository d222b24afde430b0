"""Exit 0 when at least half of a smoke sample's configurations compiled, ran and verified; else say why, exit 1.

Usage: python3 problems/smoke_ok.py DIR   (DIR holds the <GPU>.sample.json of `tunesmith cache build --sample`)
"""

import sys
from pathlib import Path

from generator.live.cache_build import read_partial_cache

files = sorted(Path(sys.argv[1]).glob("*.sample.json"))
if not files:
    sys.exit(f"{sys.argv[1]}: no sample cache (the build failed before measuring anything)")
cache = read_partial_cache(files[0])["cache"]
good = [k for k, v in cache.items() if isinstance(v.get("time"), (int, float)) and v.get("verification") != "failed"]
bad = {k: (v.get("verification") or v.get("time")) for k, v in cache.items() if k not in good}
print(f"smoke: {len(good)} of {len(cache)} configurations good; bad: {dict(list(bad.items())[:4])}")
sys.exit(0 if cache and 2 * len(good) >= len(cache) else 1)
