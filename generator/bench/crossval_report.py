"""`tunesmith crossval`: the protocol's table from bench results, with the portfolio rule where tasks are given."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from generator.bench.crossval import cross_validate, load_tables, markdown, sealed_families
from generator.errors import TunesmithError


def crossval_report(
    results: list[str],
    protocol: str | None = None,
    task_entries: list[str] = (),
    members: str | None = None,
    json_out: str | None = None,
    md_out: str | None = None,
    drop: list[str] = (),
) -> str:
    """Cross-validate the strategies of bench result files; returns the Markdown and writes JSON/Markdown.
    `drop` leaves rows out: one optimizer benched under two labels must be one row, or the selection
    estimate counts it twice and the noisier copy wins folds on its luck."""
    table = load_tables(results)
    if drop:
        _check_known(table, drop)
        table = table.only([s for s in table.strategies if s not in drop])
    sealed = sealed_families(protocol)
    cv = cross_validate(table, sealed)
    doc = {
        "results": [str(r) for r in results],
        "inputs": [_input_meta(r) for r in results],
        "protocol": protocol,
        "dropped": list(drop),
        "date": time.strftime("%Y-%m-%d"),
        **cv.to_dict(),
    }
    text = markdown(cv)
    if task_entries:
        portfolio = _portfolio(table.without(sealed), task_entries, members)
        doc["portfolio"] = portfolio.to_dict()
        text += "\n\n" + portfolio_markdown(portfolio)
    for path, content in ((json_out, json.dumps(doc, indent=1) + "\n"), (md_out, text + "\n")):
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(content)
    return text


def _check_known(table, labels: list[str]) -> None:
    """Each label names a row of the table (a mistyped --drop would silently keep the row)."""
    unknown = [label for label in labels if label not in table.strategies]
    if unknown:
        raise TunesmithError(
            f"crossval: --drop {unknown[0]}: no such strategy in the results; "
            "give a label as the table prints it in full (see the JSON's strategies)"
        )


def _input_meta(path) -> dict:
    """What a bench result file says of how it was made (repeats, seed, tasks, date)."""
    doc = json.loads(Path(path).read_text())
    return {
        "file": str(path),
        **{k: doc[k] for k in ("repeats", "seed", "date", "complete") if k in doc},
        "strategies": len(doc.get("results", {})),
        "tasks": len(doc.get("tasks", [])),
    }


def _portfolio(table, task_entries, members):
    from generator.bench.portfolio import SpaceFeatures, nested_estimate
    from generator.tasks.entries import load_tasks

    names = set(table.tasks)
    feats = {t.name: SpaceFeatures.of_task(t) for t in load_tasks(task_entries) if t.name in names}
    missing = sorted(names - set(feats))
    if missing:
        raise TunesmithError(f"crossval: --tasks does not hold {', '.join(missing[:4])}; give the folders bench read")
    chosen = (
        [m.strip() for m in members.split(",")]
        if members
        else [s for s in table.strategies if s.split(":")[0].endswith(".py")]
    )
    if len(chosen) < 1:
        raise TunesmithError("crossval: no portfolio members; name them with --members")
    return nested_estimate(table, feats, chosen)


def _names(text: str) -> str:
    """Strategy files by their module names: `generated_algorithms/archive/x.py` -> `x`."""
    return re.sub(r"[\w./-]*/(\w+)\.py", r"\1", text)


def portfolio_markdown(p) -> str:
    """The portfolio's rule and its nested estimate against the single best member's."""
    e = p.estimates()
    lines = [
        f"Portfolio rule learned on every family: {_names(p.rule.describe())}.",
        f"Nested estimate (rule learned without the family it is scored on): portfolio {e['portfolio']:.3f} ± "
        f"{e['portfolio_se']:.3f}, single best member {e['single']:.3f} ± {e['single_se']:.3f}, difference "
        f"{e['difference']:+.3f} ± {e['difference_se']:.3f}.",
        "",
        "| left-out family | rule learned without it | portfolio P | single best without it | its P |",
        "| --- | --- | ---: | --- | ---: |",
    ]
    for f in p.folds:
        lines.append(f"| {f.family} | {_names(f.rule)} | {f.portfolio_p:.3f} | {_names(f.single)} | {f.single_p:.3f} |")
    return "\n".join(lines)
