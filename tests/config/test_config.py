"""Campaign files: the quickstart validates, bad files give one line naming the key and the fix."""

import pytest

from generator.config import ConfigError, blocking_changes, load_config, parse_config

MINIMAL = {"tasks": {"train": ["hub:convolution_milo/A100"]}}


def test_quickstart_validates():
    cfg = load_config("campaigns/quickstart.toml")
    assert cfg.llm.model == "synth/components"
    assert cfg.evolution.budget == 100 and cfg.evolution.strategy == "mu+lambda"
    assert cfg.tasks.train and cfg.tasks.test
    assert cfg.evaluation.executor == "local"


def test_defaults_fill_missing_sections():
    cfg = parse_config(MINIMAL)
    assert cfg.evolution.n_parents == 4 and cfg.evolution.operators.refine > 0
    assert cfg.llm.caps.max_usd is None


@pytest.mark.parametrize(
    "data, key, hint",
    [
        ({**MINIMAL, "evolution": {"stratgy": "mu+lambda"}}, "evolution.stratgy", "unknown key"),
        ({**MINIMAL, "evolution": {"strategy": "mu-lambda"}}, "evolution.strategy", "'mu+lambda'"),
        ({**MINIMAL, "evolution": {"budget": 0}}, "evolution.budget", "greater than or equal to 1"),
        (
            {**MINIMAL, "evolution": {"strategy": "mu,lambda", "n_parents": 8, "n_offspring": 4}},
            "evolution",
            "n_offspring >= n_parents",
        ),
        (
            {**MINIMAL, "evolution": {"operators": {"new": 0, "refine": 0, "simplify": 0}}},
            "evolution.operators",
            "positive weight",
        ),
        ({**MINIMAL, "llm": {"caps": {"max_usd": -1}}}, "llm.caps.max_usd", "greater than or equal to 0"),
        ({**MINIMAL, "llm": {"params": {"api_key": "sk-123"}}}, "llm.params", "environment only"),
        ({**MINIMAL, "llm": {"model": "llama3"}}, "llm.model", "litellm model string"),
        ({**MINIMAL, "evaluation": {"executor": "my cluster"}}, "evaluation.executor", "use 'local'"),
        ({**MINIMAL, "evaluation": {"repeats": "ten"}}, "evaluation.repeats", "got 'ten'"),
        ({"tasks": {"train": []}}, "tasks.train", "at least one"),
        ({}, "tasks", "required"),
        ({**MINIMAL, "outptu": {}}, "outptu", "unknown key"),
    ],
)
def test_bad_values_name_the_key_and_the_fix(data, key, hint):
    with pytest.raises(ConfigError) as err:
        parse_config(data, "c.toml")
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"c.toml: {key}:"), msg
    assert hint in msg, msg


def test_toml_syntax_and_missing_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[llm\nmodel = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="no such campaign file"):
        load_config(tmp_path / "nope.toml")


def test_cli_prints_one_line_error(tmp_path, capsys):
    from generator.cli import main

    bad = tmp_path / "c.toml"
    bad.write_text('[tasks]\ntrain = ["hub:convolution_milo/A100"]\n[evolution]\nseeed = 3\n')
    assert main(["run", str(bad), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "evolution.seeed: unknown key" in err


def test_resume_allows_limits_but_not_the_science():
    old = parse_config(MINIMAL).model_dump(mode="json")
    new = parse_config({**MINIMAL, "evolution": {"budget": 300}, "llm": {"caps": {"max_usd": 2}}}).model_dump(
        mode="json"
    )
    assert blocking_changes(old, new) == []
    other = parse_config({**MINIMAL, "evolution": {"seed": 7}}).model_dump(mode="json")
    assert blocking_changes(old, other) == ["evolution.seed"]
