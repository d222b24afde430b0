"""Near-copies: normalised code, similarity, copies not evaluated, near-copies asked again once,
and the archive's diversity per generation in `status` and in the report."""

import time

import pytest
from support.campaign_fakes import fake_evaluate
from support.fake_llm_server import FakeLLMServer

from generator.archive import Archive
from generator.campaign.diversity import diversity_by_generation, format_diversity
from generator.campaign.novelty import Shape, ShapeIndex, similarity
from generator.campaign.printing import format_status
from generator.campaign.run import run_campaign

A = '''import numpy as np


class Descent:
    """Greedy descent from random samples."""

    hyperparameters = {"batch": {"type": "int", "low": 2, "high": 64, "default": 8}}

    def __init__(self, budget=5000, batch=8):
        self.budget = budget
        self.batch = batch

    def __call__(self, func, searchspace):
        best, best_value = None, float("inf")
        while True:
            # a batch of random configurations; keep the best
            for config in searchspace.get_random_sample(self.batch):
                value = func(config)
                if value < best_value:
                    best, best_value = config, value
            for config in searchspace.get_neighbors(best, neighbor_method="Hamming"):
                value = func(config)
                if value < best_value:
                    best, best_value = config, value
        return np.argmin([best_value])
'''


# the same program: other names it chooses itself, docstring, comments and layout
RENAMED = (
    A.replace("Descent", "HillClimber")
    .replace("best_value", "incumbent")
    .replace("config", "candidate")
    .replace("import numpy as np", "import numpy as xp")
    .replace("np.argmin", "xp.argmin")
    .replace("Greedy descent from random samples.", "Climbs hills.")
    .replace("    # a batch of random configurations; keep the best\n", "")
    .replace(
        '        best, best_value = None, float("inf")\n',
        '        best, best_value = (None,\n                            float("inf"))\n',
    )
)


# the same structure, but not the same program: each changes what it does (issue 22, item 3)
NOT_COPIES = {
    "another default": A.replace('"default": 8', '"default": 32').replace("batch=8", "batch=32"),
    "another neighbour method": A.replace('"Hamming"', '"strictly-adjacent"'),
    "another hyperparameter name": A.replace("batch", "width"),  # Optuna and the loader pass it by name
    "another constant in the code": A.replace('float("inf")', 'float("1e300")'),
    "another __init__ argument": A.replace("budget=5000, batch=8", "max_budget=5000, batch=8").replace(
        "self.budget = budget", "self.budget = max_budget"
    ),
    "another attribute": A.replace("self.batch = batch", "self.width = batch"),
}


TWEAKED = A.replace(
    "if value < best_value:\n                    best, best_value = config, value\n        return",
    "if value <= best_value:\n                    best, best_value = config, value\n        return",
)


OTHER = """import random


class Walk:
    hyperparameters = {}

    def __init__(self, budget=5000):
        self.budget = budget

    def __call__(self, func, searchspace):
        current = searchspace.get_random_sample(1)[0]
        seen = set()
        while True:
            moves = [c for c in searchspace.get_neighbors(current, neighbor_method="adjacent") if tuple(c) not in seen]
            if not moves:
                current = searchspace.get_random_sample(1)[0]
                continue
            current = random.choice(moves)
            seen.add(tuple(current))
            func(current)
"""


THIRD = OTHER.replace('neighbor_method="adjacent"', 'neighbor_method="Hamming"').replace(
    "            current = random.choice(moves)\n",
    "            moves.sort(key=lambda c: random.random())\n            current = moves[0]\n",
)


def test_normalised_code_ignores_chosen_names_docstrings_comments_and_layout():
    a, renamed = Shape.of(A), Shape.of(RENAMED)
    assert RENAMED != A and a.fingerprint == renamed.fingerprint and similarity(a, renamed) == 1.0
    for change in (A.replace("argmin", "argmax"), TWEAKED, A.replace('"Hamming"', '"Hamming", ') + "\n"):
        other = Shape.of(change)
        if change.endswith("\n\n"):  # only layout changed
            assert other.fingerprint == a.fingerprint
        else:  # a library call or an operator is part of what the code does
            assert other.fingerprint != a.fingerprint and 0.9 < similarity(a, other) < 1.0
    assert similarity(a, Shape.of(OTHER)) < 0.6
    assert Shape.of("class Broken(:\n") is None and Shape.of(None) is None
    index = ShapeIndex()
    index.add("c0001", a)
    index.add("c0002", Shape.of(OTHER))
    near = index.nearest(Shape.of(TWEAKED))
    assert near.id == "c0001" and not near.exact and near.similarity > 0.9
    assert index.nearest(renamed).exact and index.nearest(renamed).id == "c0001"


@pytest.mark.parametrize("change", list(NOT_COPIES))
def test_code_that_differs_in_constants_strings_or_visible_names_is_no_copy(change):
    a, other = Shape.of(A), Shape.of(NOT_COPIES[change])
    assert a.fingerprint != other.fingerprint
    near = ShapeIndex()
    near.add("c0001", a)
    found = near.nearest(other)
    assert found.id == "c0001" and not found.exact  # a near-copy at most: asked again, then evaluated


@pytest.mark.parametrize(
    "first, second",
    [
        # the same local name, bound to another library function
        (
            "from random import choice, shuffle\nclass R:\n    def __call__(self, func, s):\n        choice(s)\n",
            "from random import choice, shuffle\nclass R:\n    def __call__(self, func, s):\n        shuffle(s)\n",
        ),
        # an argument renamed, but a call still passes the old name by keyword (a TypeError)
        (
            "def f(x):\n    return x\nclass R:\n    def __call__(self, func, s):\n        f(x=1)\n",
            "def f(y):\n    return y\nclass R:\n    def __call__(self, func, s):\n        f(x=1)\n",
        ),
        # an attribute reached by its name as a string
        (
            "class R:\n    def __call__(self, func, s):\n        self.pop = 1\n        getattr(self, 'pop')\n",
            "class R:\n    def __call__(self, func, s):\n        self.size = 1\n        getattr(self, 'pop')\n",
        ),
    ],
)
def test_renaming_that_changes_behaviour_is_no_copy(first, second):
    assert Shape.of(first).fingerprint != Shape.of(second).fingerprint


def _fence(code: str, name: str) -> str:
    return f"# {name}: an optimizer\n```python\n{code}```\n"


def replies(body: dict) -> str:
    """Per candidate number (the seed is llm.seed + number): copies and near-copies on purpose.
    Later candidates answer later, so that no reply overtakes an earlier sibling's (see the test of
    speculative evaluation for that)."""
    n = body["seed"] - 11
    time.sleep(0.2 * n)
    asked_again = "## Near-copy of" in body["messages"][-1]["content"]
    if asked_again:
        return _fence(THIRD if n == 3 else RENAMED, f"Again{n}")
    return _fence({1: A, 2: RENAMED, 3: TWEAKED, 4: OTHER, 5: TWEAKED}[n], f"Reply{n}")


@pytest.fixture()
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-novelty-key-0123456789")
    with FakeLLMServer(replies) as srv:
        yield srv


def test_copies_are_not_evaluated_and_near_copies_are_asked_again_once(server, tmp_path, hub_dir, monkeypatch, capsys):
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'''name = "novelty"
[llm]
model = "openai/fake"
api_base = "{server.base_url}"
seed = 11
retries = 0
concurrency = 4
[evolution]
n_parents = 2
n_offspring = 3
budget = 5
seed = 3
[evolution.operators]
new = 1
refine = 0.0001
simplify = 0.0001
fix = 0
[tasks]
train = ["hub:convolution_milo/A100"]
[evaluation]
repeats = 1
[novelty]
max_similarity = 0.9
[output]
run_dir = "{tmp_path / "run"}"
''')
    evaluated = []

    def counting(code, *args):
        evaluated.append(code)
        return fake_evaluate(code, *args)

    assert run_campaign(cfg, progress=False, evaluate=counting).state == "finished"
    archive = Archive.open(tmp_path / "run")
    c = {x.id: x for x in archive.candidates()}
    # c0002: A with other names and constants: a duplicate of c0001, with its score, not evaluated
    assert c["c0002"].duplicate_of == "c0001" and c["c0002"].score == c["c0001"].score
    assert c["c0002"].novelty == {"nearest": "c0001", "similarity": 1.0}
    # c0003 nearly copied c0001: asked again once, saying so; the second answer was evaluated
    first = c["c0003"].novelty["reasked"]
    assert first["nearest"] == "c0001" and 0.9 < first["similarity"] < 1.0
    assert c["c0003"].description.startswith("Again3") and c["c0003"].duplicate_of is None
    prompts = {x.ref: x.messages[-1]["content"] for x in archive.exchanges()}
    assert "## Near-copy of c0001" in prompts["c0003:reask"] and "c0001" in prompts["c0003:reask"]
    assert "class Descent" in prompts["c0003:reask"]  # what it copied is shown (c0001 is not its parent)
    assert "## Near-copy" not in prompts["c0003"]
    # c0005 nearly copied too; asked again, it answered an exact copy of c0001: a duplicate after all
    assert c["c0005"].novelty["reasked"]["nearest"] == "c0001" and c["c0005"].duplicate_of == "c0001"
    assert sorted(evaluated) == sorted([A, THIRD, OTHER])  # c0001, c0003 (second answer), c0004
    assert "c0004:reask" not in prompts

    status = format_status(tmp_path / "run")
    assert "diversity per generation" in status
    rows = diversity_by_generation(archive.candidates(), archive.code)
    assert [(r.generation, r.candidates, r.duplicates, r.reasked) for r in rows] == [(0, 2, 1, 0), (1, 3, 1, 2)]
    assert rows[0].distinct == 1 and rows[1].distinct == 3 and 0 < rows[1].diversity < 1
    assert format_diversity(rows)[2].split() == ["0", "2", "1", "0", "-", "1", "-"]


def test_synthesizer_asked_again_avoids_the_structure_it_nearly_copied():
    """Without the section a third of the synthesizer's refinements only move defaults; with it, none."""
    from generator.llm.prompts import extract_reply
    from generator.llm.synth import synthesize
    from generator.llm.synth.compose import read_composition

    parent = extract_reply(synthesize("## Instruction (operator: new)\nWrite one.", seed=1)).code
    key = read_composition(parent).normalised().key()

    def structure(near: bool, seed: int) -> str:
        prompt = f"## Parent 1 (id: c0001, score: 0.5)\n\n```python\n{parent}```\n\n"
        if near:
            prompt += "## Near-copy of c0001\nYour previous answer was 98% similar to c0001.\n\n"
        reply = synthesize(prompt + "## Instruction (operator: refine)\nImprove it.", seed=seed)
        return read_composition(extract_reply(reply).code).normalised().key()

    assert sum(structure(False, s) == key for s in range(30)) >= 3
    assert sum(structure(True, s) == key for s in range(30)) == 0


def test_a_reply_that_overtakes_an_earlier_one_is_evaluated_at_once_and_still_checked_in_order(
    tmp_path, hub_dir, monkeypatch
):
    """c0001's reply is slow. c0002 (another algorithm) is evaluated before c0001's reply is in; c0003
    (c0001 renamed) may be evaluated early too, but the check in plan order finds that it copies c0001:
    a duplicate with c0001's score, whatever its own evaluation said."""
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-novelty-key-0123456789")
    events = []

    def slow_first(body):
        n = body["seed"] - 11
        time.sleep(1.5 if n == 1 else 0.0)
        events.append(("reply", n, time.monotonic()))
        return _fence({1: A, 2: OTHER, 3: RENAMED}[n], f"Reply{n}")

    def timed(code, *args):
        events.append(("eval", code, time.monotonic()))
        return fake_evaluate(code, *args)

    with FakeLLMServer(slow_first) as srv:
        cfg = tmp_path / "c.toml"
        cfg.write_text(f'''[llm]
model = "openai/fake"
api_base = "{srv.base_url}"
seed = 11
concurrency = 4
[evolution]
n_parents = 3
budget = 3
[tasks]
train = ["hub:convolution_milo/A100"]
[evaluation]
repeats = 1
[output]
run_dir = "{tmp_path / "run"}"
''')
        assert run_campaign(cfg, progress=False, evaluate=timed).state == "finished"
    c = {x.id: x for x in Archive.open(tmp_path / "run").candidates()}
    first_reply = next(t for kind, n, t in events if kind == "reply" and n == 1)
    evals = [(code, t) for kind, code, t in events if kind == "eval"]
    assert any(code == OTHER and t < first_reply for code, t in evals)  # did not wait for c0001
    assert [code for code, _ in evals].count(OTHER) == 1  # the early evaluation is the one that counts
    assert c["c0002"].duplicate_of is None and c["c0002"].score is not None
    assert c["c0003"].duplicate_of == "c0001" and c["c0003"].score == c["c0001"].score
    assert [x.id for x in Archive.open(tmp_path / "run").candidates()] == ["c0001", "c0002", "c0003"]


def test_a_near_copy_that_overtakes_an_earlier_reply_is_asked_again_at_once(tmp_path, hub_dir, monkeypatch):
    """c0002's reply is slow; c0003 nearly copies c0001 (archived in generation 0): it is asked again
    before c0002's reply is in, and the check in plan order takes that second answer."""
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-novelty-key-0123456789")
    served = {}

    def answers(body):
        n = body["seed"] - 11
        again = "## Near-copy of" in body["messages"][-1]["content"]
        time.sleep(1.5 if n == 2 else 0.0)
        served[(n, again)] = time.monotonic()
        return _fence(THIRD if again else {1: A, 2: OTHER, 3: TWEAKED}[n], f"Reply{n}{'again' if again else ''}")

    with FakeLLMServer(answers) as srv:
        cfg = tmp_path / "c.toml"
        cfg.write_text(f'''[llm]
model = "openai/fake"
api_base = "{srv.base_url}"
seed = 11
concurrency = 4
[evolution]
n_parents = 1
n_offspring = 2
budget = 3
[evolution.operators]
new = 1
refine = 0
simplify = 0
fix = 0
[tasks]
train = ["hub:convolution_milo/A100"]
[evaluation]
repeats = 1
[novelty]
max_similarity = 0.9
[output]
run_dir = "{tmp_path / "run"}"
''')
        assert run_campaign(cfg, progress=False, evaluate=fake_evaluate).state == "finished"
    assert served[(3, True)] < served[(2, False)]  # asked again before the earlier sibling's reply came
    archive = Archive.open(tmp_path / "run")
    c = {x.id: x for x in archive.candidates()}
    assert c["c0003"].novelty["reasked"]["nearest"] == "c0001" and c["c0003"].description == "Reply3again: an optimizer"
    assert [x.ref for x in archive.exchanges()].count("c0003:reask") == 1
