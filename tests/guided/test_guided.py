"""LLM-guided tuning: reading replies, checking proposals, rounds with feedback, the synthesizer's
proposals, hybrids (in-process and sandboxed), bench, campaigns and replay; all offline."""

import json

import numpy as np
import pytest

from generator.bench.kt_simulation import StrategyError
from generator.bench.runner import parse_strategy, run_once
from generator.config import GuidedConfig, LLMConfig
from generator.guided import run as guided
from generator.guided.prompt import check_proposal, parse_reply
from generator.llm.client import LLMClient
from generator.scoring.oracle import Oracle
from generator.scoring.score import Budget, budget_for
from generator.scoring.seeding import SeededSpace
from generator.tasks.space import SearchSpace


@pytest.fixture(scope="module")
def task(hub_tasks):
    """convolution MI250X: restrictions, failed configurations, a budget of a few dozen evaluations."""
    return next(t for t in hub_tasks if t.name == "convolution_milo/MI250X")


def mock_client(replies):
    """An LLMClient answering from a list with litellm's own offline mock_response; records prompts."""
    import litellm

    it = iter(replies)
    sent = []

    def completion(**kw):
        sent.append(kw["messages"])
        return litellm.completion(**{**kw, "mock_response": next(it)})

    client = LLMClient(LLMConfig(model="openai/gpt-4o-mini"), completion=completion)
    return client, sent


def config_dict(task, row):
    return dict(zip(task.space.tune_params, SearchSpace(task.space).config_of(row)))


def working_rows(task, n):
    """The first n rows that did not fail (a failed one would not count as an improvement)."""
    return [int(r) for r in np.flatnonzero(~task.key.failed)[:n]]


# ---------------------------------------------------------------- reading replies


def test_parse_reply_finds_json_in_prose_fences_and_python_literals():
    fenced = 'Reasoning first.\n```json\n[{"a": 1}, {"a": 2}]\n```\nThanks!'
    assert parse_reply(fenced) == ([{"a": 1}, {"a": 2}], None)
    assert parse_reply('Sure: [{"a": 1}] hope it helps')[0] == [{"a": 1}]
    assert parse_reply("```python\n[{'a': 1, 'b': True}]\n```")[0] == [{"a": 1, "b": True}]
    assert parse_reply('{"configurations": [{"a": 3}]}')[0] == [{"a": 3}]
    assert parse_reply('{"a": 1}\n{"a": 2}\n')[0] == [{"a": 1}, {"a": 2}]  # JSON lines
    assert parse_reply("[[1, 2, 3]]")[0] == [[1, 2, 3]]  # values in parameter order


@pytest.mark.parametrize(
    "reply, why",
    [
        ("", "empty"),
        (None, "empty"),
        ("I would try bigger blocks.", "no JSON"),
        ('```json\n[{"a": 1,, }\n```', "no JSON"),
    ],
)
def test_parse_reply_says_why_nothing_was_read(reply, why):
    items, problem = parse_reply(reply)
    assert items == [] and why in problem


def test_check_proposal_names_the_problem(task):
    space = SearchSpace(task.space)
    good = config_dict(task, 0)
    assert check_proposal(good, task, space) == (space.config_of(0), None)
    as_strings = {k: str(v) for k, v in good.items()}  # "32" stands for 32
    assert check_proposal(as_strings, task, space)[0] == space.config_of(0)
    assert check_proposal(list(good.values()), task, space)[0] == space.config_of(0)
    assert "block_size_x = 17" in check_proposal({**good, "block_size_x": 17}, task, space)[1]
    assert "unknown parameter" in check_proposal({**good, "warp_size": 32}, task, space)[1]
    missing = dict(good)
    missing.pop("block_size_y")
    assert "block_size_y is missing" in check_proposal(missing, task, space)[1]
    bad = {**good, "block_size_x": 256, "block_size_y": 16}  # 4096 threads
    assert "block_size_x*block_size_y<=1024" in check_proposal(bad, task, space)[1]
    assert "not an object" in check_proposal("fast one", task, space)[1]


# ---------------------------------------------------------------- rounds with feedback


def test_rounds_evaluate_valid_proposals_once_and_feed_back_the_rest(task, monkeypatch):
    """Through a real HTTP round trip (the local fake server): malformed, empty, out-of-space, duplicates."""
    from support.fake_llm_server import FakeLLMServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-guided-key-0123456789")
    space = SearchSpace(task.space)
    ra, rb = working_rows(task, 2)
    a, b = config_dict(task, ra), config_dict(task, rb)
    with FakeLLMServer() as srv:
        srv.push(
            (
                "reply",
                "Let me think... ```json\n[" + json.dumps(a) + ", " + json.dumps({**b, "block_size_x": 17}) + "]\n```",
            ),
            ("reply", "not JSON at all"),
            ("empty",),
            ("reply", "```json\n[" + json.dumps(a) + ", " + json.dumps(b) + ", " + json.dumps(b) + "]\n```"),
        )
        client = LLMClient(LLMConfig(model="openai/fake", api_base=srv.base_url, retries=0))
        oracle = Oracle(task, budget_for(task), space)
        settings = GuidedConfig(batch=3, max_rounds=4, patience=10)
        result = guided.guide(task, oracle, client, settings, seed=1, ref="t")
        sent = [body["messages"] for body in srv.requests]
    assert [r.evaluated for r in result.rounds] == [1, 0, 0, 1]  # a once, then b once (its twin is a duplicate)
    assert [r.invalid for r in result.rounds] == [1, 0, 0, 0]
    assert result.rounds[3].duplicates == 2
    assert oracle.trace().rows.tolist() == [ra, rb]
    second, third, fourth = (m[1]["content"] for m in sent[1:4])
    assert "block_size_x = 17 is not one of its values" in second and "## Results so far" in second
    assert json.dumps({"config": a})[:-1] in second  # the measured configuration is shown with its result
    assert "no JSON list of configurations" in third
    assert "the reply was empty" in fourth
    assert result.reason == "4 rounds done"


def test_patience_stops_rounds_without_improvement(task):
    a = config_dict(task, working_rows(task, 1)[0])
    client, sent = mock_client(["```json\n[" + json.dumps(a) + "]\n```"] * 10)
    oracle = Oracle(task, budget_for(task), SearchSpace(task.space))
    result = guided.guide(task, oracle, client, GuidedConfig(patience=2, max_rounds=10), seed=0, ref="p")
    assert len(result.rounds) == 3 and "patience" in result.reason
    assert '"reason": "already evaluated (time ' in sent[2][1]["content"]  # the repeat is shown back
    client, _ = mock_client(["```json\n[" + json.dumps(a) + "]\n```"] * 10)
    oracle = Oracle(task, budget_for(task), SearchSpace(task.space))
    result = guided.guide(task, oracle, client, GuidedConfig(patience=100, max_rounds=10), seed=0, ref="q")
    assert len(result.rounds) == 1 + guided.BARREN_ROUNDS and "nothing new" in result.reason


def test_budget_end_stops_mid_batch(task):
    client, _ = mock_client(["```json\n" + json.dumps([config_dict(task, r) for r in range(8)]) + "\n```"])
    oracle = Oracle(task, Budget(budget_for(task).seconds, 5), SearchSpace(task.space))
    result = guided.guide(task, oracle, client, GuidedConfig(batch=8), seed=0, ref="b")
    assert oracle.fevals == 5 and result.reason == "budget spent"


# ---------------------------------------------------------------- the offline synthesizer


def test_synthesizer_proposes_valid_new_configurations_deterministically(task):
    run = guided.run_guided(task, {"batch": 6, "max_rounds": 3, "patience": 5}, seed=3, budget=budget_for(task))
    again = guided.run_guided(task, {"batch": 6, "max_rounds": 3, "patience": 5}, seed=3, budget=budget_for(task))
    other = guided.run_guided(task, {"batch": 6, "max_rounds": 3, "patience": 5}, seed=4, budget=budget_for(task))
    assert run.rows.tolist() == again.rows.tolist() != other.rows.tolist()
    assert len(set(run.rows.tolist())) == run.rows.size >= 12  # valid (rows exist), new, nothing twice


def test_synthesizer_reply_reads_like_an_llm_answer(task):
    from generator.guided.prompt import GuidedPromptBuilder
    from generator.llm.synth import synthesize

    history = guided._History(task, Oracle(task, budget_for(task), SearchSpace(task.space)))
    prompt = GuidedPromptBuilder(task).messages(history.view(GuidedConfig()), 5, 0, 0.0, None)
    reply = synthesize(prompt[0]["content"] + "\n\n" + prompt[1]["content"], seed=1)
    assert reply.startswith("# Proposals:") and "Latin hypercube" in reply
    items, problem = parse_reply(reply)
    space = SearchSpace(task.space)
    assert problem is None and len(items) == 5 and all(check_proposal(i, task, space)[1] is None for i in items)


# ---------------------------------------------------------------- hybrids


def test_seeded_space_hands_out_seeds_best_first_then_random(task):
    space = SearchSpace(task.space)
    space.seed(0)
    seeded = SeededSpace(space, [7, 3, 5])
    first = seeded.get_random_sample(2)
    assert first == [space.config_of(7), space.config_of(3)]
    second = seeded.get_random_sample(4)
    assert second[0] == space.config_of(5) and len(set(second)) == 4
    assert seeded.tune_params == space.tune_params and seeded.get_neighbors(first[0]) == space.get_neighbors(first[0])


def test_hybrid_starts_from_the_seeds_in_process_and_in_the_sandbox(task):
    from generator.evaluation.evaluate import evaluate_source
    from generator.evaluation.runs import run_seed

    walker = "tests/data/strategies/random_walk.py"
    spec = parse_strategy(f"llm_guided:batch=6+{walker}")
    assert spec.seeder.kind == "llm_guided" and spec.kind == "class"
    budget = budget_for(task)
    seeds = guided.seed_stage(task, {"batch": 6}, run_seed(0, 0), budget)
    assert len(seeds.rows) == 6 and sorted(seeds.rows) == sorted(seeds.ranked)
    trace = run_once(task, spec, run_seed(0, 0), budget)
    assert trace.rows[:6].tolist() == list(seeds.rows)
    fitness = evaluate_source(open(walker).read(), [task], repeats=1, seed=0, seeds={(0, 0): seeds})
    assert fitness.error is None
    alone = run_once(task, parse_strategy(walker), run_seed(0, 0), budget)
    from generator.scoring.score import score_traces

    assert fitness.per_task[task.name].per_repeat == score_traces(task, [trace]).per_repeat
    assert alone.rows[:6].tolist() != list(seeds.rows)


SEED_SNOOP = """
import sys


class SeedSnoop:
    # reports every seed list it can reach from its caller's frames, and the order its space hands
    # its own seeds over in before and after ranking them, as its error message

    def __call__(self, func, searchspace):
        found = set()
        frame = sys._getframe().f_back
        while frame is not None:
            for name, value in dict(frame.f_locals).items():
                if isinstance(value, dict) and "seeds" in value:
                    value = value["seeds"]
                elif name not in ("seeds", "ranked"):
                    continue
                items = value.values() if isinstance(value, dict) else [value]
                for item in items:
                    if isinstance(item, (list, tuple)):
                        found.update(int(r) for r in item)
            frame = frame.f_back
        handed = list(searchspace._pending)
        first = [searchspace.configs.index(c) for c in searchspace.get_random_sample(len(handed))]
        raise RuntimeError(f"found={sorted(found)} handed={handed} first={first}")
"""


def test_a_hybrid_run_receives_its_own_seeds_only_and_unranked(task):
    """Issue 39: a run's payload carried every run's seeds, best first; a candidate read them from its
    caller's frame. Now its own seeds reach it alone, in evaluation order; func ranks them."""
    import re

    from generator.evaluation.evaluate import evaluate_source
    from generator.scoring.seeding import SeedRun

    valid = np.flatnonzero(np.isfinite(task.key.values))
    mine, other = [int(r) for r in valid[:4]], [int(r) for r in valid[-4:]]
    by_value = sorted(mine, key=lambda r: task.key.values[r])
    if by_value == mine:  # evaluation order must differ from the ranking for the check to mean anything
        mine = mine[::-1]
        by_value = sorted(mine, key=lambda r: task.key.values[r])
    seeds = {
        (0, 0): SeedRun(tuple(mine), tuple(by_value)),
        (0, 1): SeedRun(tuple(other), tuple(sorted(other, key=lambda r: task.key.values[r]))),
    }
    fit = evaluate_source(SEED_SNOOP, [task], repeats=2, seed=0, seeds=seeds)
    message = fit.error.message
    found, handed, first = (
        json.loads(m) for m in re.search(r"found=(\[.*?\]) handed=(\[.*?\]) first=(\[.*?\])", message).groups()
    )
    assert not set(found) & set(other), message  # no other run's seeds anywhere in its frames
    assert handed == mine  # in the order evaluated, not ranked by the answer key
    assert first == by_value  # the run's own answers rank them: hybrids start from the best seed, as before


def test_hybrid_of_a_kernel_tuner_builtin_starts_from_the_seeds(task):
    trace = run_once(task, parse_strategy("llm_guided:batch=4+genetic_algorithm"), 5, budget_for(task))
    seeds = guided.seed_stage(task, {"batch": 4}, 5, budget_for(task))
    assert trace.rows[:4].tolist() == list(seeds.rows)
    with pytest.raises(StrategyError, match="cannot start from seeds"):
        parse_strategy("llm_guided+bayes_opt")
    with pytest.raises(StrategyError, match="once"):
        parse_strategy("llm_guided+llm_guided")


# ---------------------------------------------------------------- bench, replay, campaigns


def test_bench_cli_runs_llm_guided_and_hybrids_and_replays_them(task, tmp_path, capsys):
    from generator.cli import main

    src = str(task.source)
    rec, out = tmp_path / "rec", tmp_path / "b.json"
    args = [
        "bench",
        "--tasks",
        src,
        "--strategies",
        "random_sample,llm_guided:batch=8",
        "--seed-with",
        "llm_guided:batch=4",
        "--repeats",
        "2",
        "--workers",
        "2",
        "--no-progress",
        "--record",
        str(rec),
    ]
    assert main(args + ["--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "llm_guided:batch=4+random_sample" in text and "offline synthesizer (no LLM) (" in text  # not "LLM"
    first = json.loads(out.read_text())["results"]
    lines = (rec / "exchanges.jsonl").read_text().splitlines()
    assert lines and all(json.loads(x)["purpose"].startswith("llm_guided") for x in lines)
    # replayed from the recording: the same proposals, hence the same scores, without asking again
    assert main(args[:-2] + ["--model", f"replay/{rec}", "--json", str(out)]) == 0
    replayed = json.loads(out.read_text())["results"]
    assert {k: v["score"] for k, v in first.items()} == {k: v["score"] for k, v in replayed.items()}
    assert main(["bench", "--tasks", src, "--strategies", "llm_guided:bogus=1", "--repeats", "1"]) == 2
    assert "llm_guided option bogus" in capsys.readouterr().err


def test_campaign_seeds_every_evaluation_and_records_the_exchanges(tmp_path, hub_dir, monkeypatch):
    from generator.archive import Archive
    from generator.campaign.run import run_campaign

    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'''name = "seeded"
[llm]
model = "synth/components"
seed = 1
[evolution]
n_parents = 1
n_offspring = 1
budget = 2
[tasks]
train = ["hub:convolution_milo/MI250X"]
[evaluation]
repeats = 2
timeout = 20
[llm_guided]
seed_rounds = 1
batch = 5
[output]
run_dir = "{tmp_path / "run"}"
''')
    summary = run_campaign(cfg, progress=False)
    assert summary.state == "finished"
    ex = Archive.open(tmp_path / "run").exchanges()
    seeds = [e for e in ex if e.purpose == "llm_guided:seed"]
    assert sorted(e.ref for e in seeds) == ["seed:convolution_milo/MI250X:0:1", "seed:convolution_milo/MI250X:1:1"]
    # one exchange per candidate; a near-copy asked again adds its own exchange (ref "cNNNN:reask")
    assert sum(e.purpose.startswith("generate") and not e.ref.endswith(":reask") for e in ex) == 2


@pytest.mark.skipif(__import__("shutil").which("g++") is None, reason="g++ not on PATH: the C problem cannot run live")
def test_llm_guided_on_a_live_task_shows_the_measured_results(tmp_path, capsys):
    """The CPU problem (Kernel Tuner's C backend) measured for real: the second prompt holds the first results."""
    from generator.cli import main

    rec = tmp_path / "rec"
    assert (
        main(
            [
                "bench",
                "--tasks",
                "live:matmul_c,fevals=3",
                "--strategies",
                "llm_guided:batch=2",
                "--repeats",
                "1",
                "--no-progress",
                "--record",
                str(rec),
            ]
        )
        == 0
    )
    assert "matmul_c" in capsys.readouterr().out
    exchanges = [json.loads(x) for x in (rec / "exchanges.jsonl").read_text().splitlines()]
    assert len(exchanges) == 2 and "Nothing has been evaluated yet" in exchanges[0]["messages"][1]["content"]
    assert "2 configurations evaluated" in exchanges[1]["messages"][1]["content"]


def test_a_run_made_before_the_llm_guided_section_continues_while_it_keeps_its_defaults():
    from generator.config import blocking_changes, parse_config

    new = parse_config({"tasks": {"train": ["hub:convolution_milo/A100"]}}).model_dump()
    old = {k: v for k, v in new.items() if k != "llm_guided"}
    assert blocking_changes(old, new) == []
    seeded = parse_config({"tasks": {"train": ["hub:convolution_milo/A100"]}, "llm_guided": {"seed_rounds": 1}})
    assert blocking_changes(old, seeded.model_dump()) == ["llm_guided"]


def test_a_model_without_its_key_writes_no_record_directory(tmp_path, monkeypatch, capsys):
    """`bench ... --model openai/gpt-4o-mini --record DIR` without the key said so in one line, but had already
    made DIR a run directory (config.json, run.json, code/): nothing half-written on a refusal."""
    from generator.cli import main

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    record = tmp_path / "guided"
    code = main(
        [
            "bench",
            "--tasks",
            "problem:gemm/H200",
            "--strategies",
            "llm_guided",
            "--repeats",
            "1",
            "--model",
            "openai/gpt-4o-mini",
            "--record",
            str(record),
        ]
    )
    assert code == 2 and "OPENAI_API_KEY" in capsys.readouterr().err
    assert not record.exists()
