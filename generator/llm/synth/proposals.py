"""The offline synthesizer's answer to an llm_guided prompt: configurations it can justify from the prompt.

It is not an LLM and knows nothing about GPUs. It reads what the prompt says (parameters and
their values, restrictions, statistics, budget used, the results shown) and proposes:
- before any result: a Latin hypercube over the parameter indices, each point moved to the
  nearest configuration that satisfies the restrictions (it enumerates them from the prompt's
  restriction expressions, as a model with a code tool could);
- afterwards: a share of neighbours of the best results (one or two index steps away, better
  ranks chosen more often) and the rest spread over the parts of the space furthest from
  everything shown (maximin). The share of neighbours grows with the budget used and with the
  fitness-distance correlation in the statistics (a correlated space rewards local search).
Configurations listed in the prompt are never proposed again. The answer is a function of
(seed, prompt, repeat), like the rest of the synthesizer.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

import numpy as np

from generator.llm.synth.parse import sections, to_number

HEADING = re.compile(r"^## Instruction \(operator: propose\)", re.M)
_CACHE: dict[str, tuple] = {}  # parameters + restrictions -> (valid index matrix, index tuple -> row)
_CACHE_MAX = 16


def is_proposal_prompt(text: str) -> bool:
    """True for an llm_guided prompt (its instruction heading says `operator: propose`)."""
    return bool(HEADING.search(text))


@dataclass
class ProposalRequest:
    """What an llm_guided prompt says, as the synthesizer reads it."""

    params: dict[str, list] = field(default_factory=dict)
    restrictions: list[str] = field(default_factory=list)
    batch: int = 10
    used_fraction: float = 0.0
    best: list[tuple[dict, float]] = field(default_factory=list)  # config, result (best first)
    known: list[dict | list] = field(default_factory=list)  # every configuration shown in the prompt
    stats: dict[str, float] = field(default_factory=dict)


def _json_lines(body: str) -> list:
    out = []
    for line in body.splitlines():
        line = line.strip()
        if line.startswith(("{", "[")):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def _task(body: str, req: ProposalRequest) -> None:
    where = None
    for line in body.splitlines():
        top = re.match(r"^- (\w[\w ]*?)(?: \(|:)", line)
        if top:
            where = top.group(1)
        m = re.match(r"^\s+- (\w+): (\[.*\])\s*$", line)
        if where == "parameters" and m:
            req.params[m.group(1)] = json.loads(m.group(2))
        m = re.match(r"^\s+- `(.+)`\s*$", line)
        if where == "restrictions" and m:
            req.restrictions.append(m.group(1))
        m = re.search(r"used so far: [\d,]+ evaluations \(([\d.]+)% of the budget\)", line)
        if m:
            req.used_fraction = float(m.group(1)) / 100.0


def read_request(text: str) -> ProposalRequest:
    """The ProposalRequest of a prompt (missing parts stay empty)."""
    req = ProposalRequest()
    for heading, body in sections(text):
        low = heading.lower()
        if low.startswith("task"):
            _task(body, req)
        elif low.startswith("search-space statistics"):
            for key, value in re.findall(r"^\s*-\s*(\w+):\s*(\S+)\s*$", body, re.M):
                number = to_number(value)
                if number is not None:
                    req.stats[key] = number
        elif low.startswith("results so far"):
            for item in _json_lines(body):
                if isinstance(item, dict) and isinstance(item.get("config"), dict):
                    result = next((v for k, v in item.items() if k != "config" and isinstance(v, (int, float))), None)
                    req.known.append(item["config"])
                    if result is not None:
                        req.best.append((item["config"], float(result)))
        elif low.startswith(("failed configurations", "other evaluated")):
            req.known += [x.get("config", x) if isinstance(x, dict) else x for x in _json_lines(body)]
        elif low.startswith("feedback"):  # proposals refused last round: invalid or already evaluated
            req.known += [x["proposal"] for x in _json_lines(body) if isinstance(x, dict) and "proposal" in x]
        elif low.startswith("instruction"):
            m = re.search(r"Propose (\d+) new configurations", body)
            if m:
                req.batch = int(m.group(1))
    return req


def _valid(req: ProposalRequest) -> tuple[np.ndarray, dict]:
    """Index matrix of every configuration that satisfies the prompt's restrictions, and its row lookup."""
    from generator.tasks.restrictions import valid_indices

    key = hashlib.sha256(json.dumps([req.params, req.restrictions]).encode()).hexdigest()
    if key not in _CACHE:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.pop(next(iter(_CACHE)))
        valid = valid_indices(req.params, req.restrictions)
        _CACHE[key] = (valid, {tuple(r): i for i, r in enumerate(valid.tolist())})
    return _CACHE[key]


def _indices(req: ProposalRequest, config) -> tuple | None:
    names = list(req.params)
    if isinstance(config, dict):
        config = [config.get(n) for n in names]
    try:
        return tuple(req.params[n].index(v) for n, v in zip(names, config))
    except (ValueError, TypeError):
        return None


class _Picker:
    """Chooses rows of the valid index matrix, never one that is known or already chosen."""

    def __init__(self, req: ProposalRequest, rng: np.random.Generator):
        self.valid, lookup = _valid(req)
        cards = np.array([len(v) for v in req.params.values()], dtype=float)
        self.pos = self.valid / np.maximum(cards - 1, 1)  # every parameter's index range mapped to [0, 1]
        self.rng = rng
        self.free = np.ones(len(self.valid), dtype=bool)
        self.known = [lookup[ix] for ix in (_indices(req, c) for c in req.known) if ix in lookup]
        self.free[self.known] = False
        self.row_of = lookup

    def take(self, row: int) -> int:
        self.free[row] = False
        return row

    def nearest(self, point: np.ndarray) -> int | None:
        """The free row closest (L1 over normalised indices) to a point; ties broken at random."""
        rows = np.flatnonzero(self.free)
        if rows.size == 0:
            return None
        d = np.abs(self.pos[rows] - point).sum(axis=1)
        best = rows[d <= d.min() + 1e-12]
        return self.take(int(self.rng.choice(best)))

    def latin_hypercube(self, n: int) -> list[int]:
        dims = self.pos.shape[1]
        strata = np.stack([self.rng.permutation(n) for _ in range(dims)], axis=1)
        points = (strata + self.rng.random((n, dims))) / n
        return [r for r in (self.nearest(p) for p in points) if r is not None]

    def neighbours(self, parents: list[int], n: int) -> list[int]:
        """Free rows one (else two) index steps from a parent; parent k chosen with weight 1/(k+1)."""
        out = []
        weights = 1.0 / (np.arange(len(parents)) + 1.0)
        for _ in range(n):
            parent = parents[int(self.rng.choice(len(parents), p=weights / weights.sum()))]
            steps = np.abs(self.valid - self.valid[parent])
            rows = np.flatnonzero(self.free)
            if rows.size == 0:
                break
            for reach in (1, 2, None):
                near = rows if reach is None else rows[steps[rows].max(axis=1) <= reach]
                if near.size:
                    # fewer parameters changed first: a neighbour that changes one value is likelier than three
                    changed = (steps[near] > 0).sum(axis=1)
                    pool = near[changed <= changed.min() + 1]
                    out.append(self.take(int(self.rng.choice(pool))))
                    break
        return out

    def spread(self, n: int) -> list[int]:
        """Free rows far from everything known or chosen (greedy maximin over a random pool)."""
        rows = np.flatnonzero(self.free)
        if rows.size == 0 or n <= 0:
            return []
        pool = rows if rows.size <= 2000 else self.rng.choice(rows, 2000, replace=False)
        far = np.full(pool.size, np.inf)  # L1 distance of each pool row to the nearest known or chosen row
        for start in range(0, len(self.known), 256):
            taken = self.pos[self.known[start : start + 256]]
            far = np.minimum(far, np.abs(self.pos[pool][:, None, :] - taken[None, :, :]).sum(axis=2).min(axis=1))
        out = []
        for _ in range(min(n, pool.size)):
            pick = int(np.argmax(far)) if np.isfinite(far).any() else int(self.rng.integers(pool.size))
            out.append(self.take(int(pool[pick])))
            far = np.minimum(far, np.abs(self.pos[pool] - self.pos[pool[pick]]).sum(axis=1))
            far[pick] = -1.0  # never twice
        return out


def exploit_share(req: ProposalRequest) -> float:
    """Share of the batch spent next to the best results: more as the budget goes, more on correlated spaces."""
    fdc = req.stats.get("fdc", 0.0)
    fdc = 0.0 if fdc != fdc else fdc  # NaN: no evidence either way
    return float(np.clip(0.5 + 0.4 * req.used_fraction + 0.3 * fdc, 0.3, 0.9))


def propose(text: str, seed: int | None = None, repeat: int = 0) -> str:
    """The reply to an llm_guided prompt: one line of reasoning and a ```json list of configurations."""
    req = read_request(text)
    if not req.params:
        return "# I cannot find the parameters in the prompt, so I propose nothing.\n\n```json\n[]\n```\n"
    # `repeat` is ignored on purpose: the same prompt and seed always get the same proposals, so a
    # run does not depend on what else its process was asked before (bench workers share processes).
    digest = hashlib.sha256(f"{seed}|{text}".encode()).digest()
    picker = _Picker(req, np.random.default_rng(int.from_bytes(digest[:8], "big")))
    parents = [picker.row_of[ix] for ix in (_indices(req, c) for c, _ in req.best) if ix in picker.row_of][:4]
    if not parents:
        rows = picker.latin_hypercube(req.batch)
        why = (
            f"nothing works yet, so {len(rows)} configurations spread over the space (Latin hypercube over "
            "parameter indices, each moved to the nearest one that meets the restrictions)"
        )
    else:
        n_near = int(round(req.batch * exploit_share(req)))
        near = picker.neighbours(parents, n_near)
        far = picker.spread(req.batch - len(near))
        rows = near + far
        why = (
            f"{len(near)} neighbours of the best {len(parents)} results (best {req.best[0][1]:.4g}) and "
            f"{len(far)} configurations far from everything tried so far ({100 * req.used_fraction:.0f}% of "
            f"the budget used, fdc {req.stats.get('fdc', float('nan')):.2f})"
        )
    names = list(req.params)
    configs = [{n: req.params[n][int(i)] for n, i in zip(names, picker.valid[r])} for r in rows]
    body = "\n".join("  " + json.dumps(c) + ("," if k < len(configs) - 1 else "") for k, c in enumerate(configs))
    return f"# Proposals: {why}.\n\n```json\n[\n{body}\n]\n```\n"
