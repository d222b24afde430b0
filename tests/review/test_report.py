"""The HTML report: self-contained, escaped, figures beside it, robust to runs still going."""

import base64
import hashlib
import json
import re
from html import unescape

import pytest
from support.run_fixture import XSS, build_run, write_hpo

from generator.archive import Archive
from generator.cli import main
from generator.review.report import build_report, json_for_html


def _csp(html: str) -> str:
    return unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html).group(1))


def _data(html: str) -> dict:
    block = re.search(r'<script type="application/json" id="run-data">(.*?)</script>', html, re.S).group(1)
    return json.loads(block)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    run = build_run(tmp_path_factory.mktemp("report"))
    write_hpo(run)
    result = build_report(run)
    return run, result, result.html.read_text()


def test_writes_html_and_the_figures_beside_it(report):
    run, result, html = report
    assert result.html == run / "report" / "report.html"
    names = sorted(p.name for p in result.pngs)
    # (diversity: the fixture's code is two programs, c0003 samples 20 where the others sample 10)
    assert names == [f"{n}.png" for n in ("convergence", "diversity", "errors", "heatmap", "operators", "usage")]
    assert {p.parent for p in result.pngs} == {run / "report" / "report_files"}  # one folder beside the page
    for png in result.pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert html.count('src="data:image/png;base64,') == len(names)


def test_needs_no_network(report):
    _, _, html = report
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "default-src 'none'" in _csp(html)  # the page may not fetch anything, even by mistake


def test_everything_the_llm_wrote_stays_inert_text(report):
    _, _, html = report
    # nothing from the run reaches the markup as markup: only the JSON block carries it, escaped
    outside = re.sub(r'<script type="application/json" id="run-data">.*?</script>', "", html, flags=re.S)
    assert "__pwned" not in outside and "onerror" not in outside
    assert "<img src=x" not in html and "<b>bold?</b>" not in html and "</script><b>" not in html
    assert html.count("<script") == 2  # the JSON block and the page's own script
    data = _data(html)
    nodes = {n["id"]: n for n in data["nodes"]}
    assert nodes["c0005"]["description"] == XSS
    assert '"""</script><b>bold?</b>"""' in nodes["c0005"]["code"]
    assert "Write <one> & only one." in data["exchanges"]["x0005"]["prompt"]


def test_script_allowed_by_hash_only(report):
    _, _, html = report
    script = re.search(r"<script>(.*?)</script>", html, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in _csp(html)
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "document.write" not in script


def test_data_covers_graph_heatmap_operators_errors_usage_hpo(report):
    _, _, html = report
    data = _data(html)
    assert data["run"]["best"] == "c0005" and data["run"]["best_path"] == ["c0001", "c0003", "c0005"]
    assert set(data["graph"]["pos"]) == {n["id"] for n in data["nodes"]}
    assert [r["id"] for r in data["top"]] == ["c0005", "c0003", "c0001", "c0004"]  # duplicate and failed left out
    assert data["nodes"][2]["diffs"]["c0001"].startswith("--- c0001.py")
    assert {s["operator"] for s in data["operators"]} == {"new", "refine", "simplify", "fix"}
    assert data["errors"]["3"] == {"timeout": 1}
    assert data["usage"]["prompt_tokens"] == 2800
    assert data["hpo"]["c0005"]["best_params"] == {"restarts": 4}


def test_json_for_html_escapes_what_could_end_the_block():
    text = json_for_html({"a": "</script><!-- & \u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><!-- & \u2028"}


def test_run_still_starting_or_interrupted(tmp_path):
    empty = Archive.create(tmp_path / "empty", {"campaign": "x"}).run_dir
    result = build_report(empty, tmp_path / "out" / "empty.html")
    assert result.pngs == [] and "No scored candidates yet." in result.html.read_text()

    run = build_run(tmp_path / "cut")
    (run / "status.json").unlink()  # killed before the first status write
    (run / "code" / "c0007.py").unlink()  # killed between the exchange and the code file
    with open(run / "exchanges.jsonl", "a") as fh:
        fh.write('{"id": "x0009", "mod')
    data = _data(build_report(run).html.read_text())
    assert data["run"]["state"].startswith("no status yet")
    assert next(n for n in data["nodes"] if n["id"] == "c0007")["code"] is None


def test_cli_report_with_output_path(tmp_path, capsys):
    run = build_run(tmp_path)
    out = tmp_path / "paper" / "r.html"
    assert main(["report", str(run), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"report: {out}" in printed and (tmp_path / "paper" / "r_files" / "convergence.png").exists()


def test_cli_report_in_the_current_folder_writes_the_page_and_one_folder(tmp_path, monkeypatch):
    """`report RUN -o report.html` (the README's) leaves report.html and report_files/, not seven files."""
    run = build_run(tmp_path / "r")
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["report", str(run), "-o", "report.html"]) == 0
    assert sorted(p.name for p in here.iterdir()) == ["report.html", "report_files"]
    assert len(list((here / "report_files").glob("*.png"))) >= 5


def test_token_axes_write_their_numbers_without_an_offset_that_covers_the_label(tmp_path, monkeypatch):
    """The quickstart's convergence figure wrote its token axis as 0.25 ... 1.25 with a '1e6' offset, drawn
    over the axis label; token counts are written out (250k, 1.25M) instead."""
    from dataclasses import replace

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from generator.review import plots
    from generator.review.lineage import Lineage

    lineage = Lineage.load(build_run(tmp_path / "run"))
    # a synthesizer run: no cost, about a million tokens at the end
    points = [replace(p, tokens=p.tokens * 5000, cost_usd=0.0) for p in lineage.convergence()]
    monkeypatch.setattr(lineage, "convergence", lambda: points)
    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig) or path)
    plots.convergence(lineage, tmp_path / "c.png")
    plots.usage(lineage, tmp_path / "u.png")
    for fig, axis in ((figures[0], figures[0].axes[1].xaxis), (figures[1], figures[1].axes[0].yaxis)):
        FigureCanvasAgg(fig).draw()
        assert axis.get_offset_text().get_text() == ""
        labels = [t.get_text() for t in axis.get_ticklabels() if t.get_text()]
        assert any(label.endswith(("k", "M")) for label in labels), labels


def test_the_error_figure_counts_copies_apart_from_candidates_that_worked(tmp_path, monkeypatch):
    """A near-copy is recorded, never run: the figure stacked it under 'no error' with the candidates that ran."""
    from generator.review import plots
    from generator.review.lineage import Lineage

    lineage = Lineage.load(build_run(tmp_path / "run"))  # generation 2: c0005 worked, c0006 copies c0003
    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig) or path)
    plots.errors(lineage, tmp_path / "e.png")
    ax = figures[0].axes[0]
    bars = {
        label: {round(p.get_x() + p.get_width() / 2): p.get_height() for p in container}  # generation: count
        for label, container in zip(ax.get_legend_handles_labels()[1], ax.containers)
    }
    assert bars["copy (not run)"][2] == 1 and bars["worked"][2] == 1, bars


def test_the_legends_of_the_busy_figures_sit_below_their_bars(tmp_path, monkeypatch):
    """In the quickstart's report the diversity legend (lower left) covered the bars of generations 1 and 2."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from generator.review import plots
    from generator.review.lineage import Lineage
    from generator.review.report import _diversity

    lineage = Lineage.load(build_run(tmp_path / "run"))
    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig) or path)
    plots.errors(lineage, tmp_path / "e.png")
    plots.diversity(_diversity(lineage), tmp_path / "d.png")
    assert len(figures) == 2
    for fig in figures:
        renderer = FigureCanvasAgg(fig).get_renderer()
        ax = fig.axes[0]
        assert ax.get_legend().get_window_extent(renderer).y1 <= ax.get_window_extent(renderer).y0
