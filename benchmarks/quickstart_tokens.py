"""Tokens a campaign spent, from its run directory, for the hosted-LLM cost estimate in the docs.

    python -m benchmarks.quickstart_tokens RUN_DIR [--command "how RUN_DIR was made"]
        [--json benchmarks/results/quickstart_tokens.json]

Sums every recorded LLM exchange (prompt and completion tokens, by operator) and counts the candidates.
The offline synthesizer reports approximate tokens (4 characters a token) for its prompts and replies:
the prompts are the ones a hosted LLM would get; its replies stand in for an LLM's code.
docs/_ext/tunesmith_docs.py prices the totals with litellm's price table at build time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir")
    p.add_argument("--command", default="tunesmith run campaigns/quickstart.toml")
    p.add_argument("--json", default="benchmarks/results/quickstart_tokens.json")
    args = p.parse_args(argv)

    from generator.archive import Archive

    archive = Archive.open(args.run_dir)
    exchanges = archive.exchanges()
    by_purpose: dict = defaultdict(lambda: {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
    for x in exchanges:
        row = by_purpose[x.purpose]
        row["calls"] += 1
        row["prompt_tokens"] += x.prompt_tokens
        row["completion_tokens"] += x.completion_tokens
    models = sorted({x.model for x in exchanges})
    out = {
        "command": args.command,
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
        "model": ", ".join(models),
        "candidates": len(archive.candidates()),
        "calls": len(exchanges),
        "prompt_tokens": sum(x.prompt_tokens for x in exchanges),
        "completion_tokens": sum(x.completion_tokens for x in exchanges),
        "by_purpose": dict(sorted(by_purpose.items())),
    }
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "by_purpose"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
