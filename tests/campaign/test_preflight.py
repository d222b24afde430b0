"""Pre-flight checks (issue 24 items 8, 9, 11, 13, 14): what a campaign needs is checked before anything
is written, each problem is one line naming the setting or flag, and the fixed command then works."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.cli import main
from generator.scoring.fitness import Fitness, TaskFitness


def fake_evaluate(code, tasks, repeats, seed, timeout, workers):
    """A score from the code's length: ranks candidates without the sandbox."""
    s = (len(code) % 100) / 100
    return Fitness(s, {t.name: TaskFitness(s, 0.0, 50.0) for t in tasks}, 0.01)


def write(
    path: Path,
    run: Path,
    model: str = "synth/components",
    train=("problem:gemm/H200",),
    test=("problem:conv2d/H200",),
    budget: int = 2,
    extra: str = "",
) -> Path:
    """A small campaign on shipped problems (no hub needed), offline synthesizer."""
    quoted = lambda entries: ", ".join(f'"{e}"' for e in entries)  # noqa: E731 - one line
    path.write_text(f'''[llm]
model = "{model}"
[evolution]
budget = {budget}
n_parents = 1
n_offspring = 2
[tasks]
train = [{quoted(train)}]
test = [{quoted(test)}]
[evaluation]
repeats = 1
[output]
run_dir = "{run}"
{extra}''')
    return path


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err and err.startswith("tunesmith: error: "), err
    return err


@pytest.fixture()
def hub(monkeypatch, hub_dir):
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    return hub_dir


# -- item 8: every task entry, train and test, before anything is written -------------------------


@pytest.mark.parametrize(
    "key,entries,named",
    [
        ("test", ["problem:conv2d/H100"], "tasks.test[0] = 'problem:conv2d/H100': "),
        ("test", ["problem:conv2d/H200", "hub:convolution_milo/A999"], "tasks.test[1] = 'hub:convolution_milo/A999': "),
        ("test", ["problem:nosuch"], "tasks.test[0] = 'problem:nosuch': "),
        ("train", ["problem:gemm/H200", "problem:nosuch"], "tasks.train[1] = 'problem:nosuch': "),
    ],
)
def test_a_bad_task_entry_is_named_before_anything_is_written(hub, tmp_path, capsys, key, entries, named):
    run = tmp_path / "run"
    cfg = write(tmp_path / "c.toml", run, **{key: entries})
    assert main(["run", str(cfg), "--no-progress"]) == 2
    err = one_line(capsys)
    assert named in err and ("not found" in err or "no measured caches" in err), err
    assert not run.exists()


# -- item 9: the model ----------------------------------------------------------------------------


def test_a_typo_in_the_model_is_named_and_the_fixed_command_runs(tmp_path, capsys, monkeypatch):
    run = tmp_path / "run"
    cfg = write(tmp_path / "c.toml", run, model="synth/compnents", budget=1)
    assert main(["run", str(cfg), "--no-progress"]) == 2
    err = one_line(capsys)
    assert "llm.model = 'synth/compnents'" in err and "synth/components" in err
    assert not run.exists()
    from generator.campaign.run import run_campaign

    write(cfg, run, model="synth/components", budget=1)
    assert run_campaign(cfg, progress=False, evaluate=fake_evaluate).state == "finished"


@pytest.mark.parametrize(
    "model,said",
    [
        ("local/qwen2.5-coder-0.5b", "is not installed"),
        ("local/no-such-model", "unknown local model"),
    ],
)
def test_a_local_model_that_is_not_installed_is_named_before_anything_is_written(
    tmp_path, capsys, monkeypatch, model, said
):
    monkeypatch.setenv("TUNESMITH_MODEL_DIR", str(tmp_path / "no-models"))
    run = tmp_path / "run"
    assert main(["run", str(write(tmp_path / "c.toml", run, model=model)), "--no-progress"]) == 2
    err = one_line(capsys)
    assert f"llm.model = '{model}'" in err and said in err, err
    assert not run.exists()


# -- item 11: the [hpo] storage -------------------------------------------------------------------


@pytest.mark.parametrize(
    "storage,said",
    [
        ("sqlite:////no/such/folder/hpo.db", "folder /no/such/folder does not exist"),
        ("journal:/no/such/folder/hpo.log", "folder /no/such/folder does not exist"),
        ("not-a-url", "is not a storage URL"),
        ("nosuchdb://host/db", "not usable"),
    ],
)
@pytest.mark.parametrize("enabled", ["true", "false"])  # disabled: `tunesmith hpo` uses it after the campaign
def test_an_unusable_hpo_storage_is_found_before_the_campaign_starts(tmp_path, capsys, storage, said, enabled):
    run = tmp_path / "run"
    cfg = write(tmp_path / "c.toml", run, extra=f'[hpo]\nenabled = {enabled}\nstorage = "{storage}"\n')
    assert main(["run", str(cfg), "--no-progress"]) == 2
    err = one_line(capsys)
    assert "[hpo] storage" in err and said in err and "--storage" not in err, err
    assert not run.exists()


def test_storage_messages_name_where_the_url_came_from(tmp_path):
    from generator.tuning.settings import settings_from_config
    from generator.tuning.storage import HpoError, check_storage

    config = {"hpo": {"storage": "sqlite:////no/such/folder/hpo.db"}}
    from_config = settings_from_config(config)
    from_flag = settings_from_config(config, storage=f"journal:{tmp_path}")
    assert from_config.storage_origin.startswith("[hpo] storage") and from_flag.storage_origin == "--storage"
    with pytest.raises(HpoError, match=r"^--storage journal:.*is a folder; name a file in it"):
        check_storage(from_flag.storage, from_flag.storage_origin)
    with pytest.raises(
        HpoError,
        match=r"^--storage postgresql://u@127.0.0.1:1/db: (its database driver is not "
        r"installed|cannot connect)",
    ):  # no driver here, or no server there
        check_storage("postgresql://u@127.0.0.1:1/db", "--storage")
    check_storage(f"sqlite:///{tmp_path / 'hpo.db'}", "--storage")  # usable: nothing raised, nothing written
    check_storage(None, "--storage")
    assert list(tmp_path.iterdir()) == []


# -- item 13: --budget ----------------------------------------------------------------------------


@pytest.fixture()
def finished_run(tmp_path):
    """A finished run of 2 candidates."""
    from generator.campaign.run import run_campaign

    cfg = write(tmp_path / "c.toml", tmp_path / "run", budget=2)
    assert run_campaign(cfg, progress=False, evaluate=fake_evaluate).state == "finished"
    return tmp_path / "run"


@pytest.mark.parametrize("budget", ["0", "-3"])
def test_a_budget_below_one_is_refused_naming_the_flag(tmp_path, capsys, budget):
    run = tmp_path / "run"
    cfg = write(tmp_path / "c.toml", run)
    assert main(["run", str(cfg), "--budget", budget, "--no-progress"]) == 2
    err = one_line(capsys)
    assert f"--budget {budget}: a budget is at least 1 candidate" in err and not run.exists(), err
    run.mkdir()
    (run / "config.json").write_text("{}")  # resume refuses before it reads the run
    assert main(["resume", str(run), "--budget", budget, "--no-progress"]) == 2
    err = one_line(capsys)
    assert f"--budget {budget}: a budget is at least 1 candidate" in err and "config.json" not in err, err


def test_resume_with_a_budget_already_spent_says_so_and_changes_nothing(finished_run, capsys):
    from generator.campaign.printing import format_status

    status = (finished_run / "status.json").read_text()
    assert main(["resume", str(finished_run), "--budget", "1", "--no-progress"]) == 2
    err = one_line(capsys)
    assert "--budget 1: the run already holds 2 candidates" in err and "already spent" in err, err
    assert (finished_run / "status.json").read_text() == status
    assert "candidates: 2 of 2 generated" in format_status(finished_run)


def test_a_budget_lowered_in_the_campaign_file_below_the_candidates_made_is_refused(tmp_path, capsys):
    """Issue 40, item 4: `budget = 1` in the file of a run with 2 candidates once printed 'candidates: 1 of 1',
    listed 2 rows and rewrote status.json; --budget 1 was refused."""
    from generator.campaign.run import run_campaign

    run = tmp_path / "run"
    cfg = write(tmp_path / "c.toml", run, budget=2)
    assert run_campaign(cfg, progress=False, evaluate=fake_evaluate).state == "finished"
    status = (run / "status.json").read_text()
    write(cfg, run, budget=1)
    assert main(["run", str(cfg), "--no-progress"]) == 2
    err = one_line(capsys)
    assert f"{cfg}: [evolution] budget = 1: the run already holds 2 candidates" in err and "already spent" in err, err
    assert (run / "status.json").read_text() == status


# -- item 14: a task that fails to load leaves no run directory -----------------------------------


def test_a_task_that_fails_to_load_leaves_no_run_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(tmp_path / "no-hub-here"))
    run = tmp_path / "results" / "run"
    cfg = write(tmp_path / "c.toml", run, train=["hub:convolution_milo/A100"])
    assert main(["run", str(cfg), "--no-progress"]) == 2
    assert "needs the benchmark hub" in one_line(capsys)
    assert not run.exists()


def test_the_run_lock_removes_the_directory_it_made_when_nothing_else_was_written(tmp_path):
    from generator.run_lock import run_lock

    with pytest.raises(RuntimeError):
        with run_lock(tmp_path / "new", "run"):
            raise RuntimeError("failed before writing anything")
    assert not (tmp_path / "new").exists()
    (tmp_path / "old").mkdir()
    with pytest.raises(RuntimeError):
        with run_lock(tmp_path / "old", "run"):  # a folder that was there before is the user's: kept
            raise RuntimeError("failed")
    assert (tmp_path / "old").is_dir()
    with pytest.raises(RuntimeError):
        with run_lock(tmp_path / "written", "run"):
            (tmp_path / "written" / "config.json").write_text("{}")
            raise RuntimeError("failed after writing")
    assert (tmp_path / "written" / "config.json").is_file()
