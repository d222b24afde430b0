"""Run a set of campaign files over several seeds, one run directory each, ready for `tunesmith compare`.

    python -m generator.compare.seeds campaigns/compare/*.toml --seeds 1 2 3 --out results/compare
        [--budget N] [--model MODEL]

Each campaign file is copied per seed into OUT/campaigns/NAME-sSEED.toml with its `seed = ...`
lines ([llm] seed and [evolution] seed) set to the seed and, with --model, its [llm] model replaced;
the run goes to OUT/NAME-sSEED. A run directory that already holds a finished run is left as it is
and one that was stopped is continued, so the same command picks up where a stop left it.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from generator.archive import Archive
from generator.errors import TunesmithError


def seeded_copy(campaign: Path, seed: int, out: Path, model: str | None = None) -> Path:
    """The campaign file with every `seed = ...` line set to `seed` (and `model = ...` to `model`)."""
    text = campaign.read_text(encoding="utf-8")
    if not re.search(r"^seed\s*=", text, flags=re.M):
        raise TunesmithError(f"{campaign}: has no `seed = ...` line; add seed = 1 under [evolution] and [llm]")
    text = re.sub(r"^seed\s*=.*$", f"seed = {seed}", text, flags=re.M)
    if model:
        text = re.sub(r"^model\s*=.*$", f'model = "{model}"', text, count=1, flags=re.M)
    path = out / "campaigns" / f"{campaign.stem}-s{seed}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run_all(campaigns: list[Path], seeds: list[int], out: Path, budget: int | None, model: str | None) -> list[Path]:
    """Every campaign at every seed (finished runs skipped); returns the run directories."""
    from generator.campaign.run import run_campaign

    done = []
    for seed in seeds:  # seed-major: an early stop leaves every arm with the same seeds
        for campaign in campaigns:
            run_dir = out / f"{campaign.stem}-s{seed}"
            if Archive.exists(run_dir) and Archive.open(run_dir).status().get("state") == "finished":
                print(f"{run_dir}: finished earlier, kept", flush=True)
            else:
                config = seeded_copy(campaign, seed, out, model)
                summary = run_campaign(config, run_dir=str(run_dir), budget=budget, progress=False)
                print(f"{run_dir}: {summary.state}, {summary.candidates} candidates", flush=True)
            done.append(run_dir)
    return done


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m generator.compare.seeds", description=__doc__.splitlines()[0])
    p.add_argument("campaigns", nargs="+", type=Path, help="campaign files, one per arm")
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3], help="seeds (default 1 2 3)")
    p.add_argument("--out", type=Path, required=True, help="folder of the run directories")
    p.add_argument("--budget", type=int, help="candidates per run (default: each campaign's own)")
    p.add_argument("--model", help="replace each campaign's [llm] model, e.g. replay/tests/data/local_llm_run")
    args = p.parse_args(argv)
    try:
        runs = run_all(args.campaigns, args.seeds, args.out, args.budget, args.model)
    except TunesmithError as exc:
        print(f"tunesmith: error: {exc}", file=sys.stderr)
        return exc.exit_code
    print("compare them with: tunesmith compare " + " ".join(str(r) for r in runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
