"""The archive's code diversity per generation: computed once per candidate, kept in the run, shown by `status` and in the report."""

from generator.campaign.diversity import diversity_by_generation
from generator.campaign.novelty import Shape
from generator.campaign.printing import format_status


def test_report_shows_diversity(tmp_path):
    from support.run_fixture import build_run

    from generator.review.lineage import Lineage
    from generator.review.report import build_report, report_data

    run = build_run(tmp_path)
    data = report_data(Lineage.load(run))
    gens = [row["generation"] for row in data["diversity"]]
    assert gens == [0, 1, 2, 3] and data["diversity"][2]["duplicates"] == 1
    # the fixture's code is one program, and from generation 1 on a second one with another sample size
    assert [row["distinct"] for row in data["diversity"]] == [1, 2, 2, 2]
    html = build_report(run).html.read_text()
    assert 'id="diversity"' in html and "Diversity of the code" in html
    from generator.review.plots import diversity

    rows = [
        {
            "generation": 0,
            "candidates": 4,
            "duplicates": 0,
            "reasked": 0,
            "novelty": 0.4,
            "distinct": 4,
            "diversity": 0.5,
        },
        {
            "generation": 1,
            "candidates": 6,
            "duplicates": 2,
            "reasked": 1,
            "novelty": 0.2,
            "distinct": 7,
            "diversity": 0.45,
        },
    ]
    png = diversity(rows, tmp_path / "report-diversity.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------ diversity kept in the run (issue 40, item 14)
def _algorithms() -> list:
    """Candidates of three generations: distinct algorithms, a copy, code that does not parse."""
    from types import SimpleNamespace

    bodies = [
        "for c in s.get_random_sample(10):\n            f(c)",
        "x = s.get_random_sample(1)[0]\n        while True:\n            x = min(s.get_neighbors(x), key=f)",
        "pop = s.get_random_sample(8)\n        for _ in range(9):\n            pop = sorted(pop, key=f)[:4] * 2",
        "best = None\n        for c in s.get_random_sample(30):\n            if best is None or f(c) < f(best):\n"
        "                best = c",
        "def (:",
        "for i, c in enumerate(s.get_random_sample(5)):\n            f(c) if i % 2 else None",
    ]
    codes = [f"class A{i}:\n    def __call__(self, f, s):\n        {b}\n" for i, b in enumerate(bodies)]
    cands = [
        SimpleNamespace(
            id=f"c{i + 1:04d}",
            generation=i // 2,
            duplicate_of="c0001" if i == 6 else None,
            novelty=None,
            code=codes[i % len(codes)],
        )
        for i in range(7)
    ]
    return cands


def test_diversity_is_computed_once_per_candidate_and_kept_in_the_run(tmp_path):
    from generator.campaign.diversity import FILE, run_diversity

    cands = _algorithms()
    expected = diversity_by_generation(cands, lambda c: c.code)
    assert expected[-1].distinct == 5 and expected[-1].diversity is not None
    read = []

    def code_of(c):
        read.append(c.id)
        return c.code

    assert run_diversity(tmp_path, cands[:4], code_of) == diversity_by_generation(cands[:4], lambda c: c.code)
    assert (tmp_path / FILE).exists()
    read.clear()
    assert run_diversity(tmp_path, cands, code_of) == expected  # the run grew: only the new ones are added
    assert "c0001" in read and read.count("c0005") == 1
    read.clear()
    assert run_diversity(tmp_path, cands, code_of) == expected  # nothing new: no code read, nothing parsed
    assert read == []

    for damaged in ('{"version": 1, "order": ["c00', '{"version": 1, "order": ["c0009"], "parts": {"c0009": {}}}'):
        (tmp_path / FILE).write_text(damaged)  # torn by a crash, or from another archive: computed again
        assert run_diversity(tmp_path, cands, code_of) == expected


def test_status_of_an_old_run_keeps_its_diversity_and_does_not_parse_again(tmp_path, monkeypatch):
    from support.run_fixture import build_run

    from generator.campaign.diversity import FILE

    run = build_run(tmp_path)  # a run directory made before diversity.json existed
    first = format_status(run)
    assert "diversity per generation" in first and (run / FILE).exists()

    def no_parse(cls, code):
        raise AssertionError("status parsed a candidate again")

    monkeypatch.setattr(Shape, "of", classmethod(no_parse))
    assert format_status(run) == first
