"""`extends = "base.toml"`: a campaign file as a base plus a small overlay, resolved before validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.paths import ROOT

from generator.cli import main
from generator.config import ConfigError, load_config, resolved_campaign

# The seven flagship records as they were before they became overlays (campaigns/flagship*.toml at 8842943)
GOLDEN = json.loads((ROOT / "tests" / "data" / "flagship_campaigns.json").read_text())


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_each_flagship_overlay_resolves_to_the_campaign_it_was(name):
    path = ROOT / "benchmarks" / "campaigns" / f"{name}.toml"
    assert 'extends = "flagship-base.toml"' in path.read_text()
    assert resolved_campaign(path) == GOLDEN[name]
    assert load_config(path).name == name


def test_flagship_records_are_not_shipped_as_user_campaigns():
    assert not list((ROOT / "campaigns").glob("flagship*.toml"))
    assert (ROOT / "campaigns" / "quickstart.toml").is_file()


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_tables_merge_key_by_key_and_other_values_replace_along_a_chain(tmp_path):
    _write(
        tmp_path,
        "bases/root.toml",
        'name = "root"\n[tasks]\ntrain = ["problem:gemm/H200", "problem:hotspot/H200"]\n'
        "[evolution]\nbudget = 50\nseed = 3\n[evolution.operators]\nnew = 0.3\nrefine = 0.4\n",
    )
    _write(tmp_path, "bases/mid.toml", 'extends = "root.toml"\n[evolution]\nbudget = 20\n[evaluation]\nrepeats = 2\n')
    top = _write(
        tmp_path,
        "top.toml",
        'extends = "bases/mid.toml"\nname = "top"\n[tasks]\ntrain = ["problem:gemm/H200"]\n'
        "[evolution.operators]\nrefine = 0.6\n",
    )
    merged = resolved_campaign(top)
    assert "extends" not in merged
    assert merged["name"] == "top"
    assert merged["tasks"]["train"] == ["problem:gemm/H200"]  # a list replaces, it is not appended to
    assert merged["evolution"] == {"budget": 20, "seed": 3, "operators": {"new": 0.3, "refine": 0.6}}
    assert merged["evaluation"] == {"repeats": 2}
    cfg = load_config(top)
    assert cfg.evolution.budget == 20 and cfg.evolution.operators.new == 0.3 and cfg.evaluation.repeats == 2


@pytest.mark.parametrize(
    "files",
    [
        {"a.toml": 'extends = "a.toml"\n'},
        {"a.toml": 'extends = "b.toml"\n', "b.toml": 'extends = "sub/../a.toml"\n'},
    ],
)
def test_a_chain_that_comes_back_is_refused_in_one_line(tmp_path, files, capsys):
    for name, text in files.items():
        _write(tmp_path, name, text + '[tasks]\ntrain = ["problem:gemm/H200"]\n')
    (tmp_path / "sub").mkdir()
    with pytest.raises(ConfigError, match=r"extends comes back to a file it passed .*a\.toml\)") as err:
        load_config(tmp_path / "a.toml")
    assert "\n" not in str(err.value)
    assert main(["run", str(tmp_path / "a.toml"), "--no-progress"]) == 2
    out = capsys.readouterr().err.strip()
    assert out.startswith("tunesmith: error: ") and "\n" not in out and "extends comes back" in out, out
    assert not (tmp_path / "results").exists()


def test_a_missing_or_misspelt_base_is_named(tmp_path):
    path = _write(tmp_path, "c.toml", 'extends = "nope.toml"\n')
    with pytest.raises(ConfigError, match=r"nope\.toml: no such campaign file"):
        load_config(path)
    _write(tmp_path, "d.toml", "extends = 3\n")
    with pytest.raises(ConfigError, match=r'extends must name a campaign file, such as extends = "base.toml"'):
        load_config(tmp_path / "d.toml")
    _write(tmp_path, "e.toml", 'extends = "base.toml"\n[tasks]\ntrain = ["problem:gemm/H200"]\nbogus = 1\n')
    _write(tmp_path, "base.toml", "[llm]\nseed = 1\n")
    with pytest.raises(ConfigError, match=r"e\.toml: tasks\.bogus: unknown key"):  # errors name the file run
        load_config(tmp_path / "e.toml")
