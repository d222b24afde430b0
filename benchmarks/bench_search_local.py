"""Diff edits and the model bandit with real local code models (issue 28, local-model measurements).

    python -m benchmarks.bench_search_local [--budget 10] [--arms full diff ensemble] [--seeds 1]
        [--big local/qwen2.5-coder-1.5b] [--small local/qwen2.5-coder-0.5b]
        [--out /tmp/bench-search-local] [--json benchmarks/results/search_local.json [--append]]

Each arm is a real campaign (`tunesmith run`, in a subprocess) on campaigns/local-llm.toml's tasks
(train gemm/H200 and hotspot/H200), same budget in candidates, 2 parents and 3 offspring per
generation, 3 repeats per evaluation, one run per seed ([llm] seed and [evolution] seed; the arms of
one seed start from the same generation 0, since a seeded local model answers the same prompt alike):

- full:     the big model, [evolution] edit = "full", refine-heavy operators (refine 0.6, fix 0.3, new 0.1)
- diff:     the same with edit = "diff"
- diff-example: as diff, the diff instruction with a worked example block
            (benchmarks/prompts_diff_example/edit_diff.j2 through [prompts] template_dir)
- ensemble: [[llm.models]] big (price 1) + small (price 0.6, its measured time per token relative to
            the big one's, benchmarks/results/local_llm_speed.json), [evolution.bandit] enabled, edit = "diff"

Everything is read back from the run's archive (candidates.jsonl and the recorded exchanges): the
completion tokens per refine (all exchanges of a refine candidate: the diff, its full-code fallback,
re-asks), what became of each diff request (blocks applied, blocks that did not apply and fell back
to full code, full code answered without blocks, no reply), the requests per model, the best P on
the training tasks, and the CPU seconds of the whole process tree (campaign, llama.cpp servers and
sandboxes: getrusage(RUSAGE_CHILDREN) around the subprocess, which reaps its children).
With --append the runs already in --json are kept (and not run again), so seeds can be added later.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from benchmarks._lib.paths import ROOT

BASE = ROOT / "campaigns" / "local-llm.toml"
REFINE_HEAVY = "[evolution.operators]\nnew = 0.1\nrefine = 0.6\nsimplify = 0.0\nfix = 0.3\n"
EXAMPLE_PROMPTS = ROOT / "benchmarks" / "prompts_diff_example"
ARMS = ("full", "diff", "diff-example", "ensemble")
SMALL_PRICE = 0.6  # 0.5B time per token / 1.5B's: generation 16.9 vs 28.7 tok/s, prompt 39 vs 63 tok/s


def arm_config(arm: str, big: str, small: str, repeats: int, seed: int = 1) -> str:
    """campaigns/local-llm.toml with the arm's model(s), edit mode, operators and smaller generations."""
    text = BASE.read_text()
    text = re.sub(r"^model\s*=.*$", f'model = "{big}"', text, count=1, flags=re.M)
    text = re.sub(r"^seed\s*=.*$", f"seed = {seed}", text, flags=re.M)  # [llm] seed and [evolution] seed
    text = re.sub(r"^n_parents\s*=.*$", "n_parents = 2", text, count=1, flags=re.M)
    text = re.sub(r"^n_offspring\s*=.*$", "n_offspring = 3", text, count=1, flags=re.M)
    text = re.sub(r"^repeats\s*=.*$", f"repeats = {repeats}", text, count=1, flags=re.M)
    text = re.sub(r"^\[evolution\.operators\]\n(.*\n)*?\n", REFINE_HEAVY + "\n", text, count=1, flags=re.M)
    edit = "full" if arm == "full" else "diff"
    text = re.sub(r"^\[evolution\]\s*$", f'[evolution]\nedit = "{edit}"', text, count=1, flags=re.M)
    if arm == "diff-example":
        text = re.sub(
            r"^\[prompts\]\s*$",
            f'[prompts]\ntemplate_dir = "{EXAMPLE_PROMPTS.relative_to(ROOT)}"',
            text,
            count=1,
            flags=re.M,
        )
    if arm == "ensemble":
        text += (
            f'\n[[llm.models]]\nmodel = "{big}"\nweight = 1.0\nprice = 1.0\n'
            f'\n[[llm.models]]\nmodel = "{small}"\nweight = 1.0\nprice = {SMALL_PRICE}\n'
            "\n[evolution.bandit]\nenabled = true\n"
        )
    return text


def mean_se(values: list[float]) -> dict:
    """Mean, standard error and count (None where undefined)."""
    from generator.scoring.repeats import standard_error

    se = standard_error(values)
    return {
        "mean": round(statistics.fmean(values), 4) if values else None,
        "se": round(se, 4) if se is not None else None,
        "n": len(values),
    }


def diff_outcomes(cands, exchanges) -> dict:
    """What became of each diff request: applied, blocks that did not apply or a piece of the class without
    blocks (both asked again for full code), full code without blocks, no reply."""
    from generator.llm.edits import ASKED_AGAIN, edit_outcome

    asked = [c for c in cands if c.edit]
    names = {
        "applied": "applied",
        "blocks_not_applied": "fell_back_to_full",
        "piece_of_class": "piece_fell_back_to_full",
        "full_code": "full_code_without_blocks",
    }
    out = Counter()
    for c in asked:
        outcome = edit_outcome(c.edit)
        out[names[outcome]] += 1
        if outcome == "applied":
            out["applied_then_failed"] += bool(c.error)
        elif outcome in ASKED_AGAIN:
            out["fallback_then_failed"] += bool(c.error)
    # a diff request whose reply never came leaves no edit record on its candidate
    diff_ops = {"refine", "simplify", "fix"}
    out["no_reply"] = sum(
        1 for c in cands if c.operator in diff_ops and not c.edit and c.parent_ids and not c.exchange_id
    )
    out["asked"] = len(asked)
    reasons = [c.edit.get("reason") for c in asked if c.edit.get("reason")]
    return {**dict(out), "reasons": reasons}


def measure(run_dir: Path) -> dict:
    """Per-arm numbers read back from the run's archive."""
    from generator.archive import Archive

    archive = Archive.open(run_dir)
    cands = archive.candidates()
    exchanges = archive.exchanges()
    by_cand: dict[str, list] = {}
    for x in exchanges:
        if x.ref:
            by_cand.setdefault(x.ref.split(":")[0], []).append(x)
    refine = [c for c in cands if c.operator == "refine"]
    per_refine = [sum(x.completion_tokens or 0 for x in by_cand.get(c.id, [])) for c in refine]
    diff_replies = [
        x.completion_tokens
        for c in refine
        for x in by_cand.get(c.id, [])
        if (c.edit or {}).get("mode") == "diff" and not x.ref.endswith((":full", ":reask"))
    ]
    models = Counter(x.model for x in exchanges)
    best = archive.best(1)
    return {
        "candidates": len(cands),
        "refine_tokens_each": per_refine,
        "failed": sum(1 for c in cands if c.error),
        "duplicates": sum(1 for c in cands if c.duplicate_of),
        "operators": dict(Counter(c.operator for c in cands)),
        "refine_completion_tokens": mean_se(per_refine),
        "refine_first_reply_tokens": mean_se(diff_replies) if diff_replies else None,
        "diffs": diff_outcomes(cands, exchanges),
        "requests_per_model": dict(models),
        "candidates_per_model": dict(Counter(c.model or "[llm] model" for c in cands)),
        "completion_tokens": sum(x.completion_tokens or 0 for x in exchanges),
        "prompt_tokens": sum(x.prompt_tokens or 0 for x in exchanges),
        "best_p": round(best[0].score, 4) if best else None,
        "best": best[0].id if best else None,
        "best_so_far": best_so_far(cands),
    }


def best_so_far(cands) -> list:
    """The best training P after each candidate, in generation order (None until one works)."""
    best, out = None, []
    for c in cands:
        if c.ok and not c.duplicate_of:
            best = c.score if best is None else max(best, c.score)
        out.append(None if best is None else round(best, 4))
    return out


def run_arm(arm: str, seed: int, args, out: Path) -> dict:
    """One campaign in a subprocess; CPU seconds of its whole process tree and wall seconds."""
    cfg = out / f"{arm}-{seed}.toml"
    cfg.write_text(arm_config(arm, args.big, args.small, args.repeats, seed))
    run_dir = out / f"{arm}-{seed}"
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()  # the loop's code this run measured
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    cmd = [
        sys.executable,
        "-m",
        "generator.cli",
        "run",
        str(cfg),
        "--run-dir",
        str(run_dir),
        "--budget",
        str(args.budget),
        "--no-progress",
    ]
    with open(out / f"{arm}-{seed}.log", "w") as log:
        rc = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    row = {
        "arm": arm,
        "seed": seed,
        "commit": commit,
        "rc": rc,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        **measure(run_dir),
    }
    # a rate only for P > 0: P = 0 is the random-search baseline, and a negative P per hour means nothing
    row["best_p_per_cpu_hour"] = round(row["best_p"] / (cpu / 3600), 3) if (row["best_p"] or 0) > 0 and cpu else None
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def model_hashes(models: list[str]) -> dict:
    pins = json.loads((ROOT / "generator" / "llm" / "local_models.json").read_text())
    return {m: pins[m]["gguf"]["sha256"] for m in models if m in pins}


def summary(rows: list[dict]) -> dict:
    """Per arm over its seeds: refine tokens pooled over all refines, diff outcomes and requests summed,
    best P as mean and SE over seeds, CPU seconds summed, best P per CPU hour over the pooled CPU time
    (none where a run found no working candidate or the mean P is not above random search's 0)."""
    out = {}
    for arm in dict.fromkeys(r["arm"] for r in rows):
        runs = [r for r in rows if r["arm"] == arm]
        diffs, models = Counter(), Counter()
        for r in runs:
            diffs.update({k: v for k, v in r["diffs"].items() if isinstance(v, int)})
            models.update(r["requests_per_model"])
        best = [r["best_p"] for r in runs if r["best_p"] is not None]
        cpu = sum(r["cpu_s"] for r in runs)
        out[arm] = {
            "seeds": [r["seed"] for r in runs],
            "refine_completion_tokens": mean_se([t for r in runs for t in r["refine_tokens_each"]]),
            "diffs": dict(diffs),
            "requests_per_model": dict(models),
            "best_p": mean_se(best) if best else None,
            "runs_without_working_candidate": len(runs) - len(best),
            "cpu_s": round(cpu, 1),
            "wall_s": round(sum(r["wall_s"] for r in runs), 1),
            "best_p_per_cpu_hour": round(statistics.fmean(best) / (cpu / len(runs) / 3600), 3)
            if best and len(best) == len(runs) and statistics.fmean(best) > 0
            else None,
        }
    return out


def _num(x, digits: int) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _none_working(arm: dict) -> str:
    n = arm["runs_without_working_candidate"]
    return f" (and {n} run{'s' if n > 1 else ''} with no working candidate)" if n else ""


def table(summ: dict) -> str:
    """The per-arm summary as a Markdown table (what docs/explanation/search.md shows)."""
    lines = [
        "| arm | seeds | completion tokens per refine (mean ± SE, n) | diff requests: applied / blocks not applied "
        "/ piece of class / full code | requests per model | best P (mean ± SE) | CPU s | best P per CPU hour |",
        "| --- | --- | --- | --- | --- | --- | ---: | ---: |",
    ]
    for arm, r in summ.items():
        t, d, p = r["refine_completion_tokens"], r["diffs"], r["best_p"] or {}
        diffs = (
            (
                f"{d.get('applied', 0)} / {d.get('fell_back_to_full', 0)} / {d.get('piece_fell_back_to_full', 0)} / "
                f"{d.get('full_code_without_blocks', 0)} of {d['asked']}"
            )
            if d.get("asked")
            else "-"
        )
        models = ", ".join(f"{m.split('/')[-1]}: {n}" for m, n in r["requests_per_model"].items())
        lines.append(
            f"| {arm} | {', '.join(map(str, r['seeds']))} | {_num(t['mean'], 0)} ± {_num(t['se'], 0)} ({t['n']}) "
            f"| {diffs} | {models} | {_num(p.get('mean'), 3)} ± {_num(p.get('se'), 3)}{_none_working(r)} | {r['cpu_s']:.0f} "
            f"| {_num(r['best_p_per_cpu_hour'], 2)} |"
        )
    return "\n".join(lines)


def write_json(path: Path, args, commands: list[str], dates: list[str], rows: list[dict]) -> None:
    doc = {
        "commands": commands,
        "dates": dates,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs (shared)",
        "load_1min_at_end": round(os.getloadavg()[0], 2),
        "budget": args.budget,
        "repeats": args.repeats,
        "base_config": "campaigns/local-llm.toml",
        "operators": REFINE_HEAVY.split("\n", 1)[1].strip(),
        "small_price": SMALL_PRICE,
        "models_sha256": model_hashes([args.big, args.small]),
        "summary": summary(rows),
        "runs": rows,
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--arms", nargs="+", default=["full", "diff", "ensemble"], choices=ARMS)
    ap.add_argument("--big", default="local/qwen2.5-coder-1.5b")
    ap.add_argument("--small", default="local/qwen2.5-coder-0.5b")
    ap.add_argument("--out", default="/tmp/bench-search-local")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--json", default=None)
    ap.add_argument("--append", action="store_true", help="keep the runs already in --json and add to them")
    args = ap.parse_args(argv)
    command = "python " + " ".join([Path(sys.argv[0]).as_posix(), *(argv or sys.argv[1:])])
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    old = json.loads(Path(args.json).read_text()) if args.append and args.json and Path(args.json).exists() else {}
    rows, commands, dates = old.get("runs", []), old.get("commands", []) + [command], old.get("dates", []) + [started]
    done = {(r["arm"], r["seed"]) for r in rows}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        for arm in args.arms:
            if (arm, seed) in done:
                continue
            rows.append(run_arm(arm, seed, args, out))
            if args.json:  # after every run, so a benchmark cut short keeps what it measured
                write_json(Path(args.json), args, commands, dates, rows)
    print(table(summary(rows)))
    return 0 if all(r["rc"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
