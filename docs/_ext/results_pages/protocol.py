"""The generalisation protocol's page (issue 38): the cross-validated table, its folds and portfolio rule, and
the one look at the sealed test families."""

from __future__ import annotations

from .common import load, p

PROTOCOL = ("benchmarks/results/protocol/crossval.json", "bash benchmarks/protocol/table.sh")


def protocol_page(rel: str = PROTOCOL[0], command: str = PROTOCOL[1]) -> str:
    """The protocol's cross-validated table, folds and portfolio rule, from `tunesmith crossval --json`."""
    from generator.bench.crossval import CrossValidation, markdown
    from generator.bench.crossval_report import portfolio_markdown
    from generator.bench.portfolio import PortfolioCV

    d = load(rel)
    inputs = "; ".join(
        f"`{i['file']}` ({i.get('strategies')} strategies, {i.get('tasks')} tasks, {i.get('repeats')} "
        f"repeats, seed {i.get('seed')})"
        for i in d.get("inputs", [])
    )
    out = [markdown(CrossValidation.from_dict(d)), ""]
    if d.get("portfolio"):
        out += [portfolio_markdown(PortfolioCV.from_dict(d["portfolio"])), ""]
    out += [
        f"Source: `{rel}`, written by `{command}` on {d.get('date')}, from {inputs}.",
        "",
        "### The one look at the sealed test families",
        "",
        sealed_table(SEALED),
        "",
    ]
    return "\n".join(out)


SEALED = "benchmarks/results/protocol/sealed/sealed20.json"


def sealed_table(rel: str) -> str:
    """P ± SE per sealed space and its mean, for every strategy of the one look (benchmarks/results/protocol/sealed/)."""
    d = load(rel)
    tasks = d["tasks"]
    out = [
        "| strategy | mean P | ± SE | " + " | ".join(tasks) + " |",
        "| --- | ---: | ---: | " + "---: | " * len(tasks),
    ]
    for label, r in sorted(d["results"].items(), key=lambda kv: -(kv[1]["score"] or -9)):
        cells = [f"{r['per_task'][t]['score']:.3f} ± {r['per_task'][t]['se']:.3f}" for t in tasks]
        out.append(
            f"| {label.split('/')[-1].removesuffix('.py')} | {p(r['score'])} | {p(r['se'])} | "
            + " | ".join(cells)
            + " |"
        )
    out += [
        "",
        f"Source: `{rel}` ({d['repeats']} repeats, seed {d['seed']}); when and how it was opened: "
        "`benchmarks/results/protocol/sealed/LOOK.md`.",
        "",
    ]
    return "\n".join(out)
