"""What every results fragment uses: a benchmark JSON by its path, P as the tables show it, the source line
under a table, a `tunesmith bench --json` table and grouped bar charts."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def load(rel: str) -> dict:
    """One benchmark JSON, by its path in the repository."""
    return json.loads((ROOT / rel).read_text(encoding="utf-8"))


def p(x) -> str:
    """A score P as the tables show it."""
    return "—" if x is None else f"{x:.3f}"


def short(task: str) -> str:
    """A task name short enough for a table header (the hub's apps carry a `_milo` suffix)."""
    return task.replace("_milo", "")


def source(rel: str, command: str, data: dict) -> str:
    """The line under a table: which file, which command, which machine and date."""
    machine = data.get("machine") or (f"{data['cores']} cores" if "cores" in data else "machine not recorded")
    return f"Source: `{rel}`, written by `{command}`; {machine}; {data.get('date', 'date not recorded')}."


def bench_table(rel: str, command: str) -> str:
    """A `tunesmith bench --se --json` result: P ± standard error per task and the mean."""
    d = load(rel)
    results = d["results"]
    tasks = list(next(iter(results.values()))["per_task"])
    out = [
        "| strategy | " + " | ".join(short(t) for t in tasks) + " | mean |",
        "| --- | " + " | ".join("---:" for _ in tasks) + " | ---: |",
    ]

    def cell(x):
        if x.get("score") is None:
            return "failed"
        return f"{x['score']:.3f} ± {x['se']:.3f}" if x.get("se") is not None else p(x["score"])

    for name, r in results.items():
        label = Path(name).stem if name.endswith(".py") else name
        out.append(f"| {label} | " + " | ".join(cell(r["per_task"][t]) for t in tasks) + f" | {cell(r)} |")
    out += ["", source(rel, command, d), ""]
    return "\n".join(out)


def bar_chart(rows: list[tuple[str, dict]], tasks: list[str], path: Path, title: str) -> Path:
    """Grouped bars: P per task, one colour per strategy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(9, 3.6), dpi=110)
    width = 0.8 / max(1, len(rows))
    x = np.arange(len(tasks))
    for i, (label, per_task) in enumerate(rows):
        ax.bar(x + i * width - 0.4 + width / 2, [per_task.get(t) or 0.0 for t in tasks], width, label=label)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks(x, [short(t) for t in tasks], fontsize=8, rotation=20, ha="right")
    ax.set_ylabel("score P (0 = random search, 1 = optimum)")
    ax.set_ylim(max(-1.0, ax.get_ylim()[0]), 1.05)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=1, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
