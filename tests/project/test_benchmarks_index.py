"""benchmarks/README.md is the index of the benchmarks (issue 41, item 6): script, what it measures, the JSON it
writes, the docs page that renders it. It must name every script and every recorded result on disk, and for
every JSON a results page cites, the page that shows it; the results sit in one place, benchmarks/results/."""

from __future__ import annotations

import re
import sys

from support.paths import ROOT

BENCHMARKS = ROOT / "benchmarks"
INDEX = BENCHMARKS / "README.md"
# inputs, not scripts: strategies benched by name, recorded kernels, and the shared helpers
NOT_SCRIPTS = ("_lib", "results", "strategies", "kernels")


def _rows() -> list[tuple[str, list[str], list[str]]]:
    """(script cell, result globs, docs pages) per row of the index's table."""
    rows = []
    for line in INDEX.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("script", "---"):
            continue
        results = re.findall(r"`((?:benchmarks|generated_algorithms)/[^`]+)`", cells[2])
        pages = re.findall(r"`(docs/[^`]+\.md)`", cells[3])
        rows.append((cells[0], results, pages))
    assert len(rows) > 30, "the index's table could not be read"
    return rows


def _scripts_on_disk() -> set[str]:
    found = set()
    for path in BENCHMARKS.rglob("*"):
        rel = path.relative_to(BENCHMARKS)
        if path.suffix in (".py", ".sh") and path.name != "__init__.py" and not set(rel.parts) & set(NOT_SCRIPTS):
            found.add(f"benchmarks/{rel.as_posix()}")
    return found


def _results_on_disk() -> set[str]:
    return {
        f"benchmarks/{p.relative_to(BENCHMARKS).as_posix()}" for p in (BENCHMARKS / "results").rglob("*") if p.is_file()
    }


def _covered() -> dict[str, set[str]]:
    """Each recorded result the index names (its globs expanded) -> the docs pages of the rows naming it."""
    covered: dict[str, set[str]] = {}
    for _, results, pages in _rows():
        for pattern in results:
            matches = [p.relative_to(ROOT).as_posix() for p in ROOT.glob(pattern) if p.is_file()]
            assert matches, f"benchmarks/README.md names {pattern}, which matches no file"
            for rel in matches:
                covered.setdefault(rel, set()).update(pages)
    return covered


def test_the_index_names_every_script_and_only_scripts_that_exist():
    indexed = {m for script, _, _ in _rows() for m in re.findall(r"`(benchmarks/[\w/.-]+)`", script)}
    on_disk = _scripts_on_disk()
    assert on_disk - indexed == set(), f"scripts missing from benchmarks/README.md: {sorted(on_disk - indexed)}"
    assert indexed - on_disk == set(), f"benchmarks/README.md names scripts that do not exist: {indexed - on_disk}"


def test_the_index_names_every_recorded_result_and_docs_pages_that_exist():
    covered = _covered()
    missing = sorted(_results_on_disk() - set(covered))
    assert not missing, f"results in benchmarks/results/ that benchmarks/README.md does not name: {missing}"
    pages = {page for _, _, row_pages in _rows() for page in row_pages}
    assert not [p for p in pages if not (ROOT / p).is_file()], "benchmarks/README.md names docs pages that do not exist"


def test_results_sit_in_one_place():
    """Every JSON a script wrote lives in benchmarks/results/; only the recorded LLM replies (inputs) sit elsewhere."""
    stray = [
        p.relative_to(ROOT).as_posix()
        for p in BENCHMARKS.rglob("*.json")
        if not p.is_relative_to(BENCHMARKS / "results") and not p.is_relative_to(BENCHMARKS / "byok" / "replies")
    ]
    assert stray == [], f"results outside benchmarks/results/: {stray}"


def test_every_json_a_results_page_cites_is_indexed_with_that_page():
    """The docs extension's citations, rendered: each JSON a generated fragment cites is in the index, on a row
    that names the docs page that includes the fragment."""
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    try:
        import results_pages
    finally:
        sys.path.remove(str(ROOT / "docs" / "_ext"))
    includes: dict[str, set[str]] = {}
    for page in (ROOT / "docs").rglob("*.md"):
        if "_build" not in page.parts:
            for fragment in re.findall(r"_generated/([\w.-]+)", page.read_text()):
                includes.setdefault(fragment, set()).add(page.relative_to(ROOT).as_posix())
    covered = _covered()
    checked = 0
    for fragment, render in results_pages.RESULTS.items():
        assert includes.get(fragment), f"no docs page includes the fragment {fragment}"
        for rel in set(re.findall(r"`((?:benchmarks|generated_algorithms)/[\w./-]+\.json)`", render())):
            assert rel in covered, f"{fragment} cites {rel}, which benchmarks/README.md does not name"
            missing = includes[fragment] - covered[rel]
            assert not missing, f"benchmarks/README.md's row for {rel} does not name {sorted(missing)}"
            checked += 1
    assert checked > 40, f"only {checked} citations found: the extraction broke"
