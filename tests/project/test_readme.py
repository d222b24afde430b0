"""The README and the docs cannot go stale silently (issue 24, item 18; issue 30): every repository
path, module path and `tunesmith` subcommand they name exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from support.paths import ROOT

from generator.cli import COMMANDS

README = (ROOT / "README.md").read_text(encoding="utf-8")
# The docs pages (docs/**/*.md, not the build output) are held to the same rule as the README.
DOC_PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if not {"_build", "_generated"} & set(p.parts))
TEXT = "\n".join([README] + [p.read_text(encoding="utf-8") for p in DOC_PAGES])
TOP = sorted(p.name for p in ROOT.iterdir() if p.name not in ("results", ".git") and not p.name.endswith("egg-info"))
# Files the README's own examples make or stand for: the export's output, a user's campaign file.
EXAMPLES = {
    "generated_algorithms/my_optimizer.py",
    "campaigns/mine.toml",
    "campaigns/x.toml",
    "campaigns/openai.toml",
    "results/quickstart",
    "results/openai",
    "docs/_build/html",
    "docs/_build/html/index.html",
}  # what the README's docs build command writes
PLACEHOLDER = re.compile(r"[A-Z]{2,}|<|\.\.\.|\{")  # RUN_DIR, NAME, <id>, {1.5b,...}


def repository_paths() -> set[str]:
    """Every `TOP/...` word in the README (prose, code, links) that names a file or folder of the repository."""
    tops = "|".join(re.escape(t) for t in TOP)
    words = re.findall(rf"(?<![\w/.~-])(?:{tops})/[\w./*<>{{}}-]*", TEXT)
    return {w.rstrip(".,;:)") for w in words if not PLACEHOLDER.search(w)} - EXAMPLES


def module_paths() -> set[str]:
    """Dotted names under `generator` (modules, or a module's attribute)."""
    return {w for w in re.findall(r"(?<![\w/.])generator(?:\.\w+)+", TEXT) if not w.endswith((".py", ".toml"))}


def subcommands() -> set[str]:
    """`tunesmith WORD` anywhere in the README (inline code and command blocks)."""
    # a command: at the start of an indented command line, or of an inline code span
    return set(re.findall(r"(?:^ {4}|`|\$ )tunesmith ([a-z][a-z-]*)\b", TEXT, re.M))


def test_every_repository_path_the_readme_names_exists():
    paths = repository_paths()
    assert len(paths) > 20, "the README names paths: the extraction broke"
    missing = sorted(p for p in paths if not ((ROOT / p).exists() or "*" in p and any(ROOT.glob(p))))
    assert not missing, f"README.md names paths that do not exist: {missing}"


def test_every_module_path_the_readme_names_imports():
    names = module_paths()
    assert names, "the README names module paths: the extraction broke"
    broken = []
    for name in sorted(names):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for attr in parts[cut:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                broken.append(name)
            break
        else:
            broken.append(name)
    assert not broken, f"README.md names module paths that do not exist: {broken}"


def test_every_tunesmith_subcommand_the_readme_names_exists():
    named = subcommands()
    assert {"run", "status", "export"} <= named, "the extraction broke"
    unknown = sorted(named - set(COMMANDS))
    assert not unknown, f"README.md names `tunesmith` subcommands that do not exist: {unknown}"


def test_licence_file_matches_the_package_metadata_and_the_readme():
    """A LICENSE file exists, pyproject declares the same licence, and the README says what it covers."""
    import tomllib

    text = (ROOT / "LICENSE").read_text()
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]["text"]
    assert text.startswith(f"{declared} License")
    assert "## Licence" in README and "problems/caches/" in README.split("## Licence")[1]


def _message_strings(path: Path) -> list[str]:
    """The string literals of a module that are not docstrings: what the code can print."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_messages_point_only_to_documentation_that_exists():
    """Issue 40, item 11: the unknown-key error said "see README 'Campaign configuration'", a section the README
    no longer has. Every README section and docs page a message names exists."""
    headings = set(re.findall(r"^#+ (.+?)\s*$", README, re.M))
    sections, pages = set(), set()
    for path in sorted((ROOT / "generator").rglob("*.py")):
        for text in _message_strings(path):
            sections |= {(path.name, s) for s in re.findall(r"README ['\"]([^'\"]+)['\"]", text)}
            pages |= {(path.name, p.rstrip(".,;:)")) for p in re.findall(r"docs/[\w/.-]+\.md", text)}
    assert pages, "messages name docs pages: the extraction broke"
    assert not [s for s in sections if s[1] not in headings], f"messages name README sections it lacks: {sections}"
    missing = sorted(p for p in pages if not (ROOT / p[1]).is_file())
    assert not missing, f"messages name docs pages that do not exist: {missing}"


def test_commands_in_the_docs_take_the_hub_from_its_environment_variable():
    """Issue 40, item 11: the bench how-to's `--tasks ../shared/data/benchmark_hub` ignored TUNESMITH_BENCHMARK_HUB,
    which every other reader of the hub honours."""
    fixed = re.findall(r"--tasks\s+['\"]?\.\./shared/data/benchmark_hub", TEXT)
    assert not fixed, f"a command in the docs names the hub's default path instead of $TUNESMITH_BENCHMARK_HUB: {fixed}"
    assert "${TUNESMITH_BENCHMARK_HUB:-../shared/data/benchmark_hub}" in TEXT


QUICKSTART_JSON = "benchmarks/results/synth_quickstart_results.json"


def _quickstart_block() -> list[str]:
    """The README's quickstart output: the indented block after 'a summary like this one'."""
    after = README.split("summary like this one", 1)[1].split("\n\n", 1)[1]
    block = []
    for line in after.splitlines():
        if line and not line.startswith("    "):
            break
        block.append(line[4:].rstrip())
    return [line for line in block if line] or ["(no block)"]


def test_the_readme_quickstart_output_is_the_run_its_json_records():
    """Issue 40, item 9: the README showed 'c0079, P 0.948, 130 calls' while today's code gives c0097, P 0.932;
    the block must be the summary benchmarks/synth_quickstart.py recorded, and the prose its date."""
    import json

    data = json.loads((ROOT / QUICKSTART_JSON).read_text(encoding="utf-8"))
    assert "summary" in data, f"{QUICKSTART_JSON} records no summary: run benchmarks/synth_quickstart.py again"
    assert _quickstart_block() == [line.rstrip() for line in data["summary"].splitlines() if line]
    assert f"`{QUICKSTART_JSON}`, {data['date']}" in README
    best = data["compare"]["best"]["id"]
    assert f"best candidate: {best}, P {data['compare']['best']['campaign_score']:.3f}" in data["summary"]


def test_the_readme_recommended_numbers_are_the_protocols():
    """The recommended optimizer's numbers in the README are the ones the protocol's table records (issue 38)."""
    import json

    doc = json.loads((ROOT / "benchmarks" / "results" / "protocol" / "crossval.json").read_text())
    winner = next(s for s in doc["strategies"] if s["label"] == doc["winner"])
    selection = doc["selection_estimate"]
    assert f"{winner['mean']:.3f} ± {winner['se_kernels']:.3f}" in README
    assert f"{selection['mean']:.3f} ± {selection['se']:.3f}" in README
    assert f"{len(doc['families'])} kernel families" in README
    assert "generated_algorithms/recommended.py" in README


def test_the_recorded_quickstart_summary_shows_the_sealed_look_of_the_run_it_read(tmp_path):
    """The benchmark shows its run under the quickstart's own directory name; the sealed test line must come
    from the run it read (it was looked up under the shown name, found nothing and was left out)."""
    import json

    from support.run_fixture import build_run

    from generator.archive import Archive

    run = build_run(tmp_path, torn_tail=False)
    record = {
        "candidate": "c0005",
        "params": None,
        "tasks": ["t/X"],
        "repeats": 2,
        "seed": 1,
        "opened": "2026-11-27 10:00:00 UTC",
        "score": 0.5,
        "se_families": None,
        "per_task": {"t/X": 0.5},
    }
    (run / "test.json").write_text(json.dumps(record))
    from benchmarks import synth_quickstart as module

    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "evolution": {"budget": 8}}))
    archive = Archive.open(run)
    text = module.campaign_summary(archive, tmp_path / "results" / "quickstart")
    assert "sealed test set (1 task(s), opened once on 2026-11-27 10:00:00 UTC): c0005 scored P 0.500" in text
