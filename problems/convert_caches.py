"""Rewrite cache files in the layout Kernel Tuner 1.5.0 reads (Tunesmith's metadata before `cache`).

Caches built before this fix had the `tunesmith` key after `cache`, which Kernel Tuner's
append-friendly reader rejects (JSONDecodeError: Extra data). The content is unchanged; only the
key order and the end of the file ("}\\n}") change.

Usage (from the project root): PYTHONPATH=. python3 problems/convert_caches.py [CACHE.json.gz ...]
(default: every problems/caches/*/*.json.gz)
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

from generator.live.cache_build import write_cache


def convert(path: Path) -> bool:
    """Rewrite one gzipped cache in place if needed; True if it changed."""
    raw = gzip.decompress(path.read_bytes())
    doc = json.loads(raw)
    tmp = path.with_name(path.name + ".tmp")
    new = write_cache(doc, tmp)
    if new != doc or json.loads(gzip.decompress(tmp.read_bytes())) != doc:
        tmp.unlink()
        raise SystemExit(f"{path}: the rewritten cache differs from the original; left unchanged")
    if gzip.decompress(tmp.read_bytes()) == raw:
        tmp.unlink()
        return False
    tmp.replace(path)
    return True


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(Path("problems/caches").glob("*/*.json.gz"))
    for path in paths:
        print(f"{path}: {'converted' if convert(path) else 'already in Kernel Tuner order'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
