"""A fast search space over the valid configurations of a task, with Kernel Tuner's optimizer API.

Generated optimizers call `tune_params`, `get_random_sample`, `get_neighbors` and
`is_param_config_valid`, exactly as on `kernel_tuner.searchspace.Searchspace`. Here the valid
configurations are one numpy index matrix, built once per task and reused across repeats.
"""

from __future__ import annotations

import numpy as np

from generator.tasks import SpaceSpec

NEIGHBOR_METHODS = ("strictly-adjacent", "adjacent", "Hamming")


class SearchSpace:
    """Valid configurations of one task; configurations are tuples of parameter values."""

    def __init__(self, spec: SpaceSpec, rng: np.random.Generator | None = None):
        self.spec = spec
        self.tune_params = {k: list(v) for k, v in spec.tune_params.items()}
        self.param_names = list(self.tune_params)
        self.valid = spec.valid
        self.rng = rng or np.random.default_rng()
        self._value_index = [{v: i for i, v in enumerate(vals)} for vals in self.tune_params.values()]
        self._row_of = {tuple(int(i) for i in r): n for n, r in enumerate(self.valid)}
        self._neighbor_cache: dict[tuple[str, int], np.ndarray] = {}

    @property
    def size(self) -> int:
        return len(self.valid)

    def seed(self, seed: int) -> None:
        """Reset the random generator used by `get_random_sample`."""
        self.rng = np.random.default_rng(seed)

    def indices_of(self, config) -> tuple | None:
        """Parameter-value indices of a configuration, or None if a value is not in the space."""
        try:
            return tuple(lk[v] for lk, v in zip(self._value_index, config, strict=True))
        except (KeyError, TypeError, ValueError):
            return None

    def row_of(self, config) -> int | None:
        """Row of a valid configuration in the index matrix, or None if it is not valid."""
        idx = self.indices_of(config)
        return None if idx is None else self._row_of.get(idx)

    def config_of(self, row: int) -> tuple:
        return self.spec.config_of(row)

    def is_param_config_valid(self, config) -> bool:
        return self.row_of(tuple(config)) is not None

    def get_random_sample(self, num_samples: int) -> list[tuple]:
        """Distinct valid configurations drawn uniformly (all of them if fewer exist)."""
        n = min(int(num_samples), self.size)
        rows = self.rng.choice(self.size, size=n, replace=False)
        return [self.config_of(int(r)) for r in rows]

    def neighbor_rows(self, row: int, neighbor_method: str = "Hamming") -> np.ndarray:
        """Rows of the neighbours of valid configuration `row` (cached per row and method)."""
        key = (neighbor_method, row)
        hit = self._neighbor_cache.get(key)
        if hit is None:
            hit = self._compute_neighbors(self.valid[row], neighbor_method, exclude=row)
            self._neighbor_cache[key] = hit
        return hit

    def _compute_neighbors(self, idx: np.ndarray, method: str, exclude: int | None) -> np.ndarray:
        diff = np.abs(self.valid - np.asarray(idx, dtype=np.int32))
        if method == "Hamming":
            mask = (diff != 0).sum(axis=1) == 1
        elif method in ("strictly-adjacent", "adjacent"):
            mask = diff.max(axis=1) <= 1
        else:
            raise ValueError(f"unknown neighbor_method {method!r}; use one of {NEIGHBOR_METHODS}")
        if exclude is not None:
            mask[exclude] = False
        return np.flatnonzero(mask)

    def get_neighbors(self, param_config, neighbor_method: str = "Hamming") -> list[tuple]:
        """Valid neighbours of a configuration, with Kernel Tuner's meaning of each method."""
        config = tuple(param_config)
        row = self.row_of(config)
        if row is not None:
            rows = self.neighbor_rows(row, neighbor_method)
        else:
            idx = self.indices_of(config)
            if idx is None:
                return []
            rows = self._compute_neighbors(np.asarray(idx), neighbor_method, exclude=None)
        return [self.config_of(int(r)) for r in rows]
