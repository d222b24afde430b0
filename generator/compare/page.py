"""The comparison written out: a JSON file, an HTML page with its plots inline, and a plain-text table.

The page is self-contained (the plots are PNGs inline as data: URLs, no script at all); labels and
run directories are escaped by jinja2's autoescape. The synthesizer is no LLM: an arm whose runs
used it says so in its model column and in the page's note.
"""

from __future__ import annotations

import base64
import io
import json
import math
import time
from pathlib import Path

from generator.compare.arms import AXES, curve, group, pairwise_tests, summary_row
from generator.compare.runs import read_run
from generator.errors import TunesmithError

TEMPLATES = Path(__file__).with_name("templates")
AXIS_LABELS = {
    "candidates": "candidates generated",
    "tokens": "LLM tokens (prompt + completion)",
    "cost": "cost (USD)",
    "wall": "wall time (s)",
}


def compare(run_dirs: list, labels: list[str] | None = None, command: str = "") -> dict:
    """The whole comparison of these run directories as JSON-ready data."""
    if not run_dirs:
        raise TunesmithError("tunesmith compare needs at least one RUN_DIR (a campaign's output.run_dir)")
    runs = [read_run(d) for d in run_dirs]
    arms = group(runs, labels)
    return {
        "command": command,
        "made": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "note": model_note(runs),
        "table": [summary_row(arm) for arm in arms],
        "tests": pairwise_tests(arms),
        "curves": {arm.label: {axis: curve(arm, axis) for axis in AXES} for arm in arms},
        "arms": [
            {"label": arm.label, "runs": [r.run_dir for r in arm.runs], "settings": _json_safe(arm.settings)}
            for arm in arms
        ],
    }


def model_note(runs) -> str:
    models = sorted({r.model for r in runs})
    if all(m.startswith("synth/") for m in models):
        return "Every run used the offline synthesizer (synth/components): it is not an LLM."
    if all(m.startswith("replay/") for m in models):
        return (
            "Every run replayed recorded LLM replies (replay/): a candidate id gets the same reply in every arm, "
            "whatever the arm's prompt asked, so the arms evaluate the same code: a control of the harness (it "
            "must find no difference), not a comparison of methods."
        )
    return "Models: " + ", ".join(models)


def _json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def table_text(data: dict) -> str:
    """The table of final P per arm and the pairwise tests, as Markdown (also what the command prints)."""
    lines = [
        "| arm | runs | final P ± SE | min – max | candidates | failed | tokens | cost USD | wall s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in data["table"]:
        lines.append(
            f"| {row['arm']} | {row['runs']} | {_pm(row['final_p'], row['final_p_se'])} | "
            f"{_f(row['final_p_min'])} – {_f(row['final_p_max'])} | {row['candidates']:.0f} | {row['failed']:.1f} | "
            f"{row['tokens']:.0f} | {row['cost_usd']:.4f} | {row['wall_s']:.0f} |"
        )
    if data["tests"]:
        lines += ["", "| arm A | arm B | Mann-Whitney p (Holm) | Welch p (Holm) |", "|---|---|---:|---:|"]
        for t in data["tests"]:
            lines.append(
                f"| {t['a']} | {t['b']} | {_f(t['mann_whitney_p'])} ({_f(t['mann_whitney_p_holm'])}) | "
                f"{_f(t['welch_p'])} ({_f(t['welch_p_holm'])}) |"
            )
    return "\n".join(lines + ["", data["note"]])


def _f(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def _pm(mean, se) -> str:
    return "–" if mean is None else f"{mean:.3f}" + (f" ± {se:.3f}" if se is not None else "")


def write(data: dict, out_dir) -> tuple[Path, Path]:
    """compare.json and compare.html (plots inline) in out_dir; returns their paths."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TunesmithError(f"--out {out}: cannot make the folder ({exc.strerror}); give another -o") from None
    json_path, html_path = out / "compare.json", out / "compare.html"
    json_path.write_text(json.dumps(_json_safe(data), indent=1) + "\n", encoding="utf-8")
    html_path.write_text(render_html(data), encoding="utf-8")
    return json_path, html_path


def render_html(data: dict) -> str:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
    plots = {axis: _plot(data, axis) for axis in AXES}
    return env.get_template("compare.html.j2").render(data=data, plots=plots, labels=AXIS_LABELS)


def _plot(data: dict, axis: str) -> str | None:
    """One figure: each arm's mean best P against the axis with its 95% band, as a data: URL (None when no
    run spent anything on the axis: the synthesizer's cost is 0)."""
    if not any(x for curves in data["curves"].values() for x in curves[axis]["x"]):
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8), dpi=100)
    for i, (label, curves) in enumerate(data["curves"].items()):
        c = curves[axis]
        colour = f"C{i % 10}"
        xs = [x for x, m in zip(c["x"], c["mean"]) if m is not None]
        ax.step(xs, [m for m in c["mean"] if m is not None], where="post", color=colour, label=label)
        banded = [(x, lo, hi) for x, lo, hi in zip(c["x"], c["low"], c["high"]) if lo is not None]
        if banded:
            bx, lo, hi = zip(*banded)
            ax.fill_between(bx, lo, hi, step="post", color=colour, alpha=0.18, linewidth=0)
    ax.set_xlabel(AXIS_LABELS[axis])
    ax.set_ylabel("best P so far (mean, 95% CI)")
    ax.grid(alpha=0.3)
    if data["curves"]:
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
