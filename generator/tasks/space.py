"""A fast search space over the valid configurations of a task, with Kernel Tuner's optimizer API.

Generated optimizers call `tune_params`, `get_random_sample`, `get_neighbors` and
`is_param_config_valid`, exactly as on `kernel_tuner.searchspace.Searchspace` (1.5.0). Here the
valid configurations are one numpy index matrix, built once per task and reused across repeats;
neighbour lists are computed per configuration on first use and cached.

Neighbour methods, with Kernel Tuner's meaning (indices are positions in a parameter's value list):
- "strictly-adjacent": every parameter index differs by at most 1;
- "adjacent": every parameter moves at most to the closest index, above or below, that occurs in
  some valid configuration (so gaps left by the restrictions are jumped over);
- "Hamming": exactly one parameter differs;
- "Hamming-adjacent": exactly one parameter differs, and it moves to the closest index above or
  below among the Hamming neighbours.
A valid configuration is never its own neighbour. Neighbours come in row order; Kernel Tuner
returns them in the order of its own list, so the same set may come in another order there.
"""

from __future__ import annotations

import numpy as np

from generator.tasks.cache import SpaceSpec

NEIGHBOR_METHODS = ("strictly-adjacent", "adjacent", "Hamming", "Hamming-adjacent")


class SearchSpace:
    """Valid configurations of one task; configurations are tuples of parameter values."""

    def __init__(self, spec: SpaceSpec, rng: np.random.Generator | None = None):
        self.spec = spec
        self.tune_params = {k: list(v) for k, v in spec.tune_params.items()}
        self.param_names = list(self.tune_params)
        self.params_values = [tuple(v) for v in self.tune_params.values()]
        self.num_params = len(self.param_names)
        self.valid = np.ascontiguousarray(spec.valid, dtype=np.int32)
        self.rng = rng or np.random.default_rng()
        self._value_index = [_value_lookup(vals) for vals in self.params_values]
        # rows keyed by the flat (mixed-radix) index of the configuration: one int per lookup
        self._radix = np.array(
            [int(np.prod([len(v) for v in self.params_values[i + 1 :]])) for i in range(self.num_params)],
            dtype=np.int64,
        )
        flat = self.valid.astype(np.int64) @ self._radix if self.valid.size else np.zeros(0, np.int64)
        self._row_of_flat = dict(zip(flat.tolist(), range(len(flat))))
        self._configs: list[tuple] | None = None
        self._row_by_config = {cfg: row for row, cfg in enumerate(self.configs)}
        self._neighbor_cache: dict[str, dict[int, np.ndarray]] = {m: {} for m in NEIGHBOR_METHODS}
        self._neighbor_configs: dict[tuple[str, int], list[tuple]] = {}
        self._bits: _Bitsets | None = None  # built on the first neighbour query

    @property
    def size(self) -> int:
        return len(self.valid)

    def seed(self, seed: int) -> None:
        """Reset the random generator used by `get_random_sample`."""
        self.rng = np.random.default_rng(seed)

    # --- configurations <-> rows ------------------------------------------------------------
    @property
    def configs(self) -> list[tuple]:
        """All valid configurations as value tuples, in row order."""
        if self._configs is None:
            cols = [np.asarray(vals, dtype=object)[self.valid[:, p]] for p, vals in enumerate(self.params_values)]
            self._configs = list(zip(*cols)) if cols else []
        return self._configs

    def indices_of(self, config) -> tuple | None:
        """Parameter-value indices of a configuration, or None if a value is not in the space."""
        try:
            if len(config) != self.num_params:
                return None
            return tuple(lk[v] for lk, v in zip(self._value_index, config))
        except (KeyError, TypeError):
            return None

    def row_of(self, config) -> int | None:
        """Row of a valid configuration in the index matrix, or None if it is not valid."""
        try:  # the common case: one hash of the value tuple (numpy scalars hash like Python numbers)
            row = self._row_by_config.get(config if type(config) is tuple else tuple(config))
            if row is not None:
                return row
        except TypeError:
            pass
        idx = self.indices_of(config)
        if idx is None:
            return None
        flat = 0
        for i, r in zip(idx, self._radix.tolist()):
            flat += i * r
        return self._row_of_flat.get(flat)

    def config_of(self, row: int) -> tuple:
        """The parameter values of valid configuration `row`."""
        return self.configs[row]

    def is_param_config_valid(self, param_config) -> bool:
        """True if the configuration passes the restrictions (is in the space)."""
        return self.row_of(param_config) is not None

    def get_param_indices(self, param_config) -> tuple:
        """For each parameter value in the configuration, its index in the value list (Kernel Tuner API)."""
        idx = self.indices_of(param_config)
        if idx is None:
            raise ValueError(f"configuration {param_config} has a value outside tune_params")
        return idx

    # --- sampling ---------------------------------------------------------------------------
    def get_random_sample_rows(self, num_samples: int) -> np.ndarray:
        """Distinct rows drawn uniformly (all of them if fewer exist)."""
        n = min(int(num_samples), self.size)
        return self.rng.choice(self.size, size=n, replace=False)

    def get_random_sample(self, num_samples: int) -> list[tuple]:
        """Distinct valid configurations drawn uniformly (all of them if fewer exist)."""
        configs = self.configs
        return [configs[r] for r in self.get_random_sample_rows(num_samples).tolist()]

    # --- neighbours -------------------------------------------------------------------------
    def neighbor_rows(self, row: int, neighbor_method: str = "Hamming") -> np.ndarray:
        """Rows of the neighbours of valid configuration `row` (cached per row and method)."""
        cache = self._neighbor_cache.get(neighbor_method)
        if cache is None:
            raise ValueError(f"unknown neighbor_method {neighbor_method!r}; use one of {NEIGHBOR_METHODS}")
        hit = cache.get(row)
        if hit is None:
            hit = self._compute_neighbors(self.valid[row], neighbor_method, exclude=row)
            cache[row] = hit
        return hit

    def get_neighbors_rows(self, param_config, neighbor_method: str = "Hamming") -> np.ndarray:
        """Rows of the valid neighbours of any configuration (valid or not)."""
        row = self.row_of(param_config)
        if row is not None:
            return self.neighbor_rows(row, neighbor_method)
        if neighbor_method not in NEIGHBOR_METHODS:
            raise ValueError(f"unknown neighbor_method {neighbor_method!r}; use one of {NEIGHBOR_METHODS}")
        idx = self.indices_of(param_config)
        if idx is None:
            return np.zeros(0, dtype=np.int64)
        return self._compute_neighbors(np.asarray(idx, dtype=np.int32), neighbor_method, exclude=None)

    def get_neighbors(self, param_config, neighbor_method: str = "Hamming") -> list[tuple]:
        """Valid neighbours of a configuration, with Kernel Tuner's meaning of each method."""
        row = self.row_of(param_config)
        if row is not None:
            key = (neighbor_method, row)
            hit = self._neighbor_configs.get(key)
            if hit is None:
                configs = self.configs
                hit = [configs[r] for r in self.neighbor_rows(row, neighbor_method).tolist()]
                self._neighbor_configs[key] = hit
            return list(hit)  # a copy: callers may shuffle or pop it
        configs = self.configs
        return [configs[r] for r in self.get_neighbors_rows(param_config, neighbor_method).tolist()]

    def _compute_neighbors(self, idx, method: str, exclude: int | None) -> np.ndarray:
        """Neighbour rows of the configuration with value indices `idx`, from per-value bitsets."""
        bits = self._bitsets()
        idx = [int(i) for i in idx]
        if method == "strictly-adjacent":
            mask = self._all
            for p, i in enumerate(idx):
                mask &= bits.strict[p][i]
        elif method == "adjacent":
            mask = self._all
            for p, i in enumerate(idx):
                mask &= bits.adjacent[p][i]
        else:
            along = self._hamming_along(idx)  # per parameter: rows differing there and nowhere else
            if method == "Hamming":
                mask = 0
                for m in along:
                    mask |= m
            else:  # Hamming-adjacent: along each parameter, only the closest index above and below
                mask = 0
                for p, cand in enumerate(along):
                    col = bits.value[p]
                    for step in (1, -1):
                        j = idx[p] + step
                        while 0 <= j < len(col) and not cand & col[j]:
                            j += step
                        if 0 <= j < len(col):
                            mask |= cand & col[j]
        if exclude is not None:
            mask &= ~(1 << exclude)
        return _rows_of_bits(mask, self.size)

    def _hamming_along(self, idx: list[int]) -> list[int]:
        """For each parameter p: rows equal to `idx` everywhere except at p, where they differ."""
        col = self._bitsets().value
        eq = [col[p][i] for p, i in enumerate(idx)]
        # prefix/suffix ANDs: "equal on all parameters but p" in O(P)
        prefix, acc = [], self._all
        for m in eq:
            prefix.append(acc)
            acc &= m
        out, acc = [0] * len(eq), self._all
        for p in range(len(eq) - 1, -1, -1):
            out[p] = prefix[p] & acc & ~eq[p]
            acc &= eq[p]
        return out

    def _bitsets(self) -> _Bitsets:
        if self._bits is None:
            self._bits = _Bitsets.build(self.valid, [len(v) for v in self.params_values])
        return self._bits

    @property
    def _all(self) -> int:
        return (1 << self.size) - 1


class _Bitsets:
    """Per parameter and value index, the set of rows as a Python int (bit r = row r): fast AND/OR."""

    def __init__(self, value, strict, adjacent):
        self.value = value  # [p][i]: rows whose parameter p has index i
        self.strict = strict  # [p][i]: rows whose index of p is within i-1..i+1
        self.adjacent = adjacent  # [p][i]: rows whose index of p is i or the nearest occurring index each way

    @classmethod
    def build(cls, valid: np.ndarray, sizes: list[int]) -> _Bitsets:
        value, strict, adjacent = [], [], []
        for p, n in enumerate(sizes):
            col = valid[:, p]
            v = [_bits_of(col == i) for i in range(n)]
            present = [i for i in range(n) if v[i]]
            s, a = [], []
            for i in range(n):
                s.append(v[i] | (v[i - 1] if i > 0 else 0) | (v[i + 1] if i + 1 < n else 0))
                below = [j for j in present if j < i]
                above = [j for j in present if j > i]
                a.append(v[i] | (v[below[-1]] if below else 0) | (v[above[0]] if above else 0))
            value.append(v)
            strict.append(s)
            adjacent.append(a)
        return cls(value, strict, adjacent)


def _bits_of(mask: np.ndarray) -> int:
    return int.from_bytes(np.packbits(mask, bitorder="little").tobytes(), "little")


def _rows_of_bits(bits: int, n: int) -> np.ndarray:
    if not bits:
        return np.zeros(0, dtype=np.int64)
    raw = np.frombuffer(bits.to_bytes((n + 7) // 8, "little"), dtype=np.uint8)
    return np.flatnonzero(np.unpackbits(raw, bitorder="little")[:n])


def _value_lookup(values) -> dict:
    """value -> index; numeric values also found by their float/int twins (1 == 1.0), as list.index does."""
    lookup = {}
    for i, v in enumerate(values):
        lookup.setdefault(v, i)
    return lookup
