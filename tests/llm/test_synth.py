"""The offline synthesizer: litellm provider, prompt reading, operators, and code that runs."""

import ast
import asyncio

import pytest
from support.synth_prompts import BASE, composition_of, parent_code, prompt, reply_parts, slot_changes

import generator  # sets LITELLM_LOCAL_MODEL_COST_MAP before litellm is imported
import generator.llm.synth
from generator.llm.synth.compose import render
from generator.llm.synth.operators import SAFE, SIMPLER
from generator.llm.synth.parse import parse_prompt
from generator.llm.synth.provider import synthesize


# ----------------------------------------------------------------------------- provider
def test_litellm_completion_answers_with_code_tokens_and_zero_cost():
    import litellm

    generator.llm.synth.register()
    generator.llm.synth.register()  # idempotent: one entry, other providers untouched
    assert sum(1 for p in litellm.custom_provider_map if p["provider"] == "synth") == 1
    r = litellm.completion(model="synth/components", messages=[{"role": "user", "content": prompt("new")}], seed=3)
    text = r.choices[0].message.content
    _, code = reply_parts(text)
    ast.parse(code)
    assert r.usage.prompt_tokens > 50 and r.usage.completion_tokens > 500
    assert r._hidden_params["response_cost"] == 0.0
    assert litellm.completion_cost(completion_response=r) == 0.0
    r2 = asyncio.run(litellm.acompletion(model="synth/components", messages=[{"role": "user", "content": "x"}], seed=3))
    assert "```python" in r2.choices[0].message.content


def test_campaign_llm_client_records_zero_cost():
    from generator.config import LLMConfig
    from generator.llm.client import LLMClient

    client = LLMClient(LLMConfig(model="synth/components", seed=1))
    ex = client.complete([{"role": "user", "content": prompt("new")}], purpose="test")
    assert ex.ok and "```python" in ex.reply
    assert ex.cost_usd == 0.0 and client.usage.cost_usd == 0.0 and ex.completion_tokens > 0


def test_unknown_synth_model_is_an_error():
    import litellm

    generator.llm.synth.register()
    with pytest.raises(Exception, match="synth/components"):
        litellm.completion(model="synth/other", messages=[{"role": "user", "content": "x"}])


def test_same_prompt_twice_through_provider_gives_two_designs():
    import litellm

    from generator.llm.synth.provider import SynthLLM

    handler = SynthLLM()
    replies = []
    for _ in range(2):
        resp = litellm.ModelResponse()
        replies.append(
            handler.completion(
                "components",
                [{"role": "user", "content": prompt("new")}],
                None,
                {},
                resp,
                print,
                None,
                None,
                None,
                {"seed": 1},
            )
            .choices[0]
            .message.content
        )
    assert replies[0] != replies[1]


def test_deterministic_for_seed_and_diverse_across_seeds():
    text = prompt("new")
    assert synthesize(text, seed=5) == synthesize(text, seed=5)
    names = {reply_parts(synthesize(text, seed=s))[0].split(":")[0] for s in range(12)}
    assert len(names) >= 8


# ----------------------------------------------------------------------------- reading the prompt
def test_parse_reads_operator_stats_parents_error_and_existing():
    code = parent_code(BASE)
    req = parse_prompt(
        prompt(
            "fix",
            [("c0007", "0.4321", code)],
            {"kind": "exception", "message": "boom", "line": "x = 1"},
            ["c0001 (score 0.1): A"],
        )
    )
    assert req.operator == "fix"
    assert req.stats["budget_fevals"] == pytest.approx((994 + 42) / 2)
    assert set(req.task_stats) == {"convolution_milo/A100", "convolution_milo/MI250X"}
    assert req.parents[0].id == "c0007" and req.parents[0].score == pytest.approx(0.4321)
    assert req.parents[0].per_task["convolution_milo/MI250X"] == pytest.approx(0.1)
    assert req.parents[0].composition.key() == BASE.normalised().key()
    assert (req.error.kind, req.error.message, req.error.line) == ("exception", "boom", "x = 1")
    assert req.existing == ["c0001 (score 0.1): A"]


def test_statistics_steer_the_design_and_are_quoted():
    tiny = "## Search-space statistics\n- budget_fevals: 30\n- fdc: 0.3\n## Instruction (operator: new)\n"
    big = (
        "## Search-space statistics\n- budget_fevals: 3000\n- fdc: -0.2\n- local_optima_share: 0.02\n"
        "## Instruction (operator: new)\n"
    )
    tiny_comps = [composition_of(synthesize(tiny, seed=s)) for s in range(20)]
    big_comps = [composition_of(synthesize(big, seed=s)) for s in range(20)]
    assert sum(c.scheme == "trajectory" for c in tiny_comps) > sum(c.scheme == "trajectory" for c in big_comps)
    assert "budget_fevals 30" in synthesize(tiny, seed=0)
    sizes = [c.hp["init_size"] for c in tiny_comps if "init_size" in c.hp]
    assert sizes and max(sizes) <= 4  # tiny budget: a small initial sample


@pytest.mark.parametrize("seed", range(8))
def test_refine_changes_one_or_two_parts(seed):
    reply = synthesize(prompt("refine", [("c0003", "0.5", parent_code(BASE))]), seed=seed)
    child = composition_of(reply)
    assert 1 <= slot_changes(BASE.normalised(), child) <= 2
    assert "refined c0003" in reply


@pytest.mark.parametrize("seed", range(6))
def test_simplify_removes_one_component(seed):
    parent = BASE.normalised()
    child = composition_of(synthesize(prompt("simplify", [("c0003", "0.5", parent_code(parent))]), seed=seed))
    changed = [s for s in parent.slots if parent.slots[s] != child.slots.get(s)]
    assert len(changed) == 1
    slot = changed[0]
    assert SIMPLER[slot][parent.slots[slot]] == child.slots[slot]
    assert len(child.hyperparameter_names()) <= len(parent.hyperparameter_names())
    assert len(render(child)[2]) < len(render(parent)[2])


def test_fix_replaces_the_failing_component():
    error = {
        "kind": "exception",
        "message": "IndexError: index out of range",
        "line": "nearest = np.argpartition(dist, k - 1, axis=1)[:, :k]  (in choose)",
    }
    child = composition_of(synthesize(prompt("fix", [("c0009", "failed", parent_code(BASE))], error), seed=1))
    assert child.slots["screening"] == "none"
    assert {s: v for s, v in child.slots.items() if s != "screening"} == {
        s: v for s, v in BASE.normalised().slots.items() if s != "screening"
    }


def test_fix_timeout_makes_the_optimizer_cheaper():
    child = composition_of(
        synthesize(
            prompt(
                "fix", [("c0009", "failed", parent_code(BASE))], {"kind": "timeout", "message": "took longer than 60 s"}
            ),
            seed=1,
        )
    )
    assert child.slots["screening"] == "none"


def test_fix_of_foreign_code_patches_imports_or_falls_back():
    foreign = "class Mine:\n    def __call__(self, func, searchspace):\n        return np.zeros(3)\n"
    reply = synthesize(
        prompt(
            "fix",
            [("c0002", "failed", foreign)],
            {"kind": "exception", "message": "NameError: name 'np' is not defined"},
        ),
        seed=1,
    )
    _, code = reply_parts(reply)
    assert code.startswith("import numpy as np") and "class Mine" in code
    reply = synthesize(
        prompt("fix", [("c0002", "failed", foreign)], {"kind": "syntax", "message": "SyntaxError: invalid syntax"}),
        seed=1,
    )
    assert composition_of(reply).key() == SAFE.normalised().key()
    assert "not written by the offline synthesizer" in reply


def test_refine_of_foreign_code_falls_back_to_new_with_a_note():
    foreign = "class Mine:\n    def __call__(self, func, searchspace):\n        pass\n"
    reply = synthesize(prompt("refine", [("c0002", "0.2", foreign)]), seed=1)
    assert composition_of(reply) is not None and "fell back to a new design" in reply


def test_new_differs_from_existing_algorithms():
    text = prompt("new")
    names = [reply_parts(synthesize(text, seed=s))[0] for s in range(6)]
    existing = [f"c{i:04d} (score 0.5): {n[2:]}" for i, n in enumerate(names)]
    for seed in range(6):
        line, _ = reply_parts(synthesize(prompt("new", existing=existing), seed=seed))
        assert line.split(":")[0][2:] not in {n.split(":")[0][2:] for n in names}


def test_chains_of_operators_keep_writing_valid_optimizers():
    import random

    from generator.candidate.checks import check_source

    rng = random.Random(0)
    for chain in range(10):
        reply = synthesize(prompt("new"), seed=chain)
        for step in range(10):
            op = rng.choice(["refine", "refine", "simplify", "fix"])
            error = (
                {
                    "kind": rng.choice(["exception", "timeout"]),
                    "message": "x",
                    "line": rng.choice(["choose", "accept", "restart", "mutate", ""]),
                }
                if op == "fix"
                else None
            )
            reply = synthesize(prompt(op, [("c1", "0.5", reply_parts(reply)[1])], error), seed=step)
            assert check_source(reply_parts(reply)[1]) is None, reply.splitlines()[0]
