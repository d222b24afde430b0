"""`[tasks] validation`: tasks used only for the final choice of winners, never by selection."""

import hashlib
import json

import pytest

from generator.archive import Archive
from generator.campaign.printing import format_status
from generator.campaign.run import resume, run_campaign
from generator.config import ConfigError
from generator.scoring.fitness import Fitness, TaskFitness

TRAIN, VALID = "convolution_milo/A100", "convolution_milo/A4000"


class Recorder:
    """A stand-in sandbox whose score depends on the code and the task, so that training and validation
    rankings differ; it records which tasks each call saw."""

    def __init__(self):
        self.calls = []

    def __call__(self, code, tasks, repeats, seed, timeout, workers):
        self.calls.append([t.name for t in tasks])
        per = {}
        for t in tasks:
            h = int(hashlib.sha256(f"{code}{t.name}".encode()).hexdigest()[:8], 16)
            per[t.name] = TaskFitness((h % 1000) / 1000, 0.0, 50.0)
        return Fitness(sum(f.score for f in per.values()) / len(per), per, 0.01)


def test_validation_tasks_choose_the_winner_and_selection_never_sees_them(server, make_config, capsys):
    cfg = make_config(server, "val", budget=8, extra="")
    sets = f'train = ["hub:{TRAIN}"]\nvalidation = ["hub:{VALID}"]\nfinalists = 3'
    text = cfg.read_text().replace(f'train = ["hub:{TRAIN}"]', sets)
    cfg.write_text(text)
    rec = Recorder()
    summary = run_campaign(cfg, progress=False, evaluate=rec)
    run = cfg.parent / "val"
    # evolution evaluated on the training task only; the validation task came only in the final choice, once
    # per finalist, after every candidate was made
    n_made = len([c for c in Archive.open(run).candidates() if not c.duplicate_of])
    assert all(call == [TRAIN] for call in rec.calls[:n_made])
    assert rec.calls[n_made:] == [[VALID]] * 3
    choice = json.loads((run / "validation.json").read_text())
    finalists = {f["id"]: f["validation"] for f in choice["finalists"]}
    assert set(finalists) == {c.id for c in Archive.open(run).best(3)}
    assert choice["winner"] == max(finalists, key=finalists.get)
    # the winner is the best candidate everywhere: summary, status, status.json, export's choice
    assert summary.best_file.name.startswith(choice["winner"])
    status = format_status(run)
    assert "final choice on 1 validation task(s) (used only for this choice, never by selection" in status
    assert f"winner (best validation P): {choice['winner']}" in status
    assert "weighs each kernel family once (1 family);" in status  # it said "(1 families)"
    assert Archive.open(run).status()["validation"]["winner"] == choice["winner"]
    from generator.export.exporter import choose_candidate

    assert choose_candidate(Archive.open(run), {}).id == choice["winner"]
    from generator.review.report import build_report

    html = build_report(run).html.read_text()
    assert "final choice on 1 validation task(s)" in html and f"winner (best validation P): {choice['winner']}" in html
    # resume of a finished run reuses the recorded choice: no validation runs again
    before = len(rec.calls)
    resume(run, progress=False, evaluate=rec)
    assert all(call != [VALID] for call in rec.calls[before:])


@pytest.mark.parametrize(
    "sets",
    [('train = ["hub:{t}"]\nvalidation = ["hub:{t}"]'), ('train = ["hub:{t}"]\ntest = ["hub:convolution_milo"]')],
)
def test_a_task_in_two_sets_is_refused_before_anything_is_written(server, make_config, sets):
    cfg = make_config(server, "both")
    cfg.write_text(cfg.read_text().replace(f'train = ["hub:{TRAIN}"]', sets.format(t=TRAIN)))
    with pytest.raises(
        ConfigError, match=f"'{TRAIN}' is in both tasks.train and tasks.(validation|test); a task belongs to one set"
    ):
        run_campaign(cfg, progress=False, evaluate=Recorder())
    assert not (cfg.parent / "both").exists()


def test_a_run_made_before_validation_existed_still_continues(server, make_config):
    cfg = make_config(server, "old", budget=3)
    run_campaign(cfg, progress=False, evaluate=Recorder())
    stored = cfg.parent / "old" / "config.json"
    doc = json.loads(stored.read_text())
    del doc["tasks"]["validation"], doc["tasks"]["finalists"]  # as an earlier Tunesmith wrote it
    stored.write_text(json.dumps(doc))
    cfg.write_text(cfg.read_text().replace("budget = 3", "budget = 4"))
    summary = run_campaign(cfg, progress=False, evaluate=Recorder())  # no "different settings" refusal
    assert summary.candidates == 4 and summary.validation is None


def test_the_final_choice_weighs_kernel_families_not_spaces():
    from generator.campaign.final_choice import Finalist, _rank_folds, family_score

    tasks = ["gemm/A", "gemm/B", "gemm/C", "scan/A", "fwht/A"]
    # "gemm_fit" wins on three GPUs of one kernel; "broad" is better on the two other kernels.
    gemm_fit = {"gemm/A": 0.9, "gemm/B": 0.9, "gemm/C": 0.9, "scan/A": 0.2, "fwht/A": 0.2}
    broad = {"gemm/A": 0.6, "gemm/B": 0.6, "gemm/C": 0.6, "scan/A": 0.6, "fwht/A": 0.6}
    assert family_score(gemm_fit, tasks)[0] < family_score(broad, tasks)[0]  # 0.433 < 0.6; by space 0.62 > 0.6
    mean, se = family_score(broad, tasks)
    assert mean == 0.6 and se == 0.0
    finalists = [
        Finalist("c1", 0.9, family_score(gemm_fit, tasks)[0], gemm_fit),
        Finalist("c2", 0.8, family_score(broad, tasks)[0], broad),
    ]
    _rank_folds(finalists, tasks)
    # without scan or fwht, broad still leads (0.6 vs 0.55); without gemm it leads too
    assert finalists[1].fold_ranks == {"fwht": 1, "gemm": 1, "scan": 1}
    assert finalists[0].fold_ranks == {"fwht": 2, "gemm": 2, "scan": 2}
    assert family_score({**broad, "scan/A": None}, tasks) == (None, None)


TEST = "dedispersion_milo/A4000"


def test_the_test_set_is_opened_once_for_the_final_winner_and_never_again(server, make_config, capsys):
    cfg = make_config(server, "sealed", budget=6, extra="")
    sets = f'train = ["hub:{TRAIN}"]\nvalidation = ["hub:{VALID}"]\nfinalists = 2\ntest = ["hub:{TEST}"]'
    cfg.write_text(cfg.read_text().replace(f'train = ["hub:{TRAIN}"]', sets))
    rec = Recorder()
    run_campaign(cfg, progress=False, evaluate=rec)
    run = cfg.parent / "sealed"
    # the test task is scored exactly once, last, after the two finalists' validation runs
    assert [call for call in rec.calls if TEST in call] == [[TEST]] and rec.calls[-1] == [TEST]
    assert rec.calls[-3:-1] == [[VALID], [VALID]]
    record = json.loads((run / "test.json").read_text())
    winner = json.loads((run / "validation.json").read_text())["winner"]
    assert record["candidate"] == winner and record["tasks"] == [TEST] and record["opened"].endswith("UTC")
    assert record["score"] == record["per_task"][TEST]
    status = format_status(run)
    assert f"sealed test set (1 task(s), opened once on {record['opened']}): {winner} scored P" in status
    # a longer budget may change the winner: the test set is not opened again, whoever wins now
    calls_before = len(rec.calls)
    resume(run, budget=10, progress=False, evaluate=rec)
    assert not any(TEST in call for call in rec.calls[calls_before:])
    assert json.loads((run / "test.json").read_text()) == record
    # the exported winner carries its one sealed look in its provenance
    from generator.export.exporter import export_run

    exported = export_run(run, "sealed_winner", cid=record["candidate"], out_dir=cfg.parent / "out")
    text = exported.module.read_text()
    assert f"sealed test set, opened once on {record['opened']} ({TEST}" in text
