"""Crashes and confusing answers a new user met (issue 15, items 9, 10, 12, 13, 14): each is one
line that says what is wrong and what to do, exit code 2, and nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from generator.archive import Archive, Candidate
from generator.cli import main
from generator.config import ConfigError, load_config, parse_config

MINIMAL = {"tasks": {"train": ["hub:convolution_milo/A100"]}}


@pytest.fixture()
def campaign(tmp_path, hub_dir, monkeypatch):
    """A valid campaign file (offline synthesizer) whose run directory is tmp_path/run."""
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    path = tmp_path / "c.toml"
    path.write_text(
        f'[tasks]\ntrain = ["hub:convolution_milo/A100"]\n[evolution]\nbudget = 2\n'
        f'[evaluation]\nrepeats = 1\n[output]\nrun_dir = "{tmp_path / "run"}"\n'
    )
    return path


def _one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err, err
    assert err.startswith("tunesmith: error: "), err
    return err


def _files(root: Path) -> set:
    return {p for p in root.rglob("*")}


# -- item 9: unusable run directories and campaign files -------------------------------------


def test_run_dir_under_a_file(campaign, tmp_path, capsys):
    (tmp_path / "afile").write_text("not a folder\n")
    before = _files(tmp_path)
    assert main(["run", str(campaign), "--run-dir", str(tmp_path / "afile" / "run"), "--no-progress"]) == 2
    err = _one_line_error(capsys)
    assert f"{tmp_path / 'afile'} is a file" in err and "--run-dir" in err
    assert _files(tmp_path) == before and (tmp_path / "afile").read_text() == "not a folder\n"


def test_run_dir_not_writable(campaign, tmp_path, capsys):
    if os.geteuid() == 0:  # root writes anywhere a mode allows nothing: use a place the kernel refuses
        target = Path("/sys/tunesmith-test-run")
        if not Path("/sys").is_dir():
            pytest.skip("running as root without /sys: no folder here refuses root")
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o555)
        target = locked / "run"
    assert main(["run", str(campaign), "--run-dir", str(target), "--no-progress"]) == 2
    err = _one_line_error(capsys)
    assert "not writable" in err and not target.exists(), err


def test_campaign_file_is_a_directory(tmp_path, capsys):
    assert main(["run", str(tmp_path), "--no-progress"]) == 2
    err = _one_line_error(capsys)
    assert "is a folder, not a campaign file" in err
    assert list(tmp_path.iterdir()) == []


def test_campaign_file_is_binary(tmp_path, capsys):
    binary = tmp_path / "c.toml"
    binary.write_bytes(bytes(range(256)) * 4)
    assert main(["run", str(binary), "--no-progress"]) == 2
    err = _one_line_error(capsys)
    assert "not a text file" in err and "UTF-8" in err
    assert list(tmp_path.iterdir()) == [binary]


# -- item 10: strict types where only a mistake gives another type; a sane budget -------------


@pytest.mark.parametrize(
    "section, key, value",
    [
        ("evaluation", "repeats", "2"),
        ("evolution", "budget", "100"),
        ("llm", "temperature", "0.8"),
        ("hpo", "enabled", "true"),
        ("evolution", "seed", 1.5),
        ("evaluation", "workers", True),
    ],
)
def test_values_of_the_wrong_type_are_not_coerced(section, key, value):
    with pytest.raises(ConfigError) as err:
        parse_config({**MINIMAL, section: {key: value}}, "c.toml")
    msg = str(err.value)
    as_written = repr(value) if isinstance(value, str) else {True: "true", 1.5: "1.5"}[value]  # TOML's spelling
    assert msg.startswith(f"c.toml: {section}.{key}:") and as_written in msg, msg
    if isinstance(value, str):
        assert "without quotes" in msg, msg


def test_floats_still_take_whole_numbers():
    cfg = parse_config({**MINIMAL, "evaluation": {"timeout": 60}, "llm": {"caps": {"max_usd": 2}}})
    assert cfg.evaluation.timeout == 60.0 and cfg.llm.caps.max_usd == 2.0


def test_absurd_budget_is_refused_and_the_limit_said(campaign, tmp_path, capsys):
    with pytest.raises(
        ConfigError, match=r"evolution.budget: at most 100000 candidates \(got 99999999999999999999999\)"
    ):
        parse_config({**MINIMAL, "evolution": {"budget": 99999999999999999999999}}, "c.toml")
    campaign.write_text(campaign.read_text().replace("budget = 2", "budget = 99999999999999999999999"))
    assert main(["run", str(campaign), "--no-progress"]) == 2
    assert "at most 100000 candidates" in _one_line_error(capsys)
    campaign.write_text(campaign.read_text().replace("budget = 99999999999999999999999", "budget = 2"))
    assert main(["run", str(campaign), "--budget", "99999999999999999999999", "--no-progress"]) == 2
    err = _one_line_error(capsys)
    assert "--budget" in err and "at most 100000 candidates" in err
    assert not (tmp_path / "run").exists()


# -- item 12: a corrupted line in candidates.jsonl is reported, the rest is read -------------------


def test_corrupted_candidate_line_is_reported_with_its_number(tmp_path, capsys):
    archive = Archive.create(tmp_path / "run", {"name": "x"})
    for i in (1, 2, 3):
        archive.append_candidate(Candidate(id=f"c{i:04d}", generation=0, operator="new"))
    path = tmp_path / "run" / "candidates.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = '{"id": "c0002", "gener\x00\x00 disk garbage\n'
    lines.insert(2, '["valid JSON", "but not a candidate"]\n')
    path.write_text("".join(lines))
    assert [c.id for c in archive.candidates()] == ["c0001", "c0003"]  # the run goes on with the rest
    err = capsys.readouterr().err
    assert f"{path} line 2: not valid JSON" in err and f"{path} line 3: not a candidate record" in err, err
    archive.candidates()
    assert capsys.readouterr().err == ""  # said once, not at every read


# -- item 13: export does not overwrite a module unless told -------------------------------------


def test_export_refuses_to_overwrite_without_force(tmp_path, capsys):
    source = (
        "class A:\n    hyperparameters = {}\n\n    def __init__(self, budget=5000):\n        pass\n\n"
        "    def __call__(self, func, searchspace):\n        pass\n"
    )
    archive = Archive.create(tmp_path / "run", {"name": "x", "llm": {"model": "synth/components"}})
    archive.append_candidate(
        Candidate(
            id="c0001",
            generation=0,
            operator="new",
            code_path=archive.write_code("c0001", source),
            fitness={"score": 0.5, "per_task": {}},
        )
    )
    out = tmp_path / "pkg"
    out.mkdir()
    (out / "mine.py").write_text("# my own module\n")
    assert main(["export", str(archive.run_dir), "--name", "mine", "--out", str(out)]) == 2
    err = _one_line_error(capsys)
    assert "exists" in err and "--force" in err
    assert (out / "mine.py").read_text() == "# my own module\n" and not (out / "reports").exists()
    assert main(["export", str(archive.run_dir), "--name", "mine", "--out", str(out), "--force"]) == 0
    assert "class A" in (out / "mine.py").read_text()


# -- item 14: what the end of a run and the error messages say ----------------------------------


def test_end_of_run_names_the_next_commands_and_what_p_means(tmp_path):
    from generator.campaign.printing import Summary, format_summary

    board = [
        Candidate(
            id="c0007",
            generation=1,
            operator="refine",
            code_path="code/c0007.py",
            fitness={"score": 0.91, "per_task": {"t/A": {"score": 0.91}}},
            description="# Best",
        )
    ]
    text = format_summary(
        Summary(
            tmp_path, "finished", "done", 3, 3, {"calls": 3}, board, tmp_path / "code" / "c0007.py", "synth/components"
        )
    )
    last = text.splitlines()[-3:]
    assert last[0].strip().startswith(f"tunesmith hpo {tmp_path}") and "--id c0007" in last[0]
    assert last[1].strip().startswith(f"tunesmith export {tmp_path} --name ") and "--id c0007" in last[1]
    assert last[2].startswith("P ") and "1" in last[2] and "random search" in last[2]
    assert "best candidate: c0007" in text and "not yet a Kernel Tuner strategy" in text


def test_several_config_problems_are_named(capsys, tmp_path):
    with pytest.raises(ConfigError) as err:
        parse_config({**MINIMAL, "evolution": {"seeed": 3, "budget": 0}, "llm": {"model": "llama3"}}, "c.toml")
    msg = str(err.value)
    assert "problem(s)" not in msg
    assert "2 more problems" in msg and "evolution.budget" in msg and "llm.model" in msg, msg


def test_missing_task_file_names_each_place_looked_once(tmp_path, monkeypatch, hub_dir):
    from generator.tasks.entries import resolve_paths

    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "c.toml"
    cfg.write_text('[tasks]\ntrain = ["spaces/missing.json.gz"]\n')
    with pytest.raises(ConfigError) as err:
        resolve_paths(load_config(cfg), cfg.parent)
    msg = str(err.value)
    assert msg.count("missing.json.gz") == 1 and msg.count(str(tmp_path)) == 1, msg  # one place, said once
    assert f"looked in {tmp_path}" in msg, msg
    other = tmp_path / "campaigns"
    other.mkdir()
    (other / "c.toml").write_text(cfg.read_text())
    with pytest.raises(ConfigError) as err:
        resolve_paths(load_config(other / "c.toml"), other)
    msg = str(err.value)
    assert f"the current folder ({tmp_path})" in msg and f"the campaign file's folder ({other})" in msg, msg


def test_the_hub_found_elsewhere_is_no_change_of_the_run(tmp_path, hub_dir, monkeypatch):
    """The quickstart run again after ../shared (or TUNESMITH_BENCHMARK_HUB) appeared was refused: 'holds a run
    started with different settings (tasks.hub)', though none of its tasks is on the hub. Where the hub is found
    decides no run: its tasks are named hub:APP/GPU."""
    from generator.campaign.run import run_campaign

    cfg = tmp_path / "c.toml"
    cfg.write_text(f'''[llm]
model = "synth/components"
[evolution]
budget = 1
n_parents = 1
n_offspring = 1
[tasks]
train = ["problem:gemm/H200"]
[evaluation]
repeats = 1
[output]
run_dir = "{tmp_path / "run"}"
''')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(tmp_path / "no-hub-here"))
    assert run_campaign(cfg, progress=False).state == "finished"
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    assert run_campaign(cfg, progress=False).state == "finished"


def test_a_task_that_fails_to_load_leaves_nothing_that_blocks_the_rerun(tmp_path, hub_dir, monkeypatch):
    """A first run with the hub missing fails before config.json is written; with the hub set, the same
    command starts the run (it used to be refused as 'different settings (tasks.hub)')."""
    from generator.campaign.run import run_campaign
    from generator.errors import TunesmithError

    cfg = tmp_path / "c.toml"
    cfg.write_text(f'''[llm]
model = "synth/components"
[evolution]
budget = 1
n_parents = 1
n_offspring = 1
[tasks]
train = ["hub:convolution_milo/A100"]
[evaluation]
repeats = 1
[output]
run_dir = "{tmp_path / "run"}"
''')
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(tmp_path / "no-hub-here"))
    with pytest.raises(TunesmithError, match="needs the benchmark hub"):
        run_campaign(cfg, progress=False)
    assert not (tmp_path / "run" / "config.json").exists()
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    assert run_campaign(cfg, progress=False).state == "finished"
