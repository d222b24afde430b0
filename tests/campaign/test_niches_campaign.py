"""Niches in whole campaigns (a fake LLM server): the niches are recorded per generation, shown by
`status` and the report, and a run killed mid-way resumes to the uninterrupted run's candidates and
niches exactly; replay reproduces them."""

import hashlib
import json

import pytest
from support.campaign_fakes import fake_evaluate, reply_for
from support.fake_llm_server import FakeLLMServer
from support.fault_fixtures import crash_then_resume

from generator.archive import Archive
from generator.campaign.printing import format_status
from generator.campaign.run import run_campaign
from generator.scoring.fitness import Fitness


def behaving(code, tasks, repeats, seed, timeout, workers):
    """fake_evaluate, plus behaviour descriptors from the code's hash (as the evaluator measures them)."""
    fit = fake_evaluate(code, tasks, repeats, seed, timeout, workers)
    if fit.error is not None:
        return fit
    h = hashlib.sha256(code.encode()).digest()
    meta = {"behaviour": {"local": h[0] / 255, "jumps": h[1] / 255, "spread": h[2] / 255}}
    return Fitness(fit.score, fit.per_task, fit.wall_s, None, meta)


@pytest.fixture()
def config(tmp_path, hub_dir, monkeypatch):
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-niches-key-0123456789")
    server = FakeLLMServer(reply_for).__enter__()

    def make(
        name,
        concurrency=1,
        model="openai/fake",
        niches="islands = 2\nmigration_interval = 1\nmap_elites = true",
        budget=22,
    ):
        path = tmp_path / f"{name}.toml"
        path.write_text(f'''name = "niches"
[llm]
model = "{model}"
api_base = "{server.base_url}"
timeout = 10
concurrency = {concurrency}
seed = 11
[evolution]
n_parents = 4
n_offspring = 6
budget = {budget}
seed = 4
[evolution.operators]
crossover = 0.4
[evolution.niches]
{niches}
[tasks]
train = ["hub:convolution_milo/A100"]
[evaluation]
repeats = 1
[output]
run_dir = "{tmp_path / name}"
''')
        return path

    yield make
    server.__exit__(None, None, None)


def digest(run_dir):
    archive = Archive.open(run_dir)
    return (
        [(c.id, c.operator, tuple(c.parent_ids), c.code_hash, c.score) for c in archive.candidates()],
        archive.generations(),
    )


def test_niches_are_recorded_shown_and_resume_and_replay_exactly(config):
    serial = config("serial")
    assert run_campaign(serial, progress=False, evaluate=behaving).state == "finished"
    run = serial.parent / "serial"
    cands, gens = digest(run)
    assert all("niches" in g for g in gens)
    last = gens[-1]["niches"]
    assert len(last["islands"]) == 2 and sum(len(i["cells"]) for i in last["islands"]) >= 3
    assert [m for g in gens for m in g["niches"]["migrations"]]  # migrations happened every generation
    ok = {c[0] for c in cands if c[4] is not None}
    for g in gens:  # nothing that failed sits in a population or a cell
        for isl in g["niches"]["islands"]:
            assert set(isl["population"]) <= ok and set(isl["cells"].values()) <= ok
    text = format_status(run)
    assert "niches after generation" in text and "island 1:" in text and "behaviour cells occupied" in text
    from generator.review.report import build_report

    assert "behaviour cells occupied" in build_report(run).html.read_text()

    crash_then_resume(config, behaving, digest, (cands, gens), crash_at=12)

    replayed = config("replayed", model=f"replay/{run}")
    assert run_campaign(replayed, progress=False, evaluate=behaving).state == "finished"
    assert digest(replayed.parent / "replayed") == (cands, gens)


def test_islands_that_can_never_exchange_are_said_at_the_start(config, capsys):
    path = config("short", niches="islands = 2\nmigration_interval = 5", budget=10)
    assert run_campaign(path, progress=True, evaluate=behaving).state == "finished"
    err = capsys.readouterr().err
    assert "islands = 2 never exchange" in err and "lower migration_interval" in err
    gens = Archive.open(path.parent / "short").generations()
    assert all(g["niches"]["migrations"] == [] for g in gens)
    json.dumps(gens)  # the record is plain JSON
