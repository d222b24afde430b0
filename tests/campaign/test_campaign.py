"""Whole campaigns against a local fake LLM server: end to end, kill -9 and resume, caps, outages, replay."""

import os
import signal
import subprocess
import sys
import time

import pytest
from support.campaign_fakes import FAKE_KEY, fake_evaluate
from support.paths import ROOT

from generator.archive import Archive
from generator.campaign.printing import format_status
from generator.campaign.run import resume, run_campaign


def _digest(run_dir):
    """What must be identical between two runs of the same campaign."""
    return [
        (c.id, c.operator, tuple(c.parent_ids), c.code_hash, c.score, c.duplicate_of, (c.error or {}).get("kind"))
        for c in Archive.open(run_dir).candidates()
    ]


def test_end_to_end_real_sandbox_status_and_no_key_on_disk(server, make_config, capsys):
    from generator.cli import main

    cfg = make_config(server, budget=5)
    assert main(["run", str(cfg), "--no-progress"]) == 0
    out = capsys.readouterr().out
    run = cfg.parent / "run"
    assert "campaign finished" in out and f"(its code: {run}/code/c00" in out and "LLM openai/fake: 5 calls" in out
    assert f"tunesmith hpo {run} --id c00" in out and f"tunesmith export {run} --name" in out  # what to do next
    archive = Archive.open(run)
    cands = archive.candidates()
    assert [c.id for c in cands] == [f"c{i:04d}" for i in range(1, 6)] and len(server.requests) == 5
    ok = [c for c in cands if c.ok]
    assert ok and all(-1.5 < c.score <= 1 and "convolution_milo/A100" in c.per_task for c in ok)
    assert all(c.exchange_id and c.timings["llm_s"] >= 0 for c in cands)
    assert archive.status()["state"] == "finished" and len(archive.dataframe()) == 5
    assert main(["status", str(run)]) == 0
    status = capsys.readouterr().out
    assert "state: finished" in status and "candidates: 5 of 5 generated" in status and "rank id" in status
    for path in run.rglob("*"):  # the key went to the server, never to disk
        if path.is_file():
            assert FAKE_KEY not in path.read_text(errors="replace"), path


SEARCH = """[evolution.niches]
islands = 2
migration_interval = 1
map_elites = true
[evolution.bandit]
enabled = true
"""


@pytest.mark.parametrize("search", ["", SEARCH], ids=["plain", "niches+bandit"])
def test_kill_9_then_resume_loses_nothing_and_matches_an_uninterrupted_run(server, make_config, search):
    budget = 6
    reference = make_config(server, "reference", budget=budget, extra=search)
    run_campaign(reference, progress=False)
    asked_reference = len(server.requests)
    assert asked_reference == budget

    cfg = make_config(server, "killed", budget=budget, extra=search)
    run = cfg.parent / "killed"
    server.delay = 0.3  # so the kill often lands while a prompt is in flight
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "generator.cli", "run", str(cfg), "--no-progress"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        lines = (run / "candidates.jsonl").read_text().count("\n") if (run / "candidates.jsonl").exists() else 0
        if lines >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the campaign ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    before = _digest(run)
    assert 2 <= len(before) < budget
    server.delay = 0.0
    summary = resume(run, progress=False)
    assert summary.state == "finished" and summary.candidates == budget
    after = _digest(run)
    assert after[: len(before)] == before  # nothing recorded was lost or changed
    reference_digest = _digest(cfg.parent / "reference")
    assert after == reference_digest, (after, reference_digest)  # the run an uninterrupted run gives
    # the niches and the bandit's state, generation by generation, are those of the uninterrupted run
    generations = Archive.open(run).generations()
    assert generations == Archive.open(cfg.parent / "reference").generations()
    assert not search or all("niches" in g and "bandit" in g for g in generations)
    asked = len(server.requests) - asked_reference
    assert asked <= budget + 4, asked  # at most the prompts in flight at the kill (concurrency 4) were asked twice
    exchanges = Archive.open(run).exchanges()
    assert len({x.ref for x in exchanges}) == budget


def test_crash_after_the_reply_reuses_the_recorded_exchange(server, make_config):
    ref_cfg = make_config(server, "reference", budget=5)
    run_campaign(ref_cfg, progress=False, evaluate=fake_evaluate)
    calls = []

    def crashing(code, *args):
        # from the third evaluation on: an early (speculative) evaluation of a reply that turns out to
        # copy a sibling is thrown away, power cut or not, so the cut must also hit the next one
        calls.append(code)
        if len(calls) >= 3:
            raise RuntimeError("power cut during evaluation")
        return fake_evaluate(code, *args)

    cfg = make_config(server, "crashed", budget=5)
    asked = len(server.requests)
    with pytest.raises(RuntimeError, match="power cut"):
        run_campaign(cfg, progress=False, evaluate=crashing)
    run = cfg.parent / "crashed"
    recorded = len(Archive.open(run).candidates())
    # the crashed candidate's reply, and those of its siblings in flight with it (concurrency 4), are kept
    assert recorded + 1 <= len(Archive.open(run).exchanges()) <= recorded + 4
    summary = resume(run, progress=False, evaluate=fake_evaluate)
    assert summary.state == "finished"
    assert len(server.requests) - asked == 5  # the reply of the crashed candidate was not asked again
    assert _digest(run) == _digest(ref_cfg.parent / "reference")


def test_caps_stop_cleanly_and_a_higher_cap_continues(server, make_config):
    cfg = make_config(server, budget=5, caps="[llm.caps]\nmax_calls = 3\n")
    summary = run_campaign(cfg, progress=False, evaluate=fake_evaluate)
    run = cfg.parent / "run"
    assert summary.state == "stopped" and "llm.caps.max_calls = 3 reached" in summary.reason
    assert len(server.requests) == 3 and len(Archive.open(run).candidates()) == 3
    assert Archive.open(run).status()["state"] == "stopped" and "max_calls" in format_status(run)
    cfg.write_text(cfg.read_text().replace("max_calls = 3", "max_calls = 10"))
    summary = run_campaign(cfg, progress=False, evaluate=fake_evaluate)
    assert summary.state == "finished" and summary.candidates == 5 and len(server.requests) == 5


def test_outage_stops_with_nothing_recorded_then_resumes_with_the_same_ids(server, make_config):
    """Requests that got no answer are no candidates (issue 24 item 7): the exchanges are recorded (they
    count toward llm.caps), the archive is not, and resume asks for c0001 again."""
    cfg = make_config(server, budget=4, concurrency=1)
    server.push(*[("status", 500)] * 4)  # retries=1: two unanswered requests in a row, each tried twice
    summary = run_campaign(cfg, progress=False, evaluate=fake_evaluate)
    assert summary.state == "stopped" and "2 requests in a row got no answer" in summary.reason
    assert "InternalServerError" in summary.reason and "nothing was recorded for c0001" in summary.reason
    run = cfg.parent / "run"
    assert Archive.open(run).candidates() == [] and summary.candidates == 0
    assert [x.error is not None for x in Archive.open(run).exchanges()] == [True, True]
    summary = resume(run, progress=False, evaluate=fake_evaluate)
    cands = Archive.open(run).candidates()
    assert summary.state == "finished" and [c.id for c in cands] == ["c0001", "c0002", "c0003", "c0004"]
    assert not any((c.error or {}).get("kind") == "llm" for c in cands)


def test_bad_replies_are_recorded_and_truncated_code_gets_fixed(server, make_config):
    # one request at a time: the server's scripted replies go to the candidates in order
    cfg = make_config(
        server,
        budget=6,
        extra="[evolution.operators]\nnew = 0.01\nrefine = 0.01\nsimplify = 0.01\nfix = 100\n",
        concurrency=1,
    )
    truncated = "# Cut: a reply cut short\n```python\nclass Cut:\n    def __call__(self, func, searchspace):\n        for c in ("
    server.push(("empty",), ("reply", "I am sorry, I cannot write code today."), ("reply", truncated))
    summary = run_campaign(cfg, progress=False)  # the real static checks see the truncated code
    assert summary.state == "finished"
    cands = Archive.open(cfg.parent / "run").candidates()
    assert cands[0].error["kind"] == "no_code" and cands[0].error["message"] == "empty reply"
    assert cands[1].error["kind"] == "no_code" and cands[1].code_path is None
    assert cands[2].error["kind"] == "syntax" and cands[2].code_path
    fixes = [c for c in cands if c.operator == "fix"]
    assert fixes and fixes[0].parent_ids == ["c0003"]
    fix_prompt = server.requests[int(fixes[0].exchange_id[1:]) - 1]["messages"][-1]["content"]
    assert "## Error feedback\n- kind: syntax" in fix_prompt and "## Parent 1 (id: c0003, score: failed)" in fix_prompt
    # cut off mid-class: the fix prompt says so, and asks for shorter code
    assert "- message: the reply was truncated" in fix_prompt and "write a shorter complete class" in fix_prompt


def test_replay_reproduces_a_run_without_the_llm(server, make_config):
    original = make_config(server, "original", budget=5)
    run_campaign(original, progress=False, evaluate=fake_evaluate)
    asked = len(server.requests)
    replay = make_config(server, "replayed", budget=5, model=f"replay/{original.parent / 'original'}")
    summary = run_campaign(replay, progress=False, evaluate=fake_evaluate)
    assert summary.state == "finished" and len(server.requests) == asked
    assert _digest(replay.parent / "replayed") == _digest(original.parent / "original")
    longer = make_config(server, "longer", budget=7, model=f"replay/{original.parent / 'original'}")
    summary = run_campaign(longer, progress=False, evaluate=fake_evaluate)
    assert summary.state == "stopped" and "recorded exchanges were served" in summary.reason


def test_existing_run_with_other_settings_is_refused(server, make_config):
    cfg = make_config(server, budget=2)
    run_campaign(cfg, progress=False, evaluate=fake_evaluate)
    cfg.write_text(cfg.read_text().replace("seed = 3", "seed = 4"))
    from generator.errors import TunesmithError

    with pytest.raises(TunesmithError, match=r"different settings \(evolution.seed\)"):
        run_campaign(cfg, progress=False, evaluate=fake_evaluate)


def test_prompt_command_shows_what_the_llm_sees(hub_dir, monkeypatch, capsys):
    from generator.cli import main

    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    assert main(["prompt", str(ROOT / "campaigns" / "hub.toml"), "--operator", "fix"]) == 0
    out = capsys.readouterr().out
    for head in (
        "## Task",
        "## Search-space statistics",
        "## Interface",
        "## Parent 1 (id: c0001, score: failed)",
        "## Error feedback",
        "## Instruction (operator: fix)",
    ):
        assert head in out
    assert "### convolution_milo/A100" in out and "### dedispersion_milo/A100" in out


def test_hpo_stage_runs_when_enabled(server, make_config):
    cfg = make_config(
        server, "tuned", budget=3, extra="[hpo]\nenabled = true\ntrials = 2\nrepeats = 1\nreport_repeats = 1\n"
    )
    run_campaign(cfg, progress=False)
    from generator.tuning.results import load_results

    results = load_results(cfg.parent / "tuned")
    assert len(results) == 1  # top_k = 1: the best candidate was tuned, its result written to RUN/hpo/
    best = Archive.open(cfg.parent / "tuned").best(1)[0]
    assert best.id in results


def test_summary_never_calls_the_offline_synthesizer_an_llm(tmp_path):
    from generator.campaign.printing import Summary, format_summary

    usage = {"calls": 3, "tokens": 10, "cost_usd": 0.0}
    text = format_summary(Summary(tmp_path, "finished", "done", 3, 3, usage, model="synth/components"))
    assert "offline synthesizer (no LLM): 3 calls" in text and "LLM synth" not in text
    assert "LLM openai/gpt-4o: 3 calls" in format_summary(
        Summary(tmp_path, "finished", "done", 3, 3, usage, model="openai/gpt-4o")
    )
