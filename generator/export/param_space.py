"""A search space from Kernel Tuner-style `tune_params` and restrictions, with the API generated optimizers use.

Small spaces are enumerated once (exact size, fast neighbours). Spaces of more than
`ENUMERATE_LIMIT` configurations are never enumerated: samples are drawn by rejection and
neighbours are built one parameter at a time, so memory and the cost of a call depend on the
number of values per parameter, not on the size of the space.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable

import numpy as np

from generator import parsing

_SAFE_BUILTINS = {"min": min, "max": max, "abs": abs, "int": int, "float": float, "round": round, "len": len}
ENUMERATE_LIMIT = 200_000  # configurations; above this a space is searched without listing it
_DRAWS = 64  # rejection-sampling rounds before a sample comes back short


class ParamSpace:
    """A search space built from Kernel Tuner-style `tune_params` and restrictions, with the optimizer API.

    `constants` ({name: value}) are parameters with a single value that are not searched (Optuna
    never samples them); restrictions that name them see their value, as in Kernel Tuner.
    """

    def __init__(
        self,
        tune_params: dict[str, Iterable],
        restrictions=None,
        seed: int | None = None,
        constants: dict | None = None,
    ):
        self.tune_params = {k: list(v) for k, v in tune_params.items()}
        self.param_names = list(self.tune_params)
        self.rng = np.random.default_rng(seed)
        self._checks = [_restriction(r, self.param_names, constants or {}) for r in as_list(restrictions)]
        self._values = list(self.tune_params.values())
        self._shape = np.asarray([len(v) for v in self._values], dtype=np.int64)
        self._value_index = [{_key(v): i for i, v in enumerate(vals)} for vals in self._values]
        self.valid = None  # enumerated value positions of the valid configurations (small spaces only)
        if math.prod(len(v) for v in self._values) <= ENUMERATE_LIMIT:
            rows = [idx for idx in itertools.product(*[range(len(v)) for v in self._values]) if self._ok(idx)]
            if not rows:
                raise ValueError("no configuration passes the restrictions; loosen them or widen tune_params")
            self.valid = np.asarray(rows, dtype=np.int32)
            self._row_of = {tuple(int(i) for i in r): n for n, r in enumerate(self.valid)}
        elif not self._draw(1, _DRAWS):
            raise ValueError(
                f"no configuration passed the restrictions in {_DRAWS * 1024} random draws; "
                "loosen them or narrow tune_params to the values that can pass"
            )

    @property
    def size(self) -> int:
        """Valid configurations (counted when the space is small; before restrictions when it is not)."""
        return len(self.valid) if self.valid is not None else int(np.prod(self._shape, dtype=np.float64))

    def _config(self, idx) -> tuple:
        return tuple(vals[int(i)] for vals, i in zip(self._values, idx))

    def _ok(self, idx) -> bool:
        params = dict(zip(self.param_names, self._config(idx)))
        return all(ok(params) for ok in self._checks)

    def _positions(self, config) -> tuple | None:
        try:
            return tuple(lk[_key(v)] for lk, v in zip(self._value_index, config, strict=True))
        except (KeyError, TypeError, ValueError):
            return None

    def config_of(self, row: int) -> tuple:
        """The configuration of an enumerated row."""
        return self._config(self.valid[row])

    def row_of(self, config) -> int | None:
        """Row of a valid configuration, or None (for a space too large to enumerate: 0 when valid)."""
        idx = self._positions(config)
        if idx is None:
            return None
        if self.valid is not None:
            return self._row_of.get(idx)
        return 0 if self._ok(idx) else None

    def is_param_config_valid(self, config) -> bool:
        """True if the configuration lists one value of each parameter and passes the restrictions."""
        return self.row_of(tuple(config)) is not None

    def get_random_sample(self, num_samples: int) -> list[tuple]:
        """Distinct valid configurations drawn uniformly (fewer only when the space holds fewer)."""
        n = max(0, int(num_samples))
        if self.valid is not None:
            rows = self.rng.choice(self.size, size=min(n, self.size), replace=False)
            return [self.config_of(int(r)) for r in rows]
        return [self._config(idx) for idx in self._draw(n, _DRAWS)]

    def _draw(self, n: int, rounds: int) -> list[tuple]:
        """Up to n distinct valid value positions of a large space, by rejection."""
        found: dict[tuple, None] = {}
        for _ in range(rounds):
            if len(found) >= n:
                break
            for idx in self.rng.integers(0, self._shape, size=(max(1024, 2 * n), len(self._shape))):
                idx = tuple(int(i) for i in idx)
                if idx not in found and self._ok(idx):
                    found[idx] = None
                    if len(found) >= n:
                        break
        return list(found)

    def get_neighbors(self, param_config, neighbor_method: str = "Hamming") -> list[tuple]:
        """Valid neighbours with Kernel Tuner's meaning of "Hamming", "adjacent" and "strictly-adjacent"."""
        if neighbor_method not in ("Hamming", "adjacent", "strictly-adjacent"):
            raise ValueError(f"unknown neighbor_method {neighbor_method!r}; use Hamming, adjacent or strictly-adjacent")
        idx = self._positions(param_config)
        if idx is None:
            return []
        if self.valid is not None:
            diff = np.abs(self.valid - np.asarray(idx))
            if neighbor_method == "Hamming":
                mask = (diff != 0).sum(axis=1) == 1
            else:
                mask = (diff.max(axis=1) <= 1) & (diff.sum(axis=1) > 0)
            return [self.config_of(int(r)) for r in np.flatnonzero(mask)]
        return [self._config(n) for n in self._near(idx, neighbor_method) if self._ok(n)]

    def _near(self, idx: tuple, neighbor_method: str):
        """Value positions next to idx, without listing the space."""
        if neighbor_method == "Hamming":
            for p, size in enumerate(self._shape):
                for j in range(int(size)):
                    if j != idx[p]:
                        yield idx[:p] + (j,) + idx[p + 1 :]
            return
        for step in itertools.product((-1, 0, 1), repeat=len(idx)):
            n = tuple(i + s for i, s in zip(idx, step))
            if any(step) and all(0 <= i < size for i, size in zip(n, self._shape)):
                yield n


def _key(value):
    """A lookup key that tells True from 1 (Kernel Tuner's spaces mix them: [True, 1, "x", 2.45])."""
    return (isinstance(value, (bool, np.bool_)), value)


def as_list(restrictions) -> list:
    """Restrictions as a list (one string or callable is a list of one)."""
    if restrictions is None:
        return []
    return [restrictions] if isinstance(restrictions, str) or callable(restrictions) else list(restrictions)


def _restriction(r, names, constants=None) -> Callable[[dict], bool]:
    """A restriction as Kernel Tuner takes it: an expression string, or a callable on the parameter dict.

    Constant parameters (`constants`, not searched) are substituted: the restriction sees their value."""
    constants = dict(constants or {})
    if callable(r):
        return (lambda p: bool(r({**constants, **p}))) if constants else (lambda p: bool(r(p)))
    code = parsing.compile_code(str(r), "<restriction>", "eval")
    unknown = set(code.co_names) - set(names) - set(constants) - set(_SAFE_BUILTINS)
    if unknown:
        raise ValueError(f"restriction {r!r} names unknown parameters {sorted(unknown)}; use names from tune_params")
    if constants:
        return lambda p: bool(eval(code, {"__builtins__": _SAFE_BUILTINS}, {**constants, **p}))  # noqa: S307 - the user's own expression
    return lambda p: bool(eval(code, {"__builtins__": _SAFE_BUILTINS}, p))  # noqa: S307 - the user's own expression


def partial_check(restrictions, constants: dict | None = None) -> Callable[[dict], bool]:
    """A test of a partial assignment: False only if a restriction whose names are all assigned fails."""
    constants = dict(constants or {})
    compiled = [
        r if callable(r) else parsing.compile_code(str(r), "<restriction>", "eval") for r in as_list(restrictions)
    ]

    def ok(params: dict) -> bool:
        scope = {**constants, **params}
        for r in compiled:
            try:
                passed = r(scope) if callable(r) else eval(r, {"__builtins__": _SAFE_BUILTINS}, scope)  # noqa: S307 - user's own
            except (NameError, KeyError):  # names a parameter not chosen yet: decided later
                continue
            if not passed:
                return False
        return True

    return ok
