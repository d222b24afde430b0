"""One self-contained HTML report of a run, plus its figures as PNG files in a folder beside it.

The page needs no network: styles, script, data and figures are inline. Everything an LLM (or the
synthesizer) wrote -- code, descriptions, prompts, replies -- travels as JSON inside a
`<script type="application/json">` block with `<`, `>` and `&` escaped, and the page's script puts
it on screen with `textContent` only. A Content-Security-Policy admits the one inline script by its
hash and nothing else, so even a mistake in that escaping could not run injected code or reach out.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from generator.export.output import check_output_file
from generator.review.lineage import Lineage

TEMPLATES = Path(__file__).with_name("templates")


def page_script(script: Path) -> str:
    """A page's script preceded by the DOM helpers it shares with the other page (templates/dom.js): the
    report's (report.js) and the live view's (generator/serve/templates/serve.js)."""
    return (TEMPLATES / "dom.js").read_text(encoding="utf-8") + "\n" + script.read_text(encoding="utf-8")


TOP_K = 12  # rows of the per-task heatmap
DX, DY, LEFT, TOP = 46, 74, 64, 28  # lineage graph geometry, pixels


@dataclass
class ReportResult:
    """Where the report and its figures were written."""

    html: Path
    pngs: list[Path] = field(default_factory=list)


def build_report(run_dir, output=None) -> ReportResult:
    """Write RUN_DIR's report (default RUN_DIR/report/report.html), its PNG figures in <name>_files/ beside it."""
    lineage = Lineage.load(run_dir)
    html = Path(output) if output else lineage.run_dir / "report" / "report.html"
    check_output_file(
        html,
        "give -o a file where you may write"
        if output
        # before any figure is drawn
        else f"write it elsewhere: tunesmith report {run_dir} -o PATH.html",
    )
    html.parent.mkdir(parents=True, exist_ok=True)
    data = report_data(lineage)
    pngs = _write_figures(lineage, data, html)
    html.write_text(render_html(data, {p.stem: p for p in pngs}), encoding="utf-8")
    return ReportResult(html, pngs)


def _write_figures(lineage: Lineage, data: dict, html: Path) -> list[Path]:
    from generator.review import plots as plots

    figures = html.with_name(f"{html.stem}_files")  # one folder beside the page, as browsers save pages
    figures.mkdir(exist_ok=True)

    def out(name: str) -> Path:
        return figures / f"{name}.png"

    top = data["top"]
    made = [
        plots.convergence(lineage, out("convergence")),
        plots.heatmap([r["id"] for r in top], data["tasks"], [r["scores"] for r in top], out("heatmap")),
        plots.operators(lineage, out("operators")),
        plots.errors(lineage, out("errors")),
        plots.usage(lineage, out("usage")),
        plots.diversity(data["diversity"], out("diversity")),
    ]
    return [p for p in made if p is not None]


# -- the data the page shows ---------------------------------------------------------------
def report_data(lineage: Lineage) -> dict:
    """Everything the page shows, as plain JSON-ready values."""
    status = lineage.status()
    best = lineage.best()
    path = lineage.best_path()
    nodes = [_node(lineage, cid, cid in path) for cid in lineage.candidates]
    tasks = list(dict.fromkeys(t for c in lineage.candidates.values() for t in c.per_task))
    exchanges = {
        x.id: {
            "model": x.model,
            "prompt": x.prompt,
            "reply": x.reply,
            "error": x.error,
            "prompt_tokens": x.prompt_tokens,
            "completion_tokens": x.completion_tokens,
            "cost_usd": x.cost_usd,
            "latency_s": x.latency_s,
        }
        for x in lineage.exchanges
        if any(n["exchange"] == x.id for n in nodes)
    }
    ranked = sorted((c for c in lineage.candidates.values() if c.ok and not c.duplicate_of), key=lambda c: -c.score)
    return {
        "run": {
            "dir": str(lineage.run_dir),
            "state": status.get("state", "no status yet (starting or interrupted)"),
            "reason": status.get("reason"),
            "best": best,
            "best_path": path,
            "candidates": len(nodes),
            "budget": status.get("budget"),
            "model": lineage.archive.stored.model,
            "generated": time.strftime("%Y-%m-%d %H:%M", time.localtime()),
            "edits": _edit_lines(lineage),
            "search": _search_lines(lineage),
            "validation": _validation_lines(lineage),
        },
        "tasks": tasks,
        "nodes": nodes,
        "graph": lineage_layout(lineage),
        "exchanges": exchanges,
        "top": [
            {"id": c.id, "score": c.score, "se": c.se, "runs": c.runs, "scores": [c.per_task.get(t) for t in tasks]}
            for c in ranked[:TOP_K]
        ],
        "operators": [vars(s) for s in lineage.operator_stats()],
        "errors": {str(g): dict(k) for g, k in lineage.error_kinds().items()},
        "usage": lineage.usage(),
        "hpo": lineage.hpo_results(),
        "hpo_table": [hpo_row(cid, r) for cid, r in lineage.hpo_results().items()],
        "diversity": _diversity(lineage),
    }


def hpo_row(cid: str, result: dict) -> list[str]:
    """One row of the report's HPO table: trials by outcome, scores, and the values the export uses."""
    trials = result.get("trials") or {}
    outcomes = [(trials.get(k) or 0, k) for k in ("complete", "pruned", "failed")]
    ran = f"{sum(n for n, _ in outcomes)} ({', '.join(f'{n} {k}' for n, k in outcomes if n) or 'none'})"
    if trials.get("interrupted"):  # killed or stopped, then run again: not a failure of the candidate
        ran += f", {trials['interrupted']} interrupted and run again"
    kept = result.get("accepted", True)
    defaults = result.get("defaults") or {}
    changed = ", ".join(f"{k}={v}" for k, v in (result.get("best_params") or {}).items() if defaults.get(k) != v)
    if not changed:
        values = "defaults kept (the best trial used them)"
    elif kept:
        values = changed
    else:
        values = f"defaults kept (best trial's {changed} did not beat them on fresh seeds)"

    def split(s: dict | None) -> str:
        if not isinstance(s, dict):
            return "–"
        return f"{_p(s.get('before'))} → {_p(s.get('after'))}" + ("" if kept else " (not kept)")

    return [cid, ran, split(result.get("train")), split(result.get("test")), values]


def _p(score) -> str:
    return f"{score:.3f}" if isinstance(score, (int, float)) else "–"


def _edit_lines(lineage: Lineage) -> list[str]:
    """How the diff edits went ([evolution] edit = "diff"), as `tunesmith status` says it."""
    from generator.campaign.printing import edit_lines

    return edit_lines(list(lineage.candidates.values()))


def _search_lines(lineage: Lineage) -> list[str]:
    """The niches (islands, behaviour cells, islands that never exchanged) and the bandit, as `status` says them."""
    from generator.campaign.printing import search_lines

    return search_lines(lineage.archive.generations())


def _validation_lines(lineage: Lineage) -> list[str]:
    """The final choice on the validation tasks ([tasks] validation), as `tunesmith status` says it."""
    from generator.campaign.final_choice import format_choice, load_choice

    has_set = lineage.archive.stored.has_validation
    return format_choice(load_choice(lineage.run_dir)) if has_set else []


def _diversity(lineage: Lineage) -> list[dict]:
    """Per generation: copies not evaluated, re-asks, novelty of new code, the archive's diversity."""
    from dataclasses import asdict

    from generator.campaign.diversity import run_diversity

    return [
        asdict(row)
        for row in run_diversity(lineage.run_dir, list(lineage.candidates.values()), lambda c: lineage.code(c.id))
    ]


def candidate_view(lineage: Lineage, cid: str) -> dict:
    """What the report and the live view (generator/serve) both show of one candidate: its place in the
    lineage, its scores or error, its code and its diff to each parent in the run."""
    c = lineage.get(cid)
    per = (c.fitness or {}).get("per_task") or {}
    return {
        "id": c.id,
        "generation": c.generation,
        "operator": c.operator,
        "children": lineage.children(cid),
        "description": c.description or "",
        "score": c.score,
        "se": c.se,
        "runs": c.runs,
        "per_task": {t: (v if isinstance(v, dict) else {"score": v}) for t, v in per.items()},
        "error": c.error,
        "duplicate_of": c.duplicate_of,
        "code": lineage.code(cid),
        "diffs": {p: lineage.diff(cid, p) for p in lineage.parents(cid)},
        "delta": lineage.delta(cid),
        "timings": c.timings,
    }


def _node(lineage: Lineage, cid: str, on_path: bool) -> dict:
    c = lineage.get(cid)
    return {
        **candidate_view(lineage, cid),
        "parents": list(c.parent_ids),  # as the candidate lists them, a parent of another run's included
        "improved": lineage.improved(cid),
        "on_path": on_path,
        "exchange": c.exchange_id,
        "novelty": c.novelty,
        "edit": c.edit,
    }


def lineage_layout(lineage: Lineage) -> dict:
    """Node positions: one row per generation, children placed under the mean of their parents."""
    rows: dict[int, list[str]] = {}
    for c in lineage.candidates.values():
        rows.setdefault(c.generation, []).append(c.id)
    x: dict[str, float] = {}
    widest = max((len(r) for r in rows.values()), default=1)
    for gen in sorted(rows):

        def key(cid: str) -> tuple:
            px = [x[p] for p in lineage.parents(cid) if p in x]
            return (sum(px) / len(px) if px else float("inf"), cid)  # newcomers go to the right

        order = sorted(rows[gen], key=key)
        wanted = [key(cid)[0] for cid in order if key(cid)[0] != float("inf")]
        # a compact row in parent order, shifted towards its parents as far as the widest row allows
        shift = round(sum(wanted) / len(wanted) - (len(order) - 1) / 2) if wanted else 0
        shift = min(max(shift, 0), widest - len(order))
        for i, cid in enumerate(order):
            x[cid] = i + shift
    gens = sorted(rows)
    pos = {cid: [LEFT + DX * x[cid], TOP + DY * gens.index(lineage.get(cid).generation)] for cid in x}
    width = LEFT + DX * widest + 20
    return {
        "pos": pos,
        "colours": _colours(lineage),
        "width": width,
        "height": TOP + DY * max(len(gens), 1),
        "rows": [[g, TOP + DY * i] for i, g in enumerate(gens)],
    }


def _colours(lineage: Lineage) -> dict[str, str]:
    """Fill colour per scored candidate, viridis over the run's score range."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    scored = {c.id: c.score for c in lineage.candidates.values() if c.score is not None}
    if not scored:
        return {}
    low, high = min(scored.values()), max(scored.values())
    span = (high - low) or 1.0
    cmap = colormaps["viridis"]
    return {cid: to_hex(cmap((s - low) / span)) for cid, s in scored.items()}


# -- the page ----------------------------------------------------------------------------------
def json_for_html(data) -> str:
    """JSON that is inert inside a <script> element: no <, >, & or line separators left as is."""
    text = json.dumps(data, ensure_ascii=True, allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(data: dict, figures: dict[str, Path]) -> str:
    """The whole page as one string."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    script = page_script(TEMPLATES / "report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    csp = (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
    images = {name: "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode() for name, p in figures.items()}
    return env.get_template("report.html.j2").render(
        csp=csp,
        script=script,
        data_json=_finite(data),
        images=images,
        files={name: p.name for name, p in figures.items()},
        run=data["run"],
    )


def _finite(data) -> str:
    """JSON of the data with NaN and infinities as null (JSON has no such numbers)."""

    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {str(k): clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v

    return json_for_html(clean(data))
