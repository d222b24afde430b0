"""The offline synthesizer: litellm provider, prompt reading, operators, and code that runs."""

import ast
import asyncio
import json
import re

import numpy as np
import pytest

import generator  # sets LITELLM_LOCAL_MODEL_COST_MAP before litellm is imported
import generator.llm.synth
from generator.llm.synth.compose import PLAIN, SLOT_OPTIONS, Composition, class_name, read_composition, render
from generator.llm.synth.operators import SAFE, SIMPLER
from generator.llm.synth.parse import parse_prompt
from generator.llm.synth.provider import synthesize

STATS = """## Search-space statistics

### convolution_milo/A100
- size: 4362
- constraint_density: 0.574
- fdc: 0.1056
- local_optima_share: 0.002856
- budget_fevals: 994

### convolution_milo/MI250X
- size: 4362
- constraint_density: 0.574
- fdc: -0.3612
- local_optima_share: 0.006419
- budget_fevals: 42
"""


def prompt(operator: str, parents=(), error=None, existing=()) -> str:
    """A prompt following the heading contract (as the campaign's templates render it)."""
    parts = ["## Task\nTune GPU kernels.\n", STATS, "## Interface\nOne class.\n"]
    for i, (pid, score, code) in enumerate(parents, 1):
        parts.append(
            f"## Parent {i} (id: {pid}, score: {score})\nPer-task scores:\n"
            f"- convolution_milo/A100: 0.7\n- convolution_milo/MI250X: 0.1\n\n```python\n{code}\n```\n"
        )
    if error:
        parts.append("## Error feedback\n" + "".join(f"- {k}: {v}\n" for k, v in error.items()))
    if existing:
        parts.append("## Existing algorithms\n" + "".join(f"- {e}\n" for e in existing))
    parts.append(f"## Instruction (operator: {operator})\nDo it.\n")
    return "\n".join(parts)


def reply_parts(reply: str) -> tuple[str, str]:
    """(description line, code) of a reply."""
    assert reply.startswith("# ")
    code = re.search(r"```python\n(.*?)```", reply, re.S).group(1)
    return reply.splitlines()[0], code


def composition_of(reply: str) -> Composition:
    comp = read_composition(reply_parts(reply)[1])
    assert comp is not None
    return comp


def parent_code(comp: Composition) -> str:
    return render(comp)[2]


BASE = Composition(
    "trajectory",
    {
        "init": "spread",
        "neighbourhood": "Hamming",
        "screening": "knn",
        "acceptance": "late",
        "memory": "tabu",
        "jump": "none",
        "restart": "perturb",
    },
)


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


# ----------------------------------------------------------------------------- operators
def _changes(a: Composition, b: Composition) -> int:
    """Structural and default changes from a to b (a scheme change counts once)."""
    if a.scheme != b.scheme:
        return 1
    slots = sum(a.slots.get(s) != b.slots.get(s) for s in set(a.slots) | set(b.slots))
    hps = sum(a.hp[h] != b.hp[h] for h in set(a.hp) & set(b.hp))
    return slots + hps


@pytest.mark.parametrize("seed", range(8))
def test_refine_changes_one_or_two_parts(seed):
    reply = synthesize(prompt("refine", [("c0003", "0.5", parent_code(BASE))]), seed=seed)
    child = composition_of(reply)
    assert 1 <= _changes(BASE.normalised(), child) <= 2
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


# ----------------------------------------------------------------------------- generated code
def covering_compositions(n: int) -> list[Composition]:
    """n compositions in which every option of every slot appears (rotating choices)."""
    comps = []
    for i in range(n):
        scheme = "trajectory" if i % 2 == 0 else "population"
        slots = {}
        for j, (slot, options) in enumerate(SLOT_OPTIONS.items()):
            names = sorted(options)
            slots[slot] = names[(i // 2 + j) % len(names)]
        if scheme == "population" and i % 4 == 1:
            slots["local_search"] = "memetic"
        comps.append(Composition(scheme, slots).normalised())
    return comps


def optimizer_class(comp: Composition) -> type:
    """The optimizer class the synthesizer renders for a composition."""
    name, _, source = render(comp)
    namespace = {}
    exec(compile(source, name, "exec"), namespace)
    return namespace[name]


def bare_optimizer(space, cache: dict):
    """BASE's optimizer with a space and measurements set as __call__ sets them, no search run: its helpers alone."""
    opt = optimizer_class(BASE)()
    opt.space, opt.cache = space, dict(cache)
    opt.values = [list(v) for v in space.tune_params.values()]
    opt.positions = [{v: i for i, v in enumerate(vals)} for vals in opt.values]
    return opt


def test_compositions_cover_every_component():
    comps = covering_compositions(30)
    used = {(s, v) for c in comps for s, v in c.slots.items()}
    assert used == {(s, v) for s, opts in SLOT_OPTIONS.items() for v in opts}
    assert set(PLAIN) == set(SLOT_OPTIONS)


def test_sources_are_well_formed_and_honest():
    from generator.candidate.checks import check_source

    for comp in covering_compositions(30):
        name, _, source = render(comp, ["a reason"], ['a note with """ quotes'])
        ast.parse(source)
        assert check_source(source) is None, name
        assert "offline synthesizer" in source and "not an LLM" in source
        assert read_composition(source).to_json() == comp.to_json()
        assert class_name(comp) == name


def test_thirty_compositions_run_on_a_hub_task(hub_tasks):
    from generator.scoring.oracle import Oracle
    from generator.scoring.score import Budget
    from generator.tasks.space import SearchSpace

    task = next(t for t in hub_tasks if t.name == "convolution_milo/MI250X")
    space = SearchSpace(task.space)
    for i, comp in enumerate(covering_compositions(30)):
        cls = optimizer_class(comp)
        name = cls.__name__
        np.random.seed(i)
        space.seed(i)
        oracle = Oracle(task, Budget(seconds=1e9, max_fevals=60), space)
        best, value = cls(budget=5000)(oracle, space)
        assert oracle.fevals == 60, name  # it used the whole budget, then stopped cleanly
        # the evaluation that spent the budget is recorded but never answered, so the oracle may know better
        assert best is not None and oracle.best()[1] <= value < 1e300, name


def test_optimizers_stop_when_the_space_is_exhausted():
    from generator.tasks.cache import SpaceSpec
    from generator.tasks.space import SearchSpace

    valid = np.array([(a, b) for a in range(3) for b in range(4) if (a + b) % 3], dtype=np.int32)
    spec = SpaceSpec({"x": [1, 2, 3], "y": [10, 20, 30, 40]}, (), valid)
    rng = np.random.default_rng(0)
    for comp in covering_compositions(12):
        cls = optimizer_class(comp)
        seen = set()

        def func(cfg, seen=seen):  # bound now: the loop rebinds `seen` for the next composition
            seen.add(tuple(cfg))
            return float(rng.random())

        cls()(func, SearchSpace(spec, np.random.default_rng(1)))
        assert len(seen) == len(valid), cls.__name__


def test_quickstart_prompt_reply_is_extracted_and_passes_checks(hub_dir):
    from generator.campaign.run import render_prompt
    from generator.candidate.checks import check_source
    from generator.llm.prompts import extract_reply

    messages = render_prompt("campaigns/quickstart.toml", "new")
    reply = extract_reply(synthesize("\n\n".join(m["content"] for m in messages), seed=1))
    assert reply.code and check_source(reply.code) is None
    assert json.loads(reply.code.splitlines()[0].split(":", 1)[1])["v"] == 1
    assert reply.description and not reply.description.startswith("tunesmith-synth")


def diff_prompt(operator, parents, error=None):
    return prompt(operator, parents, error).replace(f"(operator: {operator})", f"(operator: {operator}, answer: diff)")


def test_asked_for_a_diff_the_synthesizer_answers_blocks_that_apply():
    from generator.llm.edits import apply_reply

    code, diffs = parent_code(BASE), 0
    for seed in range(6):
        for op in ("refine", "simplify"):
            reply = synthesize(diff_prompt(op, [("c0003", "0.5", code)]), seed=seed)
            out = apply_reply(reply, code)
            if out.blocks == 0:  # a rewrite (e.g. a new scheme) is answered with the whole class
                child = composition_of(reply)
            else:
                assert out.error is None and "```python" not in reply
                child = read_composition(out.code)  # the edited parent is a whole optimizer again
                assert len(reply) < len(out.code)
                diffs += 1
            assert 1 <= _changes(BASE.normalised(), child) <= 2
    assert diffs >= 8


def test_crossover_combines_the_components_of_both_parents():
    other = Composition(
        "trajectory",
        {
            "init": "random",
            "neighbourhood": "adjacent",
            "screening": "none",
            "acceptance": "annealing",
            "memory": "visited",
            "jump": "random",
            "restart": "random",
        },
    ).normalised()
    base = BASE.normalised()
    mixed = 0
    for seed in range(8):
        reply = synthesize(
            prompt("crossover", [("c0003", "0.5", parent_code(base)), ("c0004", "0.4", parent_code(other))]), seed=seed
        )
        child = composition_of(reply).normalised()
        assert "crossed" in reply
        assert child.key() not in (base.key(), other.key())
        from_a = sum(child.slots.get(s) == base.slots.get(s) != other.slots.get(s) for s in child.active_slots())
        from_b = sum(child.slots.get(s) == other.slots.get(s) != base.slots.get(s) for s in child.active_slots())
        mixed += from_a > 0 and from_b > 0
    assert mixed >= 6  # parts of both parents, nearly always


def test_crossover_without_two_synthesizer_parents_falls_back_to_new():
    reply = synthesize(prompt("crossover", [("c0003", "0.5", parent_code(BASE))]), seed=1)
    assert "crossover fell back to a new design" in reply


def test_crossover_never_takes_every_differing_slot():
    """Taking all the slots the parents differ in would return the donor's design (a false duplicate)."""
    import random

    from generator.llm.synth.operators import crossover
    from generator.llm.synth.parse import Parent, Request
    from generator.llm.synth.profile import Profile

    a = Composition("trajectory", dict(BASE.slots, jump="none", restart="perturb")).normalised()
    b = Composition("trajectory", dict(BASE.slots, jump="random", restart="random")).normalised()
    req = Request("crossover", parents=[Parent("c0001", 0.5, "", a), Parent("c0002", 0.4, "", b)])
    for seed in range(64):  # both slots taken by chance one time in four, before
        child = crossover(req, Profile(), random.Random(seed)).composition
        assert (child.slots["jump"], child.slots["restart"]) not in (("none", "perturb"), ("random", "random"))


def test_repair_moves_an_invalid_configuration_to_its_closest_valid_neighbour():
    """Histogram's restriction `use_shared == 1 or replicas == 1`: (use_shared 0, replicas 8) is one step from
    (1, 8) and three from (0, 1). A random neighbour (before) put half of such repairs in the small, slow
    use_shared=0 region."""
    from generator.tasks.cache import SpaceSpec
    from generator.tasks.space import SearchSpace

    shared, replicas = [0, 1], [1, 2, 4, 8, 16]
    valid = np.array([(s, r) for s in range(2) for r in range(5) if s == 1 or r == 0], dtype=np.int32)
    opt = bare_optimizer(SearchSpace(SpaceSpec({"use_shared": shared, "replicas": replicas}, (), valid)), {})
    repaired = set()
    for seed in range(32):
        opt.rng = np.random.default_rng(seed)
        repaired.add(opt.repair((0, 8)))
    assert repaired == {(1, 8)}
    opt.cache = {(1, 8): 1.0}  # the closest is visited: the other Hamming neighbour, however far
    assert {opt.repair((0, 8)) for _ in range(8)} == {(0, 1)}


def test_random_unvisited_draws_until_it_has_as_many_as_asked():
    """A model screens global_pool random unvisited probes; before, one visited configuration among the first
    draws left it fewer to choose from."""
    from generator.tasks.cache import SpaceSpec
    from generator.tasks.space import SearchSpace

    valid = np.arange(20, dtype=np.int32).reshape(-1, 1)
    space = SearchSpace(SpaceSpec({"x": list(range(20))}, (), valid))
    opt = bare_optimizer(space, {(x,): 1.0 for x in range(10)})
    for seed in range(32):
        space.seed(seed)
        pool = opt.random_unvisited(8)
        assert len(set(pool)) == 8 and not set(pool) & set(opt.cache)
    assert len(opt.random_unvisited(12)) == 10  # fewer only when fewer are left
