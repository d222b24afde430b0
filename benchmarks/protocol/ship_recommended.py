"""Ship the generalisation protocol's pick as generated_algorithms/recommended.py and in Kernel Tuner's format.

    python -m benchmarks.protocol.ship_recommended --crossval benchmarks/results/protocol/crossval.json [--force]

The pick is the winner of `tunesmith crossval` (the best family-weighted P over the training and validation
families; benchmarks/protocol/families.toml seals the test families). A winner named with options
(`generated_algorithms/x.py:patience=30:...`) is the shipped module x with those values as its defaults:
the same code that was benched, not a re-render. The module's provenance keeps x's campaign and candidate and
says how it was chosen, with the protocol's numbers. The Kernel Tuner format file is written beside the
other one, generated_algorithms/kernel_tuner/gen_recommended.py.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import textwrap
from pathlib import Path

from benchmarks._lib.paths import ROOT
from generator.bench.runner import parse_strategy
from generator.export.exporter import write_module, write_report
from generator.export.module_text import Provenance, module_source
from generator.export.upstream import read_exported, upstream_source


def parse_label(label: str) -> tuple[Path, dict]:
    """`path.py:key=value:...` -> (path, {key: value}), as `tunesmith bench` read it."""
    spec = parse_strategy(str(ROOT / label))
    return Path(spec.target), dict(spec.options)


def about_of(path: Path) -> str:
    """The 'About the algorithm' part of an exported module's docstring (its generator's explanation)."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    _, _, about = doc.partition("About the algorithm (from its generator):")
    return textwrap.dedent(about).strip()


def provenance(base: dict, cv: dict, label: str, values: dict) -> Provenance:
    winner = next(s for s in cv["strategies"] if s["label"] == label)
    est = cv["selection_estimate"]
    changed = f" with the defaults {json.dumps(values)}" if values else ""
    note = (
        f"not a campaign's choice: `{Path(label.split(':')[0]).stem}`{changed}, picked from "
        f"{len(cv['strategies'])} strategies by the generalisation protocol (docs/explanation/generalisation.md): "
        f"cross-validation over {len(cv['families'])} kernel families, test families {cv['sealed']} sealed; "
        f"family-weighted P {winner['mean']:.3f} ± {winner['se_kernels']:.3f}; a pick made without the family "
        f"it is scored on gets {est['mean']:.3f} ± {est['se']:.3f} (benchmarks/results/protocol/)"
    )
    scores = {
        "crossval": {
            "families": list(cv["families"]),
            "mean": winner["mean"],
            "se_kernels": winner["se_kernels"],
            "per_family": winner["per_family"],
            "selection_estimate": est,
        }
    }
    return Provenance(
        base["campaign"],
        base["candidate_id"],
        base["ancestors"],
        base["generator"],
        base["run_dir"],
        base["description"],
        scores,
        note=note,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--crossval", type=Path, required=True, help="`tunesmith crossval --json` output")
    ap.add_argument("--name", default="recommended", help="module name (default recommended)")
    ap.add_argument("--force", action="store_true", help="replace an existing module of that name")
    args = ap.parse_args(argv)
    cv = json.loads(args.crossval.read_text())
    label = cv["winner"]
    path, values = parse_label(label)
    base = read_exported(path)
    source = f'"""{about_of(path)}\n"""\n\n{base.code}\n'
    prov = provenance(base.provenance, cv, label, values)
    out = write_module(args.name, module_source(args.name, source, prov, values), overwrite=args.force)
    print(f"wrote {out}\nreport: {write_report(out, args.name, prov, values)}")
    upstream = ROOT / "generated_algorithms" / "kernel_tuner" / f"gen_{args.name}.py"
    upstream.parent.mkdir(exist_ok=True)
    upstream.write_text(upstream_source(out))
    print(f"wrote {upstream} (Kernel Tuner's strategy format)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
