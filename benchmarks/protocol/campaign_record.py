"""What a finished campaign cost and chose, from its run directory, as JSON (issue 38, item 5).

Usage: python3 benchmarks/protocol/campaign_record.py RUN_DIR OUT.json
Reads only the run's own records (run.json, status.json, candidates.jsonl, hpo/*.json, validation.json,
test.json): wall time from the run's creation to its last status, the candidates, the sandbox runs each stage
made (a run is one optimizer run on one task), HPO's time, the final choice and the one sealed look.
"""

import json
import sys
from pathlib import Path


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _candidate_runs(run: Path) -> dict:
    """Candidates, and the sandbox runs that scored them: each candidate's first runs (a near-copy is never run:
    it keeps its original's score), what racing added (races.jsonl: the repeats a race took a candidate to), and
    the seconds spent writing candidates and evaluating them (summed over workers that ran at once)."""
    rows = _jsonl(run / "candidates.jsonl")
    ran = [c for c in rows if not c.get("duplicate_of") and c.get("fitness")]
    first = sum(v.get("runs") or 0 for c in ran for v in (c["fitness"].get("per_task") or {}).values())
    tasks = max((len(c["fitness"].get("per_task") or {}) for c in ran), default=0)
    first_repeats = max((v.get("runs") or 0 for c in ran for v in (c["fitness"].get("per_task") or {}).values()),
                        default=0)
    raced = {}
    if (run / "races.jsonl").exists():
        for race in _jsonl(run / "races.jsonl"):
            raced[race["id"]] = max(raced.get(race["id"], 0), race["to"])
    timing = lambda key: round(sum((c.get("timings") or {}).get(key) or 0 for c in rows), 1)  # noqa: E731
    return {"candidates": len(rows), "near_copies_not_run": len(rows) - len(ran), "first_runs": first,
            "racing_runs": sum((to - first_repeats) * tasks for to in raced.values()),
            "write_s": timing("llm_s"), "evaluate_s": timing("eval_s")}


def _hpo(run: Path, train_tasks: int) -> list[dict]:
    out = []
    for path in sorted((run / "hpo").glob("*.json")):
        h = json.loads(path.read_text())
        trials = h.get("trials") or {}
        n = trials.get("complete", 0) + trials.get("pruned", 0) + trials.get("failed", 0) if isinstance(trials, dict) else 0
        out.append({"candidate": h["candidate_id"], "trials": trials, "trial_repeats": h.get("repeats"),
                    "report_repeats": h.get("report_repeats"), "wall_s": h.get("wall_s"), "accepted": h.get("accepted"),
                    "trial_runs_at_most": n * h.get("repeats", 0) * train_tasks,
                    "report_runs": 2 * h.get("report_repeats", 0) * len((h.get("train") or {}).get("tasks") or [])})
    return out


def record(run: Path) -> dict:
    created = json.loads((run / "run.json").read_text())["created"]
    status = json.loads((run / "status.json").read_text())
    train_tasks = len(json.loads((run / "config.json").read_text())["tasks"]["train"])
    validation = json.loads((run / "validation.json").read_text()) if (run / "validation.json").exists() else None
    test = json.loads((run / "test.json").read_text()) if (run / "test.json").exists() else None
    final_runs = (len(validation["finalists"]) * validation["repeats"] * len(validation["tasks"])) if validation else 0
    return {"run": run.name, "wall_s": round(status["updated"] - created, 1), "state": status["state"],
            **_candidate_runs(run), "llm_usage": status.get("usage"), "hpo": _hpo(run, train_tasks),
            "final_choice_runs": final_runs,
            "final_choice": validation and {k: validation[k] for k in ("tasks", "repeats", "winner", "finalists")},
            "sealed_test": test and {k: test.get(k) for k in ("candidate", "tasks", "repeats", "opened", "score",
                                                              "se_families", "per_task")}}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: campaign_record.py RUN_DIR OUT.json", file=sys.stderr)
        return 2
    Path(argv[1]).write_text(json.dumps(record(Path(argv[0])), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
