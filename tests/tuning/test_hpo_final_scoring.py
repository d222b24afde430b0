"""Two `tunesmith hpo` processes on one study: one does the final train/test scoring and writes
RUN/hpo/<id>.json, the other reads it (issue 27, item 6); the `results:` line names the real file."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from test_hpo_parallel import _make_run

optuna = pytest.importorskip("optuna")

WORKER = textwrap.dedent(
    """
    import os, sys
    import generator.tuning.hpo as hpo
    from generator.cli import main

    run, storage, log = sys.argv[1:4]
    score_and_write = hpo._score_and_write

    def logged(*args, **kwargs):
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\\n")
        return score_and_write(*args, **kwargs)

    hpo._score_and_write = logged
    sys.exit(main(["hpo", run, "--storage", storage, "--trials", "3", "--repeats", "1", "--report-repeats", "1",
                   "--quiet"]))
    """
)


def test_parallel_hpo_processes_score_and_write_the_result_once(tmp_path, hub_dir):
    run = _make_run(tmp_path, hub_dir)
    storage = f"sqlite:///{tmp_path / 'hpo.db'}"
    log = tmp_path / "final.log"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(run), storage, str(log)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [w.communicate(timeout=200)[0] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], outputs
    assert len(log.read_text().split()) == 1, outputs  # one final scoring, not one per process
    for out in outputs:
        assert f"results: {run / 'hpo' / 'c0001.json'}" in out
        assert "<id>" not in out
