"""Kernel Tuner's `Searchspace` surface for one run, on top of Tunesmith's fast SearchSpace.

Kernel Tuner's built-in strategies (and strategy modules written against it) use more of the
Searchspace than the four optimizer calls: `size`, `params_values`, `get_random_neighbor` with its
per-run "partial neighbour cache", `get_param_neighbors`, `get_true_tunable_params`, index
lookups. `RunSpace` provides them with Kernel Tuner 1.5.0's semantics, so these strategies run
unchanged on the fast space (the neighbour lists themselves come from the shared, cached
SearchSpace). Per-run state (which neighbour lists this run has "computed", the partial cache)
starts empty, as a fresh Kernel Tuner Searchspace does. Randomness comes from numpy's and
Python's global generators, as in Kernel Tuner, so seeding them seeds the strategy.

Not provided (those strategies run in Kernel Tuner's own simulation instead): distributed sampling,
`list`/`index` (bayes_opt), tensor spaces, pyATF. The Latin hypercube sample is provided for
`diff_evo:engine=fast` only; `diff_evo` itself runs in Kernel Tuner's simulation (see
`get_LHS_sample_indices`).
"""

from __future__ import annotations

import random
from collections import defaultdict
from warnings import warn

import numpy as np

from generator.tasks.space import NEIGHBOR_METHODS, SearchSpace


class RunSpace:
    """A Kernel Tuner-compatible search space view for one run."""

    def __init__(self, space: SearchSpace):
        self._space = space
        self.tune_params = space.tune_params
        self.param_names = space.param_names
        self.params_values = tuple(tuple(v) for v in space.tune_params.values())
        self.num_params = space.num_params
        self.size = space.size
        self.indices = np.arange(self.size)
        self.max_threads = 1_000_000_000  # simulation: Kernel Tuner's SimulationDevice limit
        self.block_size_names = ["block_size_x", "block_size_y", "block_size_z"]
        self._full: dict[str, set] = {m: set() for m in NEIGHBOR_METHODS}  # configs whose lists this run asked for
        self._partial: dict[str, defaultdict] = {m: defaultdict(list) for m in NEIGHBOR_METHODS}
        self._true_tune_params = None

    # --- lookups ------------------------------------------------------------------------
    def is_param_config_valid(self, param_config) -> bool:
        return self._space.row_of(param_config) is not None

    def get_param_config_index(self, param_config):
        return self._space.row_of(param_config)

    def get_param_indices(self, param_config) -> tuple:
        return self._space.get_param_indices(param_config)

    def get_param_config_from_param_indices(self, param_indices) -> tuple:
        return tuple(v[i] for v, i in zip(self.params_values, param_indices))

    def get_param_configs_at_indices(self, indices) -> list[tuple]:
        configs = self._space.configs
        return [configs[int(i)] for i in indices]

    def get_list_param_indices_numpy(self) -> np.ndarray:
        return self._space.valid

    def get_true_tunable_params(self) -> dict:
        """Parameters that take more than one value among the valid configurations."""
        if self._true_tune_params is None:
            valid = self._space.valid
            self._true_tune_params = {
                name: vals
                for p, (name, vals) in enumerate(self.tune_params.items())
                if len(vals) > 1 and not np.all(valid[:, p] == valid[0, p])
            }
        return self._true_tune_params

    # --- sampling -----------------------------------------------------------------------
    def get_random_sample_indices(self, num_samples: int) -> np.ndarray:
        if num_samples > self.size:
            raise ValueError(
                f"The number of samples requested ({num_samples}) is greater than the searchspace size ({self.size})"
            )
        return np.random.choice(self.indices, size=num_samples, replace=False)

    def get_random_sample(self, num_samples: int) -> list[tuple]:
        if self.size < num_samples:
            warn(
                f"Too many samples requested ({num_samples}), reducing the number of samples to the searchspace size ({self.size})",
                stacklevel=2,
            )
            num_samples = self.size
        return self.get_param_configs_at_indices(self.get_random_sample_indices(num_samples))

    def get_LHS_sample_indices(self, num_samples: int) -> list[int]:
        """Kernel Tuner 1.5.0's Latin hypercube sample (diff_evo's population): hypercube points over each
        parameter's index range, each moved to the valid configuration with the smallest sum of index
        differences (the first such), duplicates dropped through a set and filled up at random.

        Two differences, both on purpose: Kernel Tuner draws the hypercube from fresh OS entropy (scipy's
        default), here it comes from numpy's global generator, so a seeded run repeats; and the set holds
        rows of Tunesmith's list, which orders the configurations differently, so the sample is evaluated in
        another order (on histogram/H100 that order decides much of diff_evo's P:
        benchmarks/first_evaluations.py). It runs only where asked for, as `diff_evo:engine=fast`."""
        from scipy.stats.qmc import LatinHypercube

        if num_samples > self.size:
            warn(
                f"Too many samples requested ({num_samples}), reducing the number of samples to half of the "
                f"searchspace size ({self.size})",
                stacklevel=2,
            )
            num_samples = round(self.size / 2)
        valid = self._space.valid.astype(np.int64)
        hypercube = LatinHypercube(self.num_params, rng=np.random.default_rng(np.random.randint(0, 2**31 - 1)))
        targets = hypercube.integers(
            l_bounds=valid.min(axis=0), u_bounds=valid.max(axis=0), n=num_samples, endpoint=True
        )
        rows = list({int(np.argmin(np.abs(valid - t).sum(axis=1))) for t in targets})
        while len(rows) < num_samples:
            rows = list(set(rows + self.get_random_sample_indices(num_samples - len(rows)).tolist()))
        return rows

    def get_LHS_sample(self, num_samples: int) -> list[tuple]:
        return self.get_param_configs_at_indices(self.get_LHS_sample_indices(num_samples))

    def sorted_list(self, sort_last_param_first: bool = False) -> list[tuple]:
        """The configurations in the order their parameter values are listed (brute_force's order)."""
        valid = self._space.valid
        keys = valid.T if sort_last_param_first else valid.T[::-1]  # np.lexsort sorts by the last key first
        return self.get_param_configs_at_indices(np.lexsort(keys))

    # --- neighbours ---------------------------------------------------------------------
    def get_neighbors_indices_no_cache(self, param_config, neighbor_method=None) -> np.ndarray:
        return self._space.get_neighbors_rows(tuple(param_config), neighbor_method)

    def get_neighbors_indices(self, param_config, neighbor_method=None, build_full_cache=False) -> np.ndarray:
        param_config = tuple(param_config)
        rows = self._space.get_neighbors_rows(param_config, neighbor_method)
        if param_config not in self._full[neighbor_method]:
            self._full[neighbor_method].add(param_config)
            self._add_partial(param_config, rows, neighbor_method, full=True)
            if neighbor_method == "strictly-adjacent":  # any strictly-adjacent neighbour is also adjacent
                self._add_partial(param_config, rows, "adjacent", full=False)
        return rows

    def get_neighbors(self, param_config, neighbor_method=None, build_full_cache=False) -> list[tuple]:
        return self.get_param_configs_at_indices(self.get_neighbors_indices(param_config, neighbor_method))

    def get_neighbors_no_cache(self, param_config, neighbor_method=None) -> list[tuple]:
        return self.get_param_configs_at_indices(self.get_neighbors_indices_no_cache(param_config, neighbor_method))

    def are_neighbors_indices_cached(self, param_config, neighbor_method=None) -> bool:
        return tuple(param_config) in self._full[neighbor_method]

    def _add_partial(self, param_config, rows, method: str, full: bool) -> None:
        """Kernel Tuner's partial neighbour cache: each side of a computed neighbour pair remembers the other."""
        index = self._space.row_of(param_config)
        if index is None:
            return
        rows = [int(r) for r in rows]
        cache = self._partial[method]
        if full:
            cache[index] = list(rows)
        else:
            known = cache[index]
            known.extend(r for r in rows if r not in known)
        for r in rows:
            if index not in cache[r]:
                cache[r].append(index)

    def get_partial_neighbors_indices(self, param_config, neighbor_method=None) -> list[tuple]:
        """The neighbours remembered for a configuration (Kernel Tuner's name; it returns configurations)."""
        index = self._space.row_of(param_config)
        if index is None or index not in self._partial[neighbor_method]:
            return []
        return self.get_param_configs_at_indices(self._partial[neighbor_method][index])

    def pop_random_partial_neighbor(self, param_config, neighbor_method=None, threshold=2):
        index = self._space.row_of(param_config)
        cache = self._partial[neighbor_method]
        if index is None or index not in cache:
            return None
        known = cache[index]
        if len(known) < threshold:
            return None
        return self._space.configs[known.pop(random.choice(range(len(known))))]

    def get_random_neighbor(self, param_config, neighbor_method=None, use_partial_cache=True):
        """An approximately random neighbour, preferring ones remembered from earlier lists (as Kernel Tuner)."""
        param_config = tuple(param_config)
        if self.are_neighbors_indices_cached(param_config, neighbor_method):
            neighbors = self.get_neighbors(param_config, neighbor_method)
            return random.choice(neighbors) if neighbors else None
        if use_partial_cache:
            found = self.pop_random_partial_neighbor(param_config, neighbor_method)
            if found is not None:
                return found
        neighbors = self.get_neighbors(param_config, neighbor_method)
        return random.choice(neighbors) if neighbors else None

    def get_param_neighbors(self, param_config, index: int, neighbor_method: str, randomize: bool) -> list:
        original = param_config[index]
        params = list({n[index] for n in self.get_neighbors(param_config, neighbor_method) if n[index] != original})
        if randomize:
            random.shuffle(params)
        return params
