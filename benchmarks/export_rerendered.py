"""Ship a variant measured by a variants benchmark (bench_switch_pool.py and its kind) as a Kernel Tuner module.

    python -m benchmarks.export_rerendered --bench benchmarks/results/switch_pool.json --variant "pool 8" \
        --base generated_algorithms/archive/lcb_threshold_switching.py --name lcb_threshold_switching_pool8 [--force] \
        [--why "what else changed"]

A variant is a shipped winner's composition (its marker line) rendered by the synthesizer as it is now,
with some defaults replaced. It was never a campaign candidate, so `tunesmith export` cannot write it; this
writes the same module and report with what is true of it: the base's campaign and candidate, the words
"re-rendered", and the benchmark's scores split into the base's training and validation spaces (its
repeats and seed, not the campaign's). Nothing is tuned.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from generator.export.exporter import write_module, write_report
from generator.export.module_text import Provenance, module_source
from generator.export.upstream import read_exported
from generator.llm.synth.compose import Composition, read_composition, render


def split_scores(per_task: dict, base_scores: dict, repeats: int) -> dict:
    """Mean P ± SE (the tasks' SEs combined) over the base's training and validation tasks the bench ran."""
    scores = {}
    for split in ("train", "validation"):
        tasks = [t for t in base_scores.get(split, {}).get("tasks", []) if t in per_task]
        if tasks:
            mean = sum(per_task[t]["P"] for t in tasks) / len(tasks)
            se = math.sqrt(sum(per_task[t]["se"] ** 2 for t in tasks)) / len(tasks)
            scores[split] = {"tasks": tasks, "before": mean, "after": None, "se_before": se, "runs": repeats}
    return scores


def differences(changed: dict, why: str) -> str:
    """How the variant differs from the base, as the note says it: the defaults it changed, and `why`."""
    parts = ([f"with {json.dumps(changed)}"] if changed else []) + ([why] if why else [])
    return " " + "; ".join(parts) if parts else ""


def subject(base: dict, path: Path) -> str:
    """What was re-rendered: the candidate's composition, or a base that is a re-render itself, with its own note
    (its changes are in its marker line, so `differences` does not see them)."""
    if base.get("note"):
        return f"`{path.stem}` ({base['note']})"
    return f"{base['candidate_id']}'s composition"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, required=True, help="a variants benchmark's JSON")
    ap.add_argument("--variant", required=True, help="its label, e.g. 'pool 8'")
    ap.add_argument("--base", type=Path, required=True, help="the shipped module the variants came from")
    ap.add_argument("--name", required=True, help="module name: writes generated_algorithms/NAME.py")
    ap.add_argument("--force", action="store_true", help="replace an existing module of that name")
    ap.add_argument(
        "--why",
        default="",
        help="what else differs from the base: a change to the synthesizer's "
        "components since the base was rendered, say",
    )
    args = ap.parse_args(argv)
    bench = json.loads(args.bench.read_text())
    if args.variant not in bench["compositions"]:
        sys.exit(
            f"export_rerendered: no variant {args.variant!r} in {args.bench}; it has {list(bench['compositions'])}"
        )
    comp = Composition.from_dict(bench["compositions"][args.variant])
    _, _, source = render(comp)
    base = read_exported(args.base).provenance  # read as text, as `tunesmith upstream` does
    before = read_composition(args.base.read_text()).hp
    changed = {k: v for k, v in sorted(comp.hp.items()) if before.get(k) != v}
    prov = Provenance(
        base["campaign"],
        base["candidate_id"],
        base["ancestors"],
        base["generator"],
        base["run_dir"],
        base["description"],
        split_scores(bench["results"][args.variant]["per_task"], base["scores"], bench["repeats"]),
        note=f"not the campaign's code: {subject(base, args.base)} re-rendered by the synthesizer after the "
        f"campaign{differences(changed, args.why)}, variant {args.variant!r} of `{bench['command']}` "
        f"({bench['date']}); the scores are that benchmark's",
    )
    path = write_module(args.name, module_source(args.name, source, prov), overwrite=args.force)
    print(f"wrote {path}\nreport: {write_report(path, args.name, prov, {})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
