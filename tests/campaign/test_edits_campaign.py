"""Diff edits and crossover in whole campaigns against a fake LLM: blocks that apply, blocks that do not
(asked again for full code, never a silent copy of the parent), crossover of two working parents, and
a crashed concurrent run that resumes (and replays) to the serial run."""

import hashlib
import re
import time

import pytest
from support.campaign_fakes import fake_evaluate, reply_for
from support.fake_llm_server import FakeLLMServer
from support.paths import ROOT

from generator.archive import Archive
from generator.campaign.printing import format_status
from generator.campaign.run import resume, run_campaign

FAKE_KEY = "sk-fake-edits-key-0123456789"


def edit_reply(body: dict) -> str:
    """Full code like `reply_for`, except for diff prompts: one block that changes Parent 1's first
    sample size; a quarter of them quote a line that is not in the parent, a third come with CRLF."""
    prompt = body["messages"][-1]["content"]
    # a prompt-dependent delay (0-0.1 s), so that replies of requests in flight arrive out of plan order
    time.sleep(int(hashlib.sha256(prompt.encode()).hexdigest()[:4], 16) / 65535 * 0.1)
    if "answer: diff" not in prompt:  # new, crossover, and the full-code fallback of a diff
        return reply_for(body)
    h = int(hashlib.sha256(f"{prompt}{body.get('seed')}".encode()).hexdigest()[:8], 16)
    parent = re.search(r"## Parent 1 .*?```python\n(.*?)```", prompt, re.S).group(1)
    line = next(x for x in parent.splitlines() if "get_random_sample(" in x)
    new = re.sub(r"get_random_sample\(\d+\)", f"get_random_sample({h % 40 + 41})", line)
    search = line.replace("searchspace", "space") if h % 4 == 0 else line
    text = (
        f"# Batch {h % 40 + 41}: larger first batch\n```python\n<<<<<<< SEARCH\n{search}\n=======\n{new}\n"
        ">>>>>>> REPLACE\n```\n"
    )
    return text.replace("\n", "\r\n") if h % 3 == 0 else text


@pytest.fixture()
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with FakeLLMServer(edit_reply) as srv:
        yield srv


@pytest.fixture()
def config(tmp_path, hub_dir, monkeypatch):
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))

    def make(name, concurrency, model="openai/fake", llm=""):
        path = tmp_path / f"{name}.toml"
        path.write_text(f'''name = "{name}"
[llm]
model = "{model}"
retries = 1
backoff = 0.01
seed = 11
timeout = 10
concurrency = {concurrency}
{llm}
[evolution]
n_parents = 3
n_offspring = 5
budget = 18
seed = 3
edit = "diff"
[evolution.operators]
new = 0.2
refine = 0.6
simplify = 0.2
fix = 0.4
crossover = 0.5
[tasks]
train = ["hub:convolution_milo/A100"]
[evaluation]
repeats = 1
timeout = 30
[output]
run_dir = "{tmp_path / name}"
''')
        return path

    return make


def digest(run_dir):
    return [
        (
            c.id,
            c.operator,
            tuple(c.parent_ids),
            c.description,
            c.code_hash,
            c.score,
            c.duplicate_of,
            (c.error or {}).get("kind"),
            c.edit and {k: v for k, v in c.edit.items() if k != "diff_exchange_id"},
        )
        for c in Archive.open(run_dir).candidates()
    ]


def test_diff_edits_and_crossover_make_a_run_that_resumes_and_replays_exactly(server, config):
    api = f'api_base = "{server.base_url}"'
    serial = config("serial", 1, llm=api)
    assert run_campaign(serial, progress=False, evaluate=fake_evaluate).state == "finished"
    run = serial.parent / "serial"
    archive = Archive.open(run)
    cands = {c.id: c for c in archive.candidates()}
    edits = [c for c in cands.values() if c.edit]
    applied = [c for c in edits if c.edit["applied"]]
    fell_back = [c for c in edits if not c.edit["applied"] and c.edit["blocks"]]
    assert applied and fell_back
    assert all(c.operator in ("refine", "simplify", "fix") for c in edits)
    for c in applied:  # the parent's code with the one line changed: never a copy of it
        parent = archive.code(cands[c.parent_ids[0]])
        child = archive.code(c)
        assert child != parent and len(child.splitlines()) == len(parent.splitlines())
        assert sum(a != b for a, b in zip(parent.splitlines(), child.splitlines())) == 1
    refs = {x.id: x.ref for x in archive.exchanges()}
    for c in fell_back:  # asked again for full code, saying why; that answer made the candidate
        assert "not in the parent" in c.edit["reason"] or "occurs" in c.edit["reason"]
        assert refs[c.exchange_id].endswith(":full") and refs[c.edit["diff_exchange_id"]].split(":")[0] == c.id
        full = next(x for x in archive.exchanges() if x.id == c.exchange_id)
        assert "## Diff not applied" in full.messages[-1]["content"] and "<<<<<<<" not in (full.reply or "")
    crossed = [c for c in cands.values() if c.operator == "crossover"]
    assert crossed
    for c in crossed:
        assert len(set(c.parent_ids)) == 2 and all(cands[p].ok for p in c.parent_ids)
    assert "diff edits: " in format_status(run) and f"{len(applied)} applied" in format_status(run)
    reference = digest(run)

    calls = []

    def crashing(code, *args):
        calls.append(code)
        if len(calls) == 5:
            raise RuntimeError("power cut during evaluation")
        return fake_evaluate(code, *args)

    crashed = config("crashed", 4, llm=api)
    with pytest.raises(RuntimeError, match="power cut"):
        run_campaign(crashed, progress=False, evaluate=crashing)
    before = digest(crashed.parent / "crashed")
    assert 0 < len(before) < 18 and before == reference[: len(before)]
    assert resume(crashed.parent / "crashed", progress=False, evaluate=fake_evaluate).state == "finished"
    assert digest(crashed.parent / "crashed") == reference

    asked = len(server.requests)
    replayed = config("replayed", 4, model=f"replay/{run}")
    assert run_campaign(replayed, progress=False, evaluate=fake_evaluate).state == "finished"
    assert digest(replayed.parent / "replayed") == reference and len(server.requests) == asked


def test_the_synthesizer_runs_a_diff_and_crossover_campaign_offline(tmp_path, hub_dir, monkeypatch):
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    path = tmp_path / "synth.toml"
    path.write_text(f'''name = "synth"
[llm]
model = "synth/components"
[evolution]
n_parents = 3
n_offspring = 4
budget = 15
edit = "diff"
[evolution.operators]
crossover = 0.5
[tasks]
train = ["hub:convolution_milo/A100"]
[evaluation]
repeats = 1
[output]
run_dir = "{tmp_path / "run"}"
''')
    assert run_campaign(path, progress=False, evaluate=fake_evaluate).state == "finished"
    archive = Archive.open(tmp_path / "run")
    cands = archive.candidates()
    applied = [c for c in cands if c.edit and c.edit["applied"]]
    assert applied and any(c.operator == "crossover" for c in cands)
    replies = {x.id: x.reply for x in archive.exchanges()}
    assert all("<<<<<<< SEARCH" in replies[c.exchange_id] for c in applied)
    from generator.review.report import build_report

    page = build_report(tmp_path / "run").html.read_text()
    assert f"diff edits: {sum(1 for c in cands if c.edit)} asked, {len(applied)} applied" in page


def test_prompt_command_shows_a_crossover_prompt(hub_dir, monkeypatch, capsys):

    from generator.cli import main

    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    hub = ROOT / "campaigns" / "hub.toml"
    assert main(["prompt", str(hub), "--operator", "crossover"]) == 0
    out = capsys.readouterr().out
    assert "## Parent 2 (id: c0002" in out and "## Instruction (operator: crossover)" in out
