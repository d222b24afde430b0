"""What a finished campaign cost and chose, from its run directory, as JSON (issue 38, item 5).

Usage: python3 -m benchmarks.protocol.campaign_record RUN_DIR OUT.json
Reads only the run's own records (run.json, status.json, candidates.jsonl, hpo/*.json, validation.json,
test.json): wall time from the run's creation to its last status, the candidates, the sandbox runs each stage
made (a run is one optimizer run on one task), HPO's time, the final choice and the one sealed look.
"""

import json
import sys
from dataclasses import asdict
from pathlib import Path

from generator.archive import Archive
from generator.campaign.final_choice import load_choice
from generator.campaign.sealed_test import load_test
from generator.tuning.results import load_results


def _candidate_runs(archive: Archive) -> dict:
    """Candidates, and the sandbox runs that scored them: each candidate's first runs (a near-copy is never run:
    it keeps its original's score), what racing added (races.jsonl: the repeats a race took a candidate to), and
    the seconds spent writing candidates and evaluating them (summed over workers that ran at once)."""
    rows = archive.candidates(raced=False)  # as first scored; racing's extensions are counted from races()
    ran = [c for c in rows if not c.duplicate_of and c.fitness]
    per_task = [v for c in ran for v in (c.fitness.get("per_task") or {}).values()]
    tasks = max((len(c.fitness.get("per_task") or {}) for c in ran), default=0)
    first_repeats = max((v.get("runs") or 0 for v in per_task), default=0)
    raced = {}
    for race in archive.races():
        raced[race["id"]] = max(raced.get(race["id"], 0), race["to"])
    timing = lambda key: round(sum(c.timings.get(key) or 0 for c in rows), 1)  # noqa: E731 - one sum, two keys
    return {
        "candidates": len(rows),
        "near_copies_not_run": len(rows) - len(ran),
        "first_runs": sum(v.get("runs") or 0 for v in per_task),
        "racing_runs": sum((to - first_repeats) * tasks for to in raced.values()),
        "write_s": timing("llm_s"),
        "evaluate_s": timing("eval_s"),
    }


def _hpo(run: Path, train_tasks: int) -> list[dict]:
    out = []
    for h in load_results(run).values():
        n = sum(h.trials.get(k, 0) for k in ("complete", "pruned", "failed"))
        out.append(
            {
                "candidate": h.candidate_id,
                "trials": h.trials,
                "trial_repeats": h.repeats,
                "report_repeats": h.report_repeats,
                "wall_s": h.wall_s,
                "accepted": h.accepted,
                "trial_runs_at_most": n * h.repeats * train_tasks,
                "report_runs": 2 * (h.report_repeats or 0) * len(h.train.tasks if h.train else []),
            }
        )
    return out


def record(run: Path) -> dict:
    archive = Archive.open(run)
    created = json.loads((run / "run.json").read_text())["created"]
    status = archive.status()
    choice, test = load_choice(run), load_test(run)
    final_runs = len(choice.finalists) * choice.repeats * len(choice.tasks) if choice else 0
    return {
        "run": run.name,
        "wall_s": round(status["updated"] - created, 1),
        "state": status["state"],
        **_candidate_runs(archive),
        "llm_usage": status.get("usage"),
        "hpo": _hpo(run, len(archive.config["tasks"]["train"])),
        "final_choice_runs": final_runs,
        "final_choice": choice and {k: choice.to_dict()[k] for k in ("tasks", "repeats", "winner", "finalists")},
        "sealed_test": test
        and {
            k: asdict(test)[k] for k in ("candidate", "tasks", "repeats", "opened", "score", "se_families", "per_task")
        },
    }


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: campaign_record.py RUN_DIR OUT.json", file=sys.stderr)
        return 2
    Path(argv[1]).write_text(json.dumps(record(Path(argv[0])), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
