"""Tunesmith's cache files are Kernel Tuner cache files: Kernel Tuner 1.5.0 reads them (issue 15, item 3).

Kernel Tuner's reader is append-friendly: it decides whether a file is closed by its last three
characters ("}\\n}" or "}}}") and otherwise appends "}\\n}". So `cache` must be the last key (a key
after it gave `JSONDecodeError: Extra data`), and a file ending like Kernel Tuner's own ("}\\n}")
can even be reopened for appending.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from generator.sandbox.jobs import PROJECT_ROOT

SHIPPED = sorted((PROJECT_ROOT / "problems" / "caches").glob("*/*.json.gz"))


def _gunzip(path: Path, tmp_path: Path) -> Path:
    out = tmp_path / f"{path.parent.name}_{path.name[:-3]}"
    out.write_bytes(gzip.decompress(path.read_bytes()))
    return out


def test_there_are_shipped_caches():
    assert len(SHIPPED) >= 4, SHIPPED


@pytest.mark.parametrize("path", SHIPPED, ids=[f"{p.parent.name}/{p.name}" for p in SHIPPED])
def test_kernel_tuner_reads_every_shipped_cache(path, tmp_path):
    """`gunzip -c X.json.gz > c.json; kernel_tuner.tune_cache('c.json')` works, metadata and all."""
    import kernel_tuner
    from kernel_tuner.util import read_cache

    plain = _gunzip(path, tmp_path)
    doc = read_cache(str(plain), open_cache=False)
    # a whole brute-forced space (the smallest shipped ones, for tiny budgets, have 72 and 92 configurations)
    assert len(doc["cache"]) >= 50 and doc["tunesmith"]["problem"] == path.parent.name
    assert list(doc)[-1] == "cache"  # where Kernel Tuner's reader needs it
    results, _ = kernel_tuner.tune_cache(
        str(plain), strategy="random_sample", strategy_options={"max_fevals": 3}, quiet=True
    )
    assert len(results) == 3 and all(
        r["time"] == doc["cache"][",".join(str(r[k]) for k in doc["tune_params_keys"])]["time"] for r in results
    )


@pytest.mark.parametrize("path", SHIPPED[:1], ids=["append"])
def test_kernel_tuner_can_reopen_a_shipped_cache_for_appending(path, tmp_path):
    """Tuning on with cache=FILE: Kernel Tuner opens the closed file, appends, closes; still JSON."""
    from kernel_tuner.util import close_cache, read_cache, store_cache

    plain = _gunzip(path, tmp_path)
    doc = read_cache(str(plain), open_cache=True)
    store_cache("new", {"time": 1.0}, str(plain), {})
    close_cache(str(plain))
    again = json.loads(plain.read_text())
    assert again["cache"]["new"] == {"time": 1.0} and len(again["cache"]) == len(doc["cache"]) + 1


def test_finalize_cache_writes_what_kernel_tuner_reads(tmp_path):
    """The cache writer: metadata before `cache`, overhead times added, Kernel Tuner reads the result."""
    from kernel_tuner.util import read_cache

    from generator.live.cache_build import finalize_cache

    header = {
        "device_name": "CPU",
        "kernel_name": "k",
        "problem_size": [4],
        "tune_params_keys": ["bx"],
        "tune_params": {"bx": [1, 2]},
        "objective": ["time"],
        "cache": {},
    }
    partial = tmp_path / "CPU.json"
    # what Kernel Tuner leaves while tuning: the header without its closing brackets, then entries
    text = json.dumps(header, indent="")[:-3]
    for bx in (1, 2):
        text += (
            "\n"
            + json.dumps(
                {
                    str(bx): {
                        "bx": bx,
                        "time": float(bx),
                        "times": [float(bx)],
                        "compile_time": 1.0,
                        "verification_time": 0,
                        "benchmark_time": 2.0,
                    }
                }
            )[1:-1]
            + ","
        )
    partial.write_text(text)
    problem = SimpleNamespace(name="tiny", iterations=7)
    final = tmp_path / "CPU.json.gz"
    finalize_cache(partial, final, {"1": {"framework_time": 0.5, "strategy_time": 0.0}}, problem, "CPU")
    plain = _gunzip(final, tmp_path)
    doc = read_cache(str(plain), open_cache=False)
    assert doc["tunesmith"]["problem"] == "tiny" and doc["cache"]["1"]["framework_time"] == 0.5
    assert list(doc)[-1] == "cache" and plain.read_text().endswith("}\n}")
