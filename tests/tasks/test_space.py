"""The fast search space agrees with kernel_tuner.searchspace.Searchspace on the benchmark-hub spaces."""

import warnings

import numpy as np
import pytest

from generator.tasks.cache import SpaceSpec
from generator.tasks.space import NEIGHBOR_METHODS, SearchSpace


@pytest.fixture(scope="module", params=["convolution_milo/A100", "dedispersion_milo/A100"])
def pair(request, hub_tasks):
    """(our SearchSpace, Kernel Tuner's Searchspace) for one hub task."""
    from kernel_tuner.searchspace import Searchspace

    task = next(t for t in hub_tasks if t.name == request.param)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kt = Searchspace(task.space.tune_params, list(task.space.restrictions), 1024)
    return SearchSpace(task.space), kt


def _cartesian_sample(space, n, seed):
    rng = np.random.default_rng(seed)
    return [tuple(v[rng.integers(len(v))] for v in space.tune_params.values()) for _ in range(n)]


def test_same_valid_configurations(pair):
    ours, kt = pair
    assert ours.size == kt.size
    assert set(ours.configs) == set(kt.list)
    for cfg in _cartesian_sample(ours, 300, seed=1):
        assert ours.is_param_config_valid(cfg) == kt.is_param_config_valid(cfg)


@pytest.mark.parametrize("method", NEIGHBOR_METHODS)
def test_neighbors_match_kernel_tuner(pair, method):
    ours, kt = pair
    rng = np.random.default_rng(7)
    valid = [ours.config_of(int(r)) for r in rng.choice(ours.size, 25, replace=False)]
    invalid = [c for c in _cartesian_sample(ours, 200, seed=2) if not ours.is_param_config_valid(c)][:15]
    assert invalid, "the sample should hold configurations that fail the restrictions"
    for cfg in valid + invalid:
        got = ours.get_neighbors(cfg, method)
        want = kt.get_neighbors(cfg, method)
        assert len(got) == len(set(got)) and set(got) == set(want), (method, cfg)
        assert cfg not in got


def test_random_sample_is_distinct_valid_and_seeded(pair):
    ours, _ = pair
    ours.seed(3)
    a = ours.get_random_sample(50)
    ours.seed(3)
    assert ours.get_random_sample(50) == a
    assert len(set(a)) == 50 and all(ours.is_param_config_valid(c) for c in a)
    assert len(ours.get_random_sample(10**9)) == ours.size  # capped at the space size


def test_lookups_accept_lists_numpy_values_and_reject_strangers(pair):
    ours, _ = pair
    cfg = ours.config_of(5)
    assert ours.row_of(list(cfg)) == 5
    assert ours.row_of(tuple(np.int64(v) if isinstance(v, int) else v for v in cfg)) == 5
    assert ours.row_of(cfg[:-1]) is None
    assert not ours.is_param_config_valid(("nope",) * len(cfg))
    assert ours.get_neighbors(("nope",) * len(cfg), "Hamming") == []
    with pytest.raises(ValueError):
        ours.get_neighbors(cfg, "diagonal")


def test_neighbor_lists_are_cached_but_returned_as_copies(pair):
    ours, _ = pair
    cfg = ours.config_of(0)
    first = ours.get_neighbors(cfg, "Hamming")
    first.clear()
    assert ours.get_neighbors(cfg, "Hamming")  # the cache was not emptied by the caller
    assert ours.neighbor_rows(0, "Hamming") is ours.neighbor_rows(0, "Hamming")


def test_tiny_space_by_hand():
    spec = SpaceSpec(
        {"a": [1, 2, 4, 8], "b": [0, 1]},
        ("not (a == 2)",),
        np.array([[0, 0], [0, 1], [2, 0], [2, 1], [3, 0], [3, 1]], dtype=np.int32),
    )
    s = SearchSpace(spec)
    assert s.get_neighbors((1, 0), "strictly-adjacent") == [(1, 1)]
    # "adjacent" jumps over a=2, which no valid configuration has
    assert s.get_neighbors((1, 0), "adjacent") == [(1, 1), (4, 0), (4, 1)]
    assert s.get_neighbors((1, 0), "Hamming") == [(1, 1), (4, 0), (8, 0)]
    assert s.get_neighbors((1, 0), "Hamming-adjacent") == [(1, 1), (4, 0)]
    assert s.get_param_indices((8, 1)) == (3, 1)


def test_run_space_partial_neighbour_cache_matches_kernel_tuner(pair):
    """RunSpace (Kernel Tuner's Searchspace surface per run) remembers neighbours as Kernel Tuner does."""
    from kernel_tuner.searchspace import Searchspace

    from generator.bench.ktspace import RunSpace

    ours, kt_built = pair
    kt = Searchspace(ours.tune_params, list(ours.spec.restrictions), 1024)  # fresh: its caches start empty
    run = RunSpace(ours)
    rng = np.random.default_rng(11)
    asked = [ours.config_of(int(r)) for r in rng.choice(ours.size, 6, replace=False)]
    for cfg in asked:
        for method in ("strictly-adjacent", "Hamming"):
            assert set(run.get_neighbors(cfg, method)) == set(kt.get_neighbors(cfg, method))
    touched = {n for cfg in asked for n in run.get_neighbors(cfg, "Hamming")} | set(asked)
    for cfg in list(touched)[:40]:
        for method in ("strictly-adjacent", "adjacent", "Hamming"):
            assert set(run.get_partial_neighbors_indices(cfg, method)) == set(
                kt.get_partial_neighbors_indices(cfg, method)
            )
        assert run.are_neighbors_indices_cached(cfg, "Hamming") == kt.are_neighbors_indices_cached(cfg, "Hamming")
    assert run.get_true_tunable_params() == kt.get_true_tunable_params()
