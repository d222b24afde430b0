"""The report's figures as PNG files for papers (matplotlib, Agg; no pyplot state, no display needed)."""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from generator.review.lineage import Lineage

DPI = 150
OK_COLOUR, BEST_COLOUR, FAIL_COLOUR = "#4c72b0", "#dd8452", "#c44e52"
DUPLICATE_COLOUR = "#999999"  # grey: a copy, neither a success nor a failure


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    return path


def _count(value: float, _pos=None) -> str:
    """A token count as read aloud: 250k, 1.25M (matplotlib's '1e6' offset lands on the axis label)."""
    for size, unit in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.4g}{unit}"
    return f"{value:.4g}"


TOKEN_FORMAT = FuncFormatter(_count)


def writer(lineage: Lineage) -> str:
    """Who wrote the candidates, for axis labels: the offline synthesizer answers through the LLM path but is no LLM."""
    model = lineage.archive.stored.model
    return "synthesizer (no LLM)" if model.startswith("synth/") else "LLM"


def convergence(lineage: Lineage, path: Path) -> Path | None:
    """Best score so far over candidates and over LLM cost (tokens when no cost was recorded)."""
    points = lineage.convergence()
    if not any(p.score is not None for p in points):
        return None
    fig = Figure(figsize=(9, 3.4))
    ax1, ax2 = fig.subplots(1, 2, sharey=True)
    ok = [p for p in points if p.score is not None]
    ax1.scatter([p.index for p in ok], [p.score for p in ok], s=12, color=OK_COLOUR, alpha=0.6, label="candidate")
    failed = [p.index for p in points if p.score is None]
    if failed:
        low, high = min(p.score for p in ok), max(p.score for p in ok)
        floor = low - 0.08 * ((high - low) or 1.0)  # failed candidates sit just below the worst score
        ax1.scatter(failed, [floor] * len(failed), marker="x", s=14, color=FAIL_COLOUR, label="failed")
    best = [p for p in points if p.best is not None]
    ax1.step(
        [p.index for p in best], [p.best for p in best], where="post", color=BEST_COLOUR, lw=2, label="best so far"
    )
    ax1.set_xlabel("candidate (generation order)")
    ax1.set_ylabel("score P (0 = random search, 1 = optimum)")
    ax1.legend(loc="best", fontsize=8)
    by_cost = any(p.cost_usd > 0 for p in points)
    xs = [p.cost_usd if by_cost else p.tokens for p in best]
    ax2.step(xs, [p.best for p in best], where="post", color=BEST_COLOUR, lw=2)
    ax2.set_xlabel(
        f"{writer(lineage)} cost so far (USD)" if by_cost else f"{writer(lineage)} tokens so far (no cost recorded)"
    )
    if not by_cost:
        ax2.xaxis.set_major_formatter(TOKEN_FORMAT)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    fig.suptitle("Convergence of the best score")
    return _save(fig, path)


def heatmap(names: list[str], tasks: list[str], matrix: list[list[float | None]], path: Path) -> Path | None:
    """Per-task scores of the top candidates (rows) on each training task (columns)."""
    if not names or not tasks:
        return None
    import numpy as np

    values = np.array([[np.nan if v is None else v for v in row] for row in matrix], dtype=float)
    fig = Figure(figsize=(1.6 + 1.1 * len(tasks), 0.9 + 0.36 * len(names)))
    ax = fig.subplots()
    image = ax.imshow(values, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(tasks)), [t.replace("/", "\n") for t in tasks], fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    finite = values[np.isfinite(values)]
    middle = (finite.min() + finite.max()) / 2 if finite.size else 0.0
    for (i, j), v in np.ndenumerate(values):
        if np.isfinite(v):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7, color="white" if v < middle else "black")
    fig.colorbar(image, ax=ax, label="score P")
    ax.set_title("Per-task scores of the top candidates")
    return _save(fig, path)


def operator_shares(stats) -> dict[str, list[float]]:
    """The Operators chart's bars: per operator, the share of its candidates in each outcome."""
    return {
        "evaluated without error": [s.succeeded / s.candidates for s in stats],
        "duplicate, not evaluated": [s.duplicates / s.candidates for s in stats],
        "improved on its parent": [s.improved / s.with_parent if s.with_parent else 0.0 for s in stats],
    }


def operators(lineage: Lineage, path: Path) -> Path | None:
    """Per operator: share of children that worked and share that beat their parents."""
    stats = lineage.operator_stats()
    if not stats:
        return None
    import numpy as np

    fig = Figure(figsize=(6, 3.2))
    ax = fig.subplots()
    x = np.arange(len(stats))
    shares = operator_shares(stats)
    for i, ((label, values), colour) in enumerate(zip(shares.items(), (OK_COLOUR, DUPLICATE_COLOUR, BEST_COLOUR))):
        ax.bar(x + (i - 1) * 0.27, values, 0.27, label=label, color=colour)
    ax.set_xticks(x, [f"{s.operator}\n(n={s.candidates})" for s in stats])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of the operator's candidates")
    ax.legend(fontsize=8)
    ax.set_title("Operators")
    return _save(fig, path)


def errors(lineage: Lineage, path: Path) -> Path | None:
    """Candidates per generation, stacked by outcome: worked, a copy of another (not run), or the kind of error."""
    by_gen = lineage.error_kinds()
    if not by_gen:
        return None
    gens = list(by_gen)
    totals = {g: 0 for g in gens}
    for c in lineage.candidates.values():
        totals[c.generation] += 1
    kinds = sorted({k for counter in by_gen.values() for k in counter})
    fig = Figure(figsize=(6, 3.2))
    ax = fig.subplots()
    copies = {g: 0 for g in gens}  # recorded, never run: neither worked nor failed
    for c in lineage.candidates.values():
        copies[c.generation] += bool(c.duplicate_of and not c.error)
    bottom = [totals[g] - sum(by_gen[g].values()) - copies[g] for g in gens]
    ax.bar(gens, bottom, color="#cccccc", label="worked")
    if any(copies.values()):
        some = [i for i, g in enumerate(gens) if copies[g]]  # a bar of height 0 would still draw its edge
        ax.bar(
            [gens[i] for i in some],
            [copies[gens[i]] for i in some],
            bottom=[bottom[i] for i in some],
            color="white",
            edgecolor=DUPLICATE_COLOUR,
            hatch="//",
            label="copy (not run)",
        )
        bottom = [b + copies[g] for b, g in zip(bottom, gens)]
    palette = ["#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd", "#55a868"]
    for i, kind in enumerate(kinds):
        counts = [by_gen[g].get(kind, 0) for g in gens]
        ax.bar(gens, counts, bottom=bottom, color=palette[i % len(palette)], label=kind)
        bottom = [b + c for b, c in zip(bottom, counts)]
    ax.set_xlabel("generation")
    ax.set_ylabel("candidates")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8, ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.2))  # below: the bars fill the axes
    ax.set_title("Error kinds over generations")
    return _save(fig, path)


def usage(lineage: Lineage, path: Path) -> Path | None:
    """Cumulative tokens (prompt, completion) and cost over the LLM calls."""
    xs = lineage.exchanges
    if not xs:
        return None
    import numpy as np

    calls = np.arange(1, len(xs) + 1)
    fig = Figure(figsize=(6, 3.2))
    ax = fig.subplots()
    ax.plot(calls, np.cumsum([x.prompt_tokens for x in xs]), label="prompt tokens", color=OK_COLOUR)
    ax.plot(calls, np.cumsum([x.completion_tokens for x in xs]), label="completion tokens", color="#55a868")
    ax.set_xlabel(f"{writer(lineage)} call")
    ax.set_ylabel("tokens so far")
    ax.yaxis.set_major_formatter(TOKEN_FORMAT)
    ax.legend(fontsize=8, loc="upper left")
    cost = np.cumsum([x.cost_usd for x in xs])
    if cost[-1] > 0:
        twin = ax.twinx()
        twin.plot(calls, cost, color=BEST_COLOUR, ls="--", label="cost (USD)")
        twin.set_ylabel("USD so far")
        twin.legend(fontsize=8, loc="lower right")
    ax.set_title("Tokens and cost")
    return _save(fig, path)


def diversity(rows: list[dict], path: Path) -> Path | None:
    """Per generation: the archive's diversity and the novelty of its new code; copies and re-asks."""
    if not any(r["diversity"] is not None for r in rows):
        return None
    gens = [r["generation"] for r in rows]
    fig = Figure(figsize=(6, 3.2))
    ax = fig.subplots()
    ax.plot(gens, [r["diversity"] for r in rows], marker="o", color=OK_COLOUR, label="archive diversity")
    ax.plot(gens, [r["novelty"] for r in rows], marker="s", color=BEST_COLOUR, label="novelty of new code")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("generation")
    ax.set_ylabel("distance (1 - similarity)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    counts = ax.twinx()
    counts.bar(
        [g - 0.15 for g in gens], [r["duplicates"] for r in rows], 0.3, color="#cccccc", label="copies (not evaluated)"
    )
    counts.bar([g + 0.15 for g in gens], [r["reasked"] for r in rows], 0.3, color="#8172b3", label="asked again")
    counts.set_ylabel("candidates")
    counts.yaxis.set_major_locator(MaxNLocator(integer=True))
    counts.set_zorder(ax.get_zorder() - 1)
    ax.patch.set_visible(False)
    lines, labels = ax.get_legend_handles_labels()
    bars, names = counts.get_legend_handles_labels()
    ax.legend(
        lines + bars,
        labels + names,
        fontsize=7,
        ncols=2,
        loc="upper center",  # below: inside it hid bars
        bbox_to_anchor=(0.5, -0.2),
    )
    ax.set_title("Diversity of the archive's code")
    return _save(fig, path)
