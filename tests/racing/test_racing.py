"""Racing: the decision (who gets more runs), common random numbers, the campaign's race, resume mid-race."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from support.paths import ROOT

from generator.archive import Archive
from generator.racing.rule import (
    RaceSettings,
    paired_bounds,
    repeat_blocks,
)
from generator.scoring.fitness import Fitness, TaskFitness
from generator.scoring.repeats import repeat_values, standard_error


def racing_evaluate(code, tasks, repeats, seed, timeout, workers, first_repeat=0, calls=None):
    """A noisy stand-in for the sandbox: P of repeat r = the code's level + a draw shared by every
    candidate at repeat r (common random numbers) + a little noise of its own."""
    if calls is not None:
        calls.append((code, repeats, first_repeat))
    h = int(hashlib.sha256(code.encode()).hexdigest()[:8], 16)
    level = (h % 1000) / 1000
    per_task = {}
    for t in tasks:
        per_repeat = []
        for r in range(first_repeat, first_repeat + repeats):
            shared = np.random.default_rng([seed, r]).normal(0, 0.15)
            own = np.random.default_rng([h, r]).normal(0, 0.03)
            per_repeat.append(float(level + shared + own))
        per_task[t.name] = TaskFitness(
            float(np.mean(per_repeat)),
            float(np.std(per_repeat)),
            50.0,
            per_repeat=tuple(per_repeat),
            runs=repeats,
            se=standard_error(per_repeat),
        )
    score = float(np.mean([t.score for t in per_task.values()]))
    se = standard_error(repeat_values({k: v.to_dict() for k, v in per_task.items()}))
    return Fitness(score, per_task, 0.01, None, {"repeats": repeats, "runs": repeats * len(tasks), "se": se})


RACING = "[evaluation]\nracing = true\nmin_repeats = 2\n"


def _race_config(make_config, server, name, budget=9, extra=""):
    path = make_config(server, name, budget=budget, repeats=8)
    path.write_text(path.read_text().replace("[evaluation]\n", RACING) + extra)
    return path


def _field(levels: dict):
    """An extend(code, repeats, first_repeat) whose candidate `code` scores levels[code][r] + repeat r's shared draw."""

    def extend(code: str, repeats: int, first_repeat: int) -> Fitness:
        values = tuple(
            levels[code][r] + np.random.default_rng([7, r]).normal(0, 0.2)
            for r in range(first_repeat, first_repeat + repeats)
        )
        return Fitness(
            float(np.mean(values)),
            {"t": TaskFitness(float(np.mean(values)), 0.0, 10.0, per_repeat=values, runs=repeats)},
        )

    return extend


def _raced_archive(tmp_path, levels: dict, settings: RaceSettings):
    from generator.archive import Candidate
    from generator.racing.candidates import Race

    archive = Archive.create(tmp_path / "run", {})
    extend = _field(levels)
    for cid in levels:
        archive.append_candidate(Candidate(cid, 1, "new", fitness=extend(cid, settings.min_repeats, 0).to_dict()))
    return archive, Race(settings, archive, lambda c: c.id, extend)


def test_the_final_race_measures_the_winner_without_the_indifference_zone(tmp_path):
    """A tie inside the zone is left alone for the parents' places, but the first place is raced to the cap."""
    levels = {"a": [0.8] * 8, "b": [0.8] * 8, "c": [0.3] * 8}  # 'a' and 'b' the same every repeat
    archive, race = _raced_archive(tmp_path, levels, RaceSettings(2, 8, 0.9, indifference=0.05))
    race(archive.candidates(), 1)
    assert archive.races() == []  # 'a' or 'b' as a parent: the same P, decided by the mean
    race.final(archive.candidates(), 2)
    assert sorted((r["id"], r["to"]) for r in archive.races()) == [("a", 4), ("a", 8), ("b", 4), ("b", 8)]
    assert {c.id: c.runs for c in archive.candidates()} == {"a": 8, "b": 8, "c": 2}


def test_the_final_race_races_whoever_moves_into_the_top(tmp_path):
    """'lucky' leads on its first two runs only; once its mean drops, 'c' (third on its first runs) is
    second and must be raced for the first place too, not win on its first runs."""
    levels = {"lucky": [1.0, 0.8] + [0.6] * 6, "b": [0.8] * 8, "c": [0.78, 0.74, 0.82, 0.78] * 2}
    archive, race = _raced_archive(tmp_path, levels, RaceSettings(2, 8, 0.9))
    made = archive.candidates()
    race.final(made, 2)
    runs = {c.id: c.runs for c in made}
    assert runs["lucky"] > 2 and runs["c"] > 2, runs
    assert max(made, key=lambda c: c.score).id != "lucky"


def test_campaign_races_and_records_runs_and_standard_errors(server, make_config):
    from generator.campaign.run import run_campaign

    calls = []
    cfg = _race_config(make_config, server, "raced")
    run_campaign(cfg, progress=False, evaluate=lambda *a, **k: racing_evaluate(*a, **k, calls=calls))
    archive = Archive.open(cfg.parent / "raced")
    ok = [c for c in archive.candidates() if c.ok and not c.duplicate_of]
    repeats = {c.id: c.fitness["metadata"]["repeats"] for c in ok}
    assert max(repeats.values()) > 2 and min(repeats.values()) == 2, repeats  # raced, and early stops
    winner, second = archive.best(2)
    lower, _ = paired_bounds(repeat_blocks(winner.fitness["per_task"]), repeat_blocks(second.fitness["per_task"]), 0.9)
    assert repeats[winner.id] == 8 or lower > 0  # the final race: the winner is significantly first or at the cap
    assert all(c.fitness["metadata"]["se"] > 0 and c.fitness["metadata"]["runs"] == repeats[c.id] for c in ok)
    first_stage = [c for c in calls if c[2] == 0]
    assert first_stage and all(c[1] == 2 for c in first_stage)  # new candidates: the first stage only
    assert sum(c[1] for c in calls) < 8 * len(ok)  # fewer runs than fixed repeats
    assert len(archive.races()) == len([c for c in calls if c[2] > 0])


def test_fixed_repeats_stay_reachable(server, make_config):
    from generator.campaign.run import run_campaign

    calls = []
    cfg = make_config(server, "fixed", budget=5, repeats=4)
    run_campaign(cfg, progress=False, evaluate=lambda *a, **k: racing_evaluate(*a, **k, calls=calls))
    assert calls and all(c[1] == 4 and c[2] == 0 for c in calls)
    assert not (cfg.parent / "fixed" / "races.jsonl").exists()


def test_kill_mid_race_then_resume_continues_the_race_exactly(server, make_config):
    from generator.campaign.run import resume, run_campaign

    ref = _race_config(make_config, server, "reference")
    run_campaign(ref, progress=False, evaluate=racing_evaluate)
    reference = Archive.open(ref.parent / "reference")

    class Killed(KeyboardInterrupt):
        pass

    extensions = []
    total = len(reference.races())
    assert total >= 2

    def dies_in_the_race(*args, **kwargs):
        if kwargs.get("first_repeat"):
            extensions.append(1)
            if len(extensions) == total // 2 + 1:  # inside a race, some of it recorded
                raise Killed()
        return racing_evaluate(*args, **kwargs)

    cfg = _race_config(make_config, server, "killed")
    run = cfg.parent / "killed"
    with pytest.raises(KeyboardInterrupt):
        run_campaign(cfg, progress=False, evaluate=dies_in_the_race)
    recorded = Archive.open(run).races()
    assert len(recorded) == total // 2
    resumed = []
    resume(run, progress=False, evaluate=lambda *a, **k: racing_evaluate(*a, **k, calls=resumed))
    archive = Archive.open(run)
    assert archive.races()[: total // 2] == recorded  # what was recorded is kept, not run again

    def strip(races):
        return [(r["id"], r["to"], json.dumps(r.get("fitness"), sort_keys=True)) for r in races]

    assert strip(archive.races()) == strip(reference.races())

    def digest(a):
        return [
            (c.id, c.parent_ids, c.score, c.fitness and c.fitness["metadata"].get("repeats")) for c in a.candidates()
        ]

    assert digest(archive) == digest(reference)
    assert [g["population"] for g in archive.generations()] == [g["population"] for g in reference.generations()]
    assert len([c for c in resumed if c[2] > 0]) == total - total // 2  # only the rest of the race ran


def test_hpo_trials_that_cannot_beat_the_best_are_pruned_early(monkeypatch):
    import types

    import optuna

    import generator.tuning.hpo as hpo
    from generator.racing.trials import RacePruner

    runs = []

    def evaluate(source, tasks, repeats, seed, timeout_s, params, workers, first_repeat=0):
        runs.append(repeats * len(tasks))
        level = params["sample"] / 32  # more samples: better, with a draw shared by every trial per repeat
        per_task = {}
        for t in tasks:
            values = [
                level
                + np.random.default_rng([seed, r]).normal(0, 0.2)  # the draw of repeat r
                + np.random.default_rng([params["sample"], r]).normal(0, 0.05)  # the trial's own noise
                for r in range(first_repeat, first_repeat + repeats)
            ]
            per_task[t.name] = TaskFitness(float(np.mean(values)), 0.0, 10.0, per_repeat=tuple(values), runs=repeats)
        return Fitness(float(np.mean([t.score for t in per_task.values()])), per_task)

    monkeypatch.setattr(hpo, "_evaluate", evaluate)
    tasks = [types.SimpleNamespace(name=n) for n in ("a/A100", "b/A100")]
    settings = hpo.HpoSettings(repeats=8, racing=True, min_repeats=2, confidence=0.9)
    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0), pruner=RacePruner(0.9)
    )
    for sample in (32, 2, 31):  # the best first: the others race against it
        study.enqueue_trial({"sample": sample})
    dists = {"sample": optuna.distributions.IntDistribution(1, 32)}
    study.optimize(hpo.make_objective("", dists, tasks, settings, 60, 1), n_trials=12)
    pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert pruned and all(len(t.user_attrs["repeat_values"]) < 8 for t in pruned)
    far, close = study.trials[1], study.trials[2]
    assert far.state == optuna.trial.TrialState.PRUNED and len(far.user_attrs["repeat_values"]) == 2  # at once
    assert len(close.user_attrs["repeat_values"]) > 2  # within the noise: more runs before any verdict
    assert all(len(t.user_attrs["repeat_values"]) == 8 for t in complete)  # the cap, and no more
    assert sum(runs) < 12 * 8 * len(tasks)
    assert study.best_trial.params["sample"] == 32


def test_hpo_settings_race_as_the_campaign_does():
    from generator.tuning.settings import settings_from_config

    on = settings_from_config({"evaluation": {"racing": True, "min_repeats": 2, "confidence": 0.95}, "hpo": {}})
    assert on.racing and on.min_repeats == 2 and on.confidence == 0.95
    assert not settings_from_config({"hpo": {"repeats": 4}}).racing


def test_status_report_and_export_show_p_with_its_standard_error(server, make_config, tmp_path):
    from generator.campaign.printing import format_status
    from generator.campaign.run import run_campaign
    from generator.export.exporter import export_run
    from generator.review.lineage import Lineage
    from generator.review.report import report_data

    cfg = _race_config(make_config, server, "shown")
    run_campaign(cfg, progress=False, evaluate=racing_evaluate)
    run = cfg.parent / "shown"
    [best] = Archive.open(run).best(1)
    pm = f"{best.score:.3f} ± {best.se:.3f}"
    board = format_status(run)
    assert "± SE  runs" in board and f"{best.id:6} {best.score:>7.3f} ± {best.se:.3f} {best.runs:>5}" in board
    data = report_data(Lineage(Archive.open(run)))
    assert data["top"][0]["se"] == best.se and data["top"][0]["runs"] == best.runs >= 2
    exported = export_run(run, "raced_winner", out_dir=tmp_path / "pkg")
    text = exported.module.read_text()
    assert f"default {pm}" in text and f"{best.runs} runs" in text
    assert f"| {pm} |" in exported.report.read_text()


def test_quickstart_campaign_races_end_to_end(tmp_path, monkeypatch, capsys):
    """The shipped quickstart (offline synthesizer, real sandbox), racing 2..4 repeats, 8 candidates."""
    import re

    from generator.cli import main

    text = (ROOT / "campaigns" / "quickstart.toml").read_text()
    text = re.sub(r"^repeats\s*=.*$", "repeats = 4\nracing = true\nmin_repeats = 2", text, count=1, flags=re.M)
    text = text.replace('run_dir = "results/quickstart"', f'run_dir = "{tmp_path / "run"}"')
    cfg = tmp_path / "quickstart.toml"
    cfg.write_text(text)
    monkeypatch.chdir(ROOT)  # problem: tasks resolve from the checkout
    assert main(["run", str(cfg), "--budget", "8", "--no-progress"]) == 0
    archive = Archive.open(tmp_path / "run")
    ok = [c for c in archive.candidates() if c.ok and not c.duplicate_of]
    repeats = [c.fitness["metadata"]["repeats"] for c in ok]
    assert ok and set(repeats) <= {2, 4} and 4 in repeats
    assert archive.best(1)[0].fitness["metadata"]["repeats"] == 4 and archive.best(1)[0].se is not None
    assert all(r.get("fitness") or r.get("error") for r in archive.races())
    capsys.readouterr()
    assert main(["status", str(tmp_path / "run")]) == 0
    assert "± SE  runs" in capsys.readouterr().out


def test_replay_reproduces_the_race(server, make_config):
    from generator.campaign.run import run_campaign

    original = _race_config(make_config, server, "original")
    run_campaign(original, progress=False, evaluate=racing_evaluate)
    asked = len(server.requests)
    replay = make_config(server, "replayed", budget=9, repeats=8, model=f"replay/{original.parent / 'original'}")
    replay.write_text(replay.read_text().replace("[evaluation]\n", RACING))
    run_campaign(replay, progress=False, evaluate=racing_evaluate)
    assert len(server.requests) == asked  # the LLM was not asked again
    first, again = Archive.open(original.parent / "original"), Archive.open(replay.parent / "replayed")
    assert first.races() and again.races() == first.races()
    assert [(c.id, c.score, c.runs) for c in again.candidates()] == [
        (c.id, c.score, c.runs) for c in first.candidates()
    ]


def test_kill_9_mid_race_then_resume_matches_an_uninterrupted_run(server, make_config):
    """The real sandbox and a real kill: the process dies once the race has recorded an extension."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from generator.campaign.run import resume, run_campaign

    def config(name):
        path = make_config(server, name, budget=8, repeats=4)
        path.write_text(path.read_text().replace("[evaluation]\n", RACING))
        return path

    reference = config("reference")
    run_campaign(reference, progress=False)
    cfg = config("killed")
    run = cfg.parent / "killed"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "generator.cli", "run", str(cfg), "--no-progress"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if (run / "races.jsonl").exists() and (run / "races.jsonl").read_text().count("\n") >= 1:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the campaign ended before its race could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    before = Archive.open(run).races()
    assert before
    resume(run, progress=False)
    after, ref = Archive.open(run), Archive.open(reference.parent / "reference")
    assert after.races()[: len(before)] == before  # nothing recorded was run again or changed
    key = lambda a: [(r["id"], r["to"], (r.get("fitness") or {}).get("score")) for r in a.races()]  # noqa: E731 - one line
    assert key(after) == key(ref)
    assert [(c.id, c.parent_ids, c.score, c.runs) for c in after.candidates()] == [
        (c.id, c.parent_ids, c.score, c.runs) for c in ref.candidates()
    ]


@pytest.mark.parametrize(
    "line, words",
    [
        ("min_repeats = 1", "evaluation.min_repeats"),
        ("confidence = 1.5", "evaluation.confidence"),
        ('racing = "yes"', "evaluation.racing"),
    ],
)
def test_bad_racing_settings_name_the_key(tmp_path, line, words):
    from generator.config import ConfigError, load_config

    text = (ROOT / "campaigns" / "quickstart.toml").read_text().replace("[evaluation]\n", f"[evaluation]\n{line}\n")
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=words):
        load_config(path)
    assert load_config(ROOT / "campaigns" / "quickstart.toml").evaluation.racing is False  # off by default
