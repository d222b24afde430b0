"""The racing rule: who gets more runs, the stages up to the cap, the indifference zone, common random numbers, and repeat seeds that stay the same whenever a repeat is run."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from support.paths import ROOT

from generator.racing.rule import (
    Entrant,
    RaceSettings,
    merge_fitness,
    race_round,
    significantly_worse,
)
from generator.scoring.fitness import Fitness, TaskFitness
from generator.scoring.repeats import repeat_values, standard_error

RANDOM_WALK = ROOT / "tests" / "data" / "strategies" / "random_walk.py"


SETTINGS = RaceSettings(min_repeats=3, max_repeats=12, confidence=0.9)


def entrant(cid: str, mean: float, n: int = 3, noise: float = 0.05, common=None) -> Entrant:
    """An entrant whose P per repeat is `mean` plus the draw every candidate shares plus its own noise."""
    common = np.array([0.3, -0.3, 0.2, -0.2, 0.1, -0.1] * 2) if common is None else common
    own = np.random.default_rng(zlib.crc32(cid.encode())).normal(0, noise, 12)
    values = tuple(float(v) for v in (mean + common + own)[:n])
    return Entrant(cid, float(np.mean(values)), values, n)


def test_stages_double_up_to_the_cap():
    assert SETTINGS.stages() == [3, 6, 12]
    assert RaceSettings(3, 10).stages() == [3, 6, 10] and RaceSettings(3, 10).next_stage(6) == 10
    assert RaceSettings(5, 5).stages() == [5] and RaceSettings(8, 5).stages() == [5]


def test_clearly_decided_candidates_stop_early_and_the_contenders_go_on():
    shared = [0.2, -0.2, 0.0]  # the draw of repeat r, the same for every candidate
    values = {"a": [0.8, 0.8, 0.8], "b": [0.7, 0.72, 0.68], "c": [0.71, 0.64, 0.65], "bad": [0.1, 0.12, 0.08]}
    field = [Entrant(k, float(np.mean(v)), tuple(x + s for x, s in zip(v, shared)), 3) for k, v in values.items()]
    more = race_round(field, mu=2, settings=SETTINGS)
    assert "bad" not in more  # far below the second best: out after its first 3 runs
    assert "a" not in more  # far above the best one outside the places: in, it needs no more runs to be a parent
    assert more == {"b": 6, "c": 6}  # the boundary between them is still open: both measured further


def test_a_candidate_with_more_runs_waits_for_its_rival_to_catch_up():
    """Only the repeats both have are compared: more runs of the one ahead would not decide the pair."""
    field = [entrant("ahead", 0.80, n=6), entrant("rival", 0.79, n=3)]
    assert race_round(field, mu=1, settings=SETTINGS) == {"rival": 6}


def test_a_pair_within_the_indifference_zone_stops_and_is_decided_by_the_mean():
    """Two candidates 0.001 apart, their difference known to within a few thousandths: which one is a parent
    does not matter. Without the zone the tie is raced to the cap; with it the pair stops."""
    shared = np.array([0.3, -0.3, 0.2, -0.2, 0.1, -0.1])
    a, b = 0.80 + shared + [0.004, -0.004, 0.003, 0.0, 0.001, 0.002], 0.80 + shared
    far = 0.3 + shared

    def field(n=6):
        return [Entrant(k, float(np.mean(v[:n])), tuple(v[:n]), n) for k, v in (("a", a), ("b", b), ("far", far))]

    assert race_round(field(), mu=1, settings=SETTINGS) == {"a": 12, "b": 12}
    zone = RaceSettings(3, 12, 0.9, indifference=0.05)
    assert race_round(field(), mu=1, settings=zone) == {}
    a = 0.80 + shared + [0.15, -0.12, 0.0, 0.0, 0.0, 0.0]  # as close by the mean, but not known to be
    assert race_round(field(3), mu=1, settings=zone) == {"a": 6, "b": 6}


def test_common_random_numbers_make_a_small_gap_decidable():
    """The shared draw swings P by up to 0.3 per repeat; paired, a gap of 0.1 is still clear after 6 runs."""
    strong, weak = entrant("strong", 0.6, n=6, noise=0.01), entrant("weak", 0.5, n=6, noise=0.01)
    assert significantly_worse(weak.values, strong.values, 0.9)
    unpaired = tuple(reversed(weak.values))  # the same runs, not paired by seed
    assert not significantly_worse(unpaired, strong.values, 0.9)


def test_a_close_candidate_gets_more_runs_until_the_cap_and_no_further():
    field = [entrant("a", 0.80, n=12), entrant("b", 0.79, n=12), entrant("close", 0.785, n=6)]
    more = race_round(field, mu=2, settings=SETTINGS)
    assert more == {"close": 12}  # still undecided: on to the cap; the capped ones get nothing more
    capped = [entrant("a", 0.80, n=12), entrant("b", 0.79, n=12), entrant("close", 0.785, n=12)]
    assert race_round(capped, mu=2, settings=SETTINGS) == {}


def test_with_no_more_candidates_than_places_nobody_runs_more_yet():
    """All of them survive (generation 0 of a campaign): the next generation's race decides."""
    assert race_round([entrant("a", 0.8), entrant("b", 0.1)], mu=2, settings=SETTINGS) == {}


def test_standard_error_and_merge_keep_every_run():
    assert standard_error([1.0]) is None and standard_error([1.0, 3.0]) == pytest.approx(1.0)
    first = Fitness(0.5, {"t": TaskFitness(0.5, 0.1, 10.0, 5.0, (0.4, 0.6), runs=2)}).to_dict()
    later = Fitness(0.8, {"t": TaskFitness(0.8, 0.0, 20.0, 8.0, (0.8, 0.8), runs=2)}).to_dict()
    merged = merge_fitness(first, later)
    t = merged["per_task"]["t"]
    assert t["per_repeat"] == [0.4, 0.6, 0.8, 0.8] and t["runs"] == 4 and merged["metadata"]["repeats"] == 4
    assert merged["score"] == pytest.approx(0.65) and t["fevals"] == pytest.approx(15.0)
    assert merged["metadata"]["se"] == pytest.approx(standard_error([0.4, 0.6, 0.8, 0.8]))
    assert list(repeat_values(merged["per_task"])) == [0.4, 0.6, 0.8, 0.8]


def test_repeat_r_has_the_same_seed_whenever_it_is_run(conv_task):
    """Runs 0..3 at once, or 0..1 first and 2..3 when racing adds them: the same P per repeat."""
    from generator.evaluation.evaluate import evaluate_source

    source = RANDOM_WALK.read_text()
    whole = evaluate_source(source, [conv_task], repeats=4, seed=7)
    head = evaluate_source(source, [conv_task], repeats=2, seed=7)
    tail = evaluate_source(source, [conv_task], repeats=2, seed=7, first_repeat=2)
    name = conv_task.name
    assert whole.ok and head.ok and tail.ok
    assert whole.per_task[name].per_repeat == head.per_task[name].per_repeat + tail.per_task[name].per_repeat
    assert whole.per_task[name].runs == 4 and whole.metadata["runs"] == 4
    assert whole.per_task[name].se == pytest.approx(standard_error(whole.per_task[name].per_repeat))
