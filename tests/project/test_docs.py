"""The docs cannot drift from the code (issue 30): the generated reference covers every campaign key
and subcommand, the exit-code table matches the code, the results pages cite JSON files that exist,
the section indexes pick up new pages by themselves, and every command a tutorial shows is run."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import ROOT

DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import results_pages  # noqa: E402 - found on the sys.path line above
import tunesmith_docs  # noqa: E402 - found on the sys.path line above

SECTIONS = ("tutorials", "how-to", "reference", "explanation", "results")


def test_every_campaign_key_has_a_description():
    missing = tunesmith_docs.undescribed_keys()
    assert not missing, (
        f"campaign keys without Field(description=...) in generator/config.py: {missing}; "
        "the campaign-file reference is generated from them"
    )


def test_campaign_reference_lists_every_key_with_its_default():
    from pydantic import BaseModel

    from generator.config import CampaignConfig

    text = tunesmith_docs.campaign_reference()
    assert "## `[llm.caps]`" in text and "## `[evolution.operators]`" in text
    cfg = CampaignConfig(tasks={"train": ["x"]})
    for section in ("llm", "evolution", "evaluation", "hpo", "novelty", "prompts", "llm_guided"):
        for key, value in getattr(cfg, section):
            if isinstance(value, BaseModel):  # a subsection: its own heading
                assert f"## `[{section}.{key}]`" in text
            else:
                assert f"| `{key}` |" in text, f"{section}.{key} missing from the generated reference"
    assert "| `budget` | integer | `100` |" in text
    assert "| `train` | list of string | **required** |" in text


def test_cli_reference_covers_every_subcommand_and_flag():
    from generator.cli import COMMANDS

    text = tunesmith_docs.cli_reference()
    for name in COMMANDS:
        assert f"## `tunesmith {name}`" in text, name
    assert "## `tunesmith cache build`" in text and "## `tunesmith llm install`" in text
    assert "--max-fevals" in text and "usage: tunesmith bench" in text


def test_run_directory_layout_comes_from_the_archive_docstring():
    text = tunesmith_docs.run_directory_layout()
    for name in ("candidates.jsonl", "exchanges.jsonl", "status.json", "code/<id>.py", ".lock"):
        assert name in text


def test_exit_code_table_matches_the_code():
    import signal

    from generator.errors import TunesmithError

    table = (DOCS / "reference" / "exit-codes.md").read_text()
    documented = {int(m) for m in re.findall(r"^\| (\d+) \|", table, re.M)}
    handlers = "".join(p.read_text() for p in sorted((ROOT / "generator" / "cli").glob("*.py")))
    # what the command handlers return (`return 0 if ... else 3`, `return 141`), what a user-facing error
    # gives, and the interrupts (128 + signal, generator.interrupts.exit_code)
    produced = {int(a or b) for a, b in re.findall(r"return (\d+)\b|else (\d+)\b", handlers)}
    produced |= {TunesmithError.exit_code, 128 + signal.SIGINT, 128 + signal.SIGTERM}
    assert documented == produced, f"docs say {sorted(documented)}, the code gives {sorted(produced)}"


def test_section_indexes_glob_so_new_pages_appear_by_themselves():
    for section in SECTIONS:
        index = (DOCS / section / "index.md").read_text()
        assert ":glob:" in index and "\n*\n" in index, f"docs/{section}/index.md has no glob toctree"
        for page in (DOCS / section).glob("*.md"):
            assert page.read_text().startswith("# "), f"{page}: a page starts with its '# Title'"


def test_results_pages_cite_json_files_that_exist(tmp_path):
    written = tunesmith_docs.generate(tmp_path)
    assert any(p.suffix == ".png" for p in written)
    for name in results_pages.RESULTS:
        text = (tmp_path / name).read_text()
        cited = re.findall(r"`((?:benchmarks|generated_algorithms)/[\w./-]+\.json)`", text)
        assert cited, f"{name} names no JSON source"
        for rel in cited:
            assert (ROOT / rel).is_file(), f"{name} cites {rel}, which does not exist"
    for page in (DOCS / "results").glob("*.md"):
        for include in re.findall(r"_generated/([\w.-]+)", page.read_text()):
            assert (tmp_path / include).is_file(), f"{page.name} includes {include}, which is not generated"


def test_cost_table_prices_the_recorded_tokens_with_litellm():
    import generator  # noqa: F401  (litellm's bundled price table, before litellm loads)

    # isort: split
    import litellm

    use = tunesmith_docs.token_usage()
    text = tunesmith_docs.cost_table()
    price = litellm.model_cost["gpt-4o-mini"]
    usd = (
        use["prompt_per_100"] * price["input_cost_per_token"]
        + use["completion_per_100"] * price["output_cost_per_token"]
    )
    assert f"| {usd:.2f} |" in text
    assert "quickstart_tokens.json" in text


# ---------------------------------------------------------------- every command a tutorial shows


def tutorial_steps(page: Path) -> list[tuple[str, str]]:
    """('file', 'PATH\\nTEXT') for blocks that start with '# file: PATH', ('run', COMMAND) for '$ ' lines."""
    steps = []
    for lang, body in re.findall(r"```(\w+)\n(.*?)```", page.read_text(), re.S):
        first, _, rest = body.partition("\n")
        if first.startswith("# file: "):
            steps.append(("file", first[len("# file: ") :].strip() + "\n" + rest))
        elif lang == "console":
            steps += [("run", line[2:]) for line in body.splitlines() if line.startswith("$ ")]
    return steps


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env["PATH"]  # this venv's tunesmith, python3
    env.pop("CI", None)
    return env


def _check_needs(command: str, need: str, cwd: Path, env: dict) -> None:
    """A command that needs a key or a GPU: it parses; a missing key is refused with exit 2, naming it."""
    from generator.cli import _build_parser

    line = command.split("#")[0].strip()
    if not line.startswith("tunesmith "):
        return  # e.g. `export KEY=...`
    _build_parser().parse_args(shlex.split(line)[1:])  # SystemExit on a flag or argument that does not parse
    var = re.match(r"([A-Z][A-Z0-9_]+)", need)
    if var:
        env = {k: v for k, v in env.items() if k != var.group(1)}
        done = subprocess.run(line, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and var.group(1) in done.stderr, (line, done.returncode, done.stderr[-500:])


@pytest.mark.parametrize("page", sorted((DOCS / "tutorials").glob("*.md")), ids=lambda p: p.stem)
def test_every_tutorial_command_runs(page, tmp_path):
    steps = tutorial_steps(page)
    if page.name == "index.md":
        assert not steps
        return
    assert steps, f"{page.name} shows no commands"
    env = _env()
    for kind, text in steps:
        if kind == "file":
            rel, _, body = text.partition("\n")
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_text(body)
            continue
        need = re.search(r"# needs (.*)$", text)
        if need:
            _check_needs(text, need.group(1), tmp_path, env)
            continue
        if re.match(r"python3 -m (venv|pip install)", text):
            continue  # the environment this test runs in was made by these (the README's set-up commands)
        done = subprocess.run(
            text, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, executable="/bin/bash"
        )
        assert done.returncode == 0, f"{page.name}: `{text}` exited {done.returncode}:\n{done.stderr[-2000:]}"
