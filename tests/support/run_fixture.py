"""A tiny run directory written through the Archive's own write API, for the lineage and report tests.

Family tree (generation: candidates):
  0: c0001 new 0.30, c0002 new failed (runtime)
  1: c0003 refine(c0001) 0.45, c0004 fix(c0002) 0.20
  2: c0005 simplify(c0003) 0.52 -- the best; its description and code try to inject HTML,
     c0006 refine(c0003) duplicate of c0003
  3: c0007 refine(c0005) failed (timeout)
The candidates file ends in a torn line, as after a kill -9 in the middle of a write.
"""

from __future__ import annotations

import time
from pathlib import Path

from generator.archive import Archive, Candidate
from generator.llm.records import Exchange

TASKS = ["gemm_milo/A100", "convolution_milo/A100"]
XSS = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> & more'

_BASE = '''class Search:
    """Random restarts."""
    hyperparameters = {"restarts": {"type": "int", "low": 1, "high": 8, "default": 2}}

    def __init__(self, budget=5000, restarts=2):
        self.budget, self.restarts = budget, restarts

    def __call__(self, func, searchspace):
        for cfg in searchspace.get_random_sample(10):
            func(cfg)
'''


def _code(cid: str) -> str:
    if cid == "c0003":
        return _BASE.replace("get_random_sample(10)", "get_random_sample(20)") + "        # refined\n"
    if cid == "c0005":
        return _BASE.replace('"""Random restarts."""', '"""</script><b>bold?</b>"""') + "        # s < t && u > v\n"
    return _BASE


def _fitness(score: float | None, scores: list[float]) -> dict:
    return {
        "score": score,
        "wall_s": 1.5,
        "error": None,
        "per_task": {t: {"score": s, "std": 0.05, "fevals": 40} for t, s in zip(TASKS, scores)},
    }


SPEC = [  # id, generation, operator, parents, description, score, per-task, error kind, duplicate_of
    ("c0001", 0, "new", [], "# Restarts: random restarts", 0.30, [0.2, 0.4], None, None),
    ("c0002", 0, "new", [], "# Broken: divides by zero", None, [], "runtime", None),
    ("c0003", 1, "refine", ["c0001"], "# Restarts+: more samples", 0.45, [0.4, 0.5], None, None),
    ("c0004", 1, "fix", ["c0002"], "# Fixed: no division", 0.20, [0.1, 0.3], None, None),
    ("c0005", 2, "simplify", ["c0003"], XSS, 0.52, [0.5, 0.54], None, None),
    ("c0006", 2, "refine", ["c0003"], "# Same again", 0.45, [0.4, 0.5], None, "c0003"),
    ("c0007", 3, "refine", ["c0005"], "# Slow: sleeps", None, [], "timeout", None),
]


def build_run(root: Path, torn_tail: bool = True, upto: int = len(SPEC)) -> Path:
    """Write the tiny run (its first `upto` candidates) into root/run and return its path."""
    run = Path(root) / "run"
    Archive.create(
        run, {"campaign": "tiny", "llm": {"model": "synth/components"}, "tasks": {"train": TASKS}}, "# tiny\n", "tiny"
    )
    grow_run(run, upto)
    if torn_tail:
        with open(run / "candidates.jsonl", "a") as fh:
            fh.write('{"id": "c0008", "generation": 3, "oper')
    return run


def grow_run(run: Path, upto: int = len(SPEC)) -> None:
    """Append the tiny run's candidates after those it holds, up to the `upto`-th, as a campaign would."""
    archive = Archive.open(run)
    for n, (cid, gen, op, parents, desc, score, per, err, dup) in list(enumerate(SPEC, start=1))[
        len(archive.candidates()) : upto
    ]:
        xid = f"x{n:04d}"
        reply = f"{desc}\n```python\n{_code(cid)}```\n"
        archive.append_exchange(
            Exchange(
                id=xid,
                purpose=f"generate:{op}",
                model="synth/components",
                ref=cid,
                messages=[
                    {"role": "system", "content": "You write optimizers."},
                    {"role": "user", "content": f"## Instruction (operator: {op})\nWrite <one> & only one."},
                ],
                reply=reply,
                prompt_tokens=100 * n,
                completion_tokens=50 * n,
                cost_usd=0.001 * n,
                latency_s=0.1,
            )
        )
        error = {"kind": err, "message": f"{err} happened", "traceback": "Traceback ...", "line": 9} if err else None
        archive.append_candidate(
            Candidate(
                id=cid,
                generation=gen,
                operator=op,
                parent_ids=parents,
                description=desc,
                code_path=archive.write_code(cid, _code(cid)),
                fitness=None if err else _fitness(score, per),
                error=error,
                exchange_id=xid,
                duplicate_of=dup,
                timings={"llm_s": 0.1, "eval_s": 1.5},
                created=time.time(),
            )
        )
    made = archive.candidates()
    best = max((c for c in made if c.ok and not c.duplicate_of), key=lambda c: c.score, default=None)
    archive.write_status({"state": "running", "candidates": len(made), "best": best.id if best else None})


def write_hpo(run: Path) -> Path:
    """An Optuna result for the best candidate, written by the HPO room's own writer."""
    from generator.tuning.results import HpoResult, SplitScores, write_result

    return write_result(
        run,
        HpoResult(
            candidate_id="c0005",
            class_name="Search",
            study_name="c0005",
            storage="sqlite:///hpo.db",
            hyperparameters={"restarts": {"type": "int", "low": 1, "high": 8, "default": 2}},
            defaults={"restarts": 2},
            best_params={"restarts": 4},
            best_value=0.61,
            trials={"complete": 8, "pruned": 0, "failed": 0, "requested": 8},
            train=SplitScores(TASKS, 0.52, 0.61, {TASKS[0]: 0.5}, {TASKS[0]: 0.6}),
            test=SplitScores(["gemm_milo/A4000"], 0.40, 0.47),
            repeats=3,
            seed=1,
            report_seed=2,
            wall_s=12.0,
        ),
    )
