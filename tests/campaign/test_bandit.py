"""The bandit over operators and models: it follows what pays per cost, spreads a generation over arms,
keeps its state in the archive, and a killed run resumes (and a replay reproduces) it exactly."""

import pytest
from support.campaign_fakes import fake_evaluate, reply_for
from support.fake_llm_server import FakeLLMServer
from support.fault_fixtures import crash_then_resume

from generator.archive import Archive, Candidate
from generator.campaign.bandit import DiscountedUCB, improvement
from generator.campaign.evolution import Evolution
from generator.campaign.printing import format_status
from generator.campaign.run import resume, run_campaign
from generator.config import ConfigError, EvolutionConfig, parse_config


def test_discounted_ucb_tries_every_arm_then_follows_the_paying_one_and_forgets_the_past():
    b = DiscountedUCB(["a", "b", "c"], discount=0.8, exploration=0.2)
    assert [b.choose(["a", "b", "c"]) for _ in range(3)] == ["a", "b", "c"]  # one generation spreads over arms
    for arm, reward in (("a", 0.0), ("b", 1.0), ("c", 0.0)):
        b.settle(arm, reward)
    picks = []
    for _ in range(20):
        arm = b.choose(["a", "b", "c"])
        picks.append(arm)
        b.settle(arm, 1.0 if arm == "b" else 0.0)
    assert picks.count("b") >= 15
    for _ in range(30):  # b stops paying, c starts: discounting lets the bandit move
        arm = b.choose(["a", "b", "c"])
        b.settle(arm, 1.0 if arm == "c" else 0.0)
    assert b.state()["c"]["mean"] > b.state()["b"]["mean"]
    assert b.choose(["a"]) == "a"  # only applicable arms
    assert (
        improvement(None, 0.3) == 0.0 and improvement(0.2, 0.3) == 0.0 and improvement(0.5, 0.3) == pytest.approx(0.2)
    )


def _outcome(plan):
    # refine pays (beats its parent), everything else merely matches the population
    base = max((p.score for p in plan.parents if p.ok), default=0.3)
    score = base + 0.05 if plan.operator == "refine" else 0.3
    return Candidate(
        plan.id,
        plan.generation,
        plan.operator,
        [p.id for p in plan.parents],
        code_path=f"code/{plan.id}.py",
        fitness={"score": score, "per_task": {}},
        model=plan.model,
    )


def test_the_bandit_gives_the_operator_that_pays_most_of_the_budget_and_the_weights_do_not():
    def ops(enabled):
        cfg = EvolutionConfig(
            n_parents=3,
            n_offspring=6,
            budget=90,
            seed=2,
            bandit={"enabled": enabled},
            operators={"new": 1, "refine": 1, "simplify": 1, "fix": 0},
        )
        evo = Evolution(cfg, _outcome)
        evo.run()
        later = [c.operator for c in evo.made if c.generation >= 5]
        return later.count("refine") / len(later), evo

    share, evo = ops(True)
    assert share > 0.6 > ops(False)[0]
    state = evo.state(99)["bandit"]["operators"]
    assert set(state) == {"new", "refine", "simplify"} and state["refine"]["mean"] > state["new"]["mean"]


def test_models_by_weight_without_the_bandit_and_by_price_with_it():
    models = [{"model": "m/cheap", "weight": 1, "price": 1}, {"model": "m/dear", "weight": 3, "price": 20}]
    cfg = parse_config(
        {
            "tasks": {"train": ["x"]},
            "llm": {"models": models},
            "evolution": {"n_parents": 3, "n_offspring": 6, "budget": 60, "seed": 1},
        },
        "c.toml",
    )
    evo = Evolution(cfg.evolution, _outcome, models=cfg.llm.models)
    evo.run()
    by_weight = sum(c.model == "m/dear" for c in evo.made) / len(evo.made)
    cfg.evolution.bandit.enabled = True
    evo = Evolution(cfg.evolution, _outcome, models=cfg.llm.models)
    evo.run()
    later = [c.model for c in evo.made if c.generation >= 4]
    assert by_weight > 0.6 and later.count("m/cheap") / len(later) > 0.6  # same gain, 20x cheaper
    with pytest.raises(ConfigError, match="llm.models.0.price"):
        parse_config({"tasks": {"train": ["x"]}, "llm": {"models": [{"model": "m", "price": 0}]}}, "c.toml")


@pytest.fixture()
def config(tmp_path, hub_dir, monkeypatch):
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-bandit-key-0123456789")
    server = FakeLLMServer(reply_for).__enter__()

    def make(name, concurrency=1, model="openai/fake"):
        path = tmp_path / f"{name}.toml"
        path.write_text(f'''name = "bandit"
[llm]
model = "{model}"
api_base = "{server.base_url}"
timeout = 10
seed = 5
concurrency = {concurrency}
[[llm.models]]
model = "openai/fake-small"
price = 1
[[llm.models]]
model = "openai/fake-large"
price = 4
[evolution]
n_parents = 3
n_offspring = 5
budget = 20
seed = 6
[evolution.bandit]
enabled = true
[evolution.operators]
crossover = 0.3
[tasks]
train = ["hub:convolution_milo/A100"]
[evaluation]
repeats = 1
[output]
run_dir = "{tmp_path / name}"
''')
        return path

    yield make, server
    server.__exit__(None, None, None)


def digest(run_dir):
    archive = Archive.open(run_dir)
    return (
        [(c.id, c.operator, c.model, tuple(c.parent_ids), c.code_hash, c.score) for c in archive.candidates()],
        [g.get("bandit") for g in archive.generations()],
    )


def test_bandit_state_lives_in_the_archive_and_a_killed_run_resumes_and_replays_it_exactly(config):
    make, server = config
    serial = make("serial")
    assert run_campaign(serial, progress=False, evaluate=fake_evaluate).state == "finished"
    run = serial.parent / "serial"
    cands, states = digest(run)
    assert all(states) and {c[2] for c in cands} == {"openai/fake-small", "openai/fake-large"}
    asked = {r["model"] for r in server.requests}
    assert {"fake-small", "fake-large"} <= {m.split("/")[-1] for m in asked}
    assert sum(v["pulls"] for v in states[-1]["models"].values()) == len(cands) - 3  # generation 0 settles nothing
    assert "bandit after generation" in format_status(run) and "fake-large" in format_status(run)

    crash_then_resume(make, fake_evaluate, digest, (cands, states), crash_at=9)

    n = len(server.requests)
    replayed = make("replayed", model=f"replay/{run}")
    assert run_campaign(replayed, progress=False, evaluate=fake_evaluate).state == "finished"
    assert digest(replayed.parent / "replayed") == (cands, states) and len(server.requests) == n


def test_a_changed_bandit_state_on_resume_is_refused(config):
    make, _ = config
    path = make("tampered")
    run_campaign(path, progress=False, evaluate=fake_evaluate)
    gens = path.parent / "tampered" / "generations.jsonl"
    gens.write_text(gens.read_text().replace('"pulls":1', '"pulls":7', 1))
    with pytest.raises(Exception, match="bandit's state after generation"):
        resume(path.parent / "tampered", budget=25, progress=False, evaluate=fake_evaluate)
    assert len(Archive.open(path.parent / "tampered").candidates()) == 20  # nothing made after the refusal


def test_a_model_that_cannot_answer_in_llm_models_is_named_before_anything_is_written(tmp_path, hub_dir, monkeypatch):
    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    path = tmp_path / "bad.toml"
    path.write_text(f'''[llm]
model = "synth/components"
[[llm.models]]
model = "synth/components"
[[llm.models]]
model = "synth/nonesuch"
[tasks]
train = ["hub:convolution_milo/A100"]
[output]
run_dir = "{tmp_path / "run"}"
''')
    with pytest.raises(ConfigError, match=r"llm.models\[1\]: 'synth/nonesuch': no such offline synthesizer"):
        run_campaign(path, progress=False, evaluate=fake_evaluate)
    assert not (tmp_path / "run").exists()
