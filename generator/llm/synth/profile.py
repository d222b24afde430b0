"""What the search-space statistics say, turned into weights over components and tuned defaults.

A Profile reads the averaged statistics of the prompt (budget_fevals, fdc, local_optima_share,
constraint_density, ...) and weighs each option of each slot. Each weight rule that favours an
option carries its reason, quoting the statistic, so the generated code can say why it was built
this way. The rules are rules of thumb, checked on the benchmark-hub spaces during development
(campaign results: benchmarks/synth_quickstart.py): small budgets favour spread initial samples,
model-screened moves and single-point search; rugged spaces (many local optima, low
fitness-distance correlation) favour populations, restarts and non-greedy acceptance.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from generator.llm.synth.compose import (
    DEFAULT_HP,
    POPULATION_SLOTS,
    SLOT_OPTIONS,
    TRAJECTORY_SLOTS,
    Composition,
    clamp_hp,
)

# Base weights of each option before the statistics speak: favour what scored best on the
# benchmark-hub spaces in the development runs (model-screened moves and broods, Hamming moves,
# small populations with leader-guided crossover), keep everything else possible.
BASE = {
    "scheme": {"trajectory": 0.8, "population": 1.0},
    "init": {"random": 1.0, "spread": 1.0, "design": 1.0, "screened": 1.0},
    "neighbourhood": {"Hamming": 1.5, "adjacent": 0.4, "strictly-adjacent": 0.4, "mixed": 0.8, "index-step": 0.6},
    "screening": {"none": 0.6, "knn": 1.4, "additive": 0.6, "lcb": 1.0},
    "acceptance": {"greedy": 1.2, "annealing": 0.8, "threshold": 0.6, "late": 0.8},
    "memory": {"visited": 1.0, "tabu": 0.6},
    "jump": {"none": 1.0, "random": 0.5, "adaptive": 0.8},
    "restart": {"none": 0.5, "random": 1.0, "perturb": 1.0, "screened": 1.0},
    "step": {"fixed": 1.0, "adaptive": 1.0},
    "crossover": {"none": 0.3, "uniform": 0.8, "one-point": 0.8, "leaders": 1.2},
    "replacement": {"plus": 1.0, "elitist": 0.8},
    "local_search": {"none": 1.0, "memetic": 0.8},
    "brood": {"single": 0.6, "screened": 1.4},
}


# Defaults that grow with the evaluation budget: (share of budget_fevals, lowest, highest).
BUDGET_SCALED = {
    "init_size": (0.02, 4, 20),
    "pop_size": (1 / 60, 6, 16),
    "patience": (0.1, 10, 100),
    "restart_sample": (0.01, 2, 8),
    "ls_steps": (1 / 60, 4, 20),
    "history_length": (1 / 40, 5, 30),
}


def _fmt(x: float) -> str:
    return f"{x:.3g}"


@dataclass
class Profile:
    """The statistics that steer the design (None where the prompt did not give them)."""

    budget: float | None = None  # evaluations per run
    fdc: float | None = None
    optima: float | None = None  # local_optima_share
    constrained: float | None = None  # constraint_density: share of the Cartesian product removed
    failed: float | None = None

    @property
    def small_budget(self) -> bool:
        return self.budget is not None and self.budget < 300

    @property
    def tiny_budget(self) -> bool:
        return self.budget is not None and self.budget < 80

    @property
    def rugged(self) -> bool:
        return (self.optima is not None and self.optima > 0.004) or (self.fdc is not None and self.fdc < 0.05)

    @property
    def structured(self) -> bool:
        return self.fdc is not None and self.fdc > 0.2

    # -- weights --------------------------------------------------------------------------
    def rules(self, slot: str) -> list[tuple[str, float, str]]:
        """(option, factor, reason) rules the statistics trigger for one slot."""
        out = []  # (slot, option, factor, reason)
        b = _fmt(self.budget) if self.budget is not None else ""
        if self.tiny_budget:
            out += [
                (
                    "scheme",
                    "trajectory",
                    2.0,
                    f"budget_fevals {b}: too few evaluations for generations of a population",
                ),
                (
                    "jump",
                    "adaptive",
                    1.3,
                    f"budget_fevals {b}: no evaluations to spend on a fixed exploration "
                    "rate; explore only while exploring pays",
                ),
                ("acceptance", "greedy", 1.5, f"budget_fevals {b}: no evaluations to spare on worse moves"),
            ]
        if self.small_budget:
            out += [
                (
                    "init",
                    "spread",
                    2.0,
                    f"budget_fevals {b}: the first samples decide much of the score, so the "
                    "initial sample is spread over every parameter's range",
                ),
                (
                    "screening",
                    "knn",
                    2.0,
                    f"budget_fevals {b}: a nearest-neighbour model spends the few "
                    "evaluations on the most promising neighbours",
                ),
                (
                    "screening",
                    "lcb",
                    1.5,
                    f"budget_fevals {b}: a surrogate with a confidence bound spends the "
                    "few evaluations on promising or unexplored configurations",
                ),
                (
                    "brood",
                    "screened",
                    2.0,
                    f"budget_fevals {b}: a nearest-neighbour model picks the most "
                    "promising of several children, so fewer evaluations are wasted",
                ),
            ]
        elif self.budget is not None:
            out += [
                ("local_search", "memetic", 1.5, f"budget_fevals {b}: room for local search inside a population"),
                ("scheme", "population", 1.3, f"budget_fevals {b}: enough evaluations for several generations"),
            ]
        if self.rugged:
            why = ", ".join(
                x
                for x in (
                    f"local_optima_share {_fmt(self.optima)}" if self.optima is not None else "",
                    f"fdc {_fmt(self.fdc)}" if self.fdc is not None else "",
                )
                if x
            )
            why += ": a rugged space"
            out += [
                ("scheme", "population", 1.5, why + "; a population keeps several basins alive"),
                ("acceptance", "annealing", 1.5, why + "; accepting some worse moves leaves local optima"),
                ("acceptance", "late", 1.5, why + "; late acceptance leaves local optima"),
                ("restart", "random", 1.5, why + "; random restarts sample new basins"),
                (
                    "restart",
                    "screened",
                    1.5,
                    why + "; once local search stalls, model-screened samples from the "
                    "whole space find basins a local search cannot reach",
                ),
                ("jump", "random", 1.5, why + "; random jumps sample new basins"),
                (
                    "jump",
                    "adaptive",
                    1.5,
                    why + "; switching to exploration when local search stalls leaves a basin at the right time",
                ),
                (
                    "init",
                    "design",
                    2.0,
                    why + "; a maximin design sized by the budget samples many basins "
                    "before descending (benchmarks/results/small_spaces.json)",
                ),
                (
                    "init",
                    "screened",
                    2.0,
                    why + "; model-screened samples from the whole space find the basins "
                    "a local search cannot reach (benchmarks/results/screened_init.json)",
                ),
                ("neighbourhood", "Hamming", 1.5, why + "; Hamming moves cross a parameter's whole range"),
            ]
        if self.structured:
            why = f"fdc {_fmt(self.fdc)}: good configurations cluster around the optimum"
            out += [
                ("neighbourhood", "mixed", 1.5, why + ", so small steps come first"),
                ("restart", "perturb", 1.5, why + ", so restarts stay near the best"),
                ("acceptance", "greedy", 1.3, why + ", so greedy descent pays"),
            ]
        if self.constrained is not None and self.constrained > 0.5:
            out += [
                (
                    "neighbourhood",
                    "index-step",
                    0.5,
                    f"constraint_density {_fmt(self.constrained)}: most of the "
                    "Cartesian product is invalid, so moves come from get_neighbors, valid by construction",
                )
            ]
        if self.failed is not None and self.failed > 0.05:
            out += [
                (
                    "screening",
                    "knn",
                    1.5,
                    f"failed_fraction {_fmt(self.failed)}: the model learns where configurations fail",
                )
            ]
        return [(option, factor, why) for s, option, factor, why in out if s == slot]

    def weights(self, slot: str) -> dict[str, float]:
        """Weight of each option of a slot: the base weight times the factors of the rules that fire."""
        w = dict(BASE[slot])
        for option, factor, _ in self.rules(slot):
            w[option] *= factor
        return w

    def pick(self, slot: str, rng: random.Random, exclude: str | None = None) -> str | None:
        """An option for a slot, drawn by weight (None when no other option exists)."""
        w = {k: v for k, v in self.weights(slot).items() if k != exclude}
        if not w:
            return None
        return rng.choices(sorted(w), [w[k] for k in sorted(w)])[0]

    def default(self, name: str) -> float | int:
        """A default for a hyperparameter, scaled to the evaluation budget where that matters."""
        b = self.budget
        if b is None:
            return DEFAULT_HP[name]
        if name == "init_share":  # a share itself: the fewer evaluations, the more of them the design takes
            return 0.1 if self.tiny_budget else 0.08 if self.small_budget else 0.04
        share, low, high = BUDGET_SCALED.get(name, (None, None, None))
        if share is None:
            return DEFAULT_HP[name]
        return clamp_hp(name, min(high, max(low, b * share)))

    # -- compositions ---------------------------------------------------------------------
    def draw_scheme(self, rng: random.Random, scheme: str) -> Composition:
        """A composition of a given scheme with every slot drawn by weight."""
        slots = {}
        names = TRAJECTORY_SLOTS + ("step",) if scheme == "trajectory" else POPULATION_SLOTS
        for slot in names + ("neighbourhood", "screening", "acceptance"):
            slots.setdefault(slot, self.pick(slot, rng))
        if slots["acceptance"] != "greedy" and rng.random() < 0.5:
            slots["memory"] = "tabu"  # accepting worse moves invites cycling; a tabu list stops it
        comp = Composition(scheme, slots, {})
        comp.hp = {h: self.default(h) for h in comp.hyperparameter_names()}
        return comp.normalised()

    def draw(self, rng: random.Random) -> tuple[Composition, list[str]]:
        """A whole new composition and the reasons behind it."""
        comp = self.draw_scheme(rng, self.pick("scheme", rng))
        return comp, self.reasons_for(comp)

    def reasons_for(self, comp: Composition) -> list[str]:
        """The statistics-based reasons that favour the options this composition uses."""
        chosen = {("scheme", comp.scheme)} | set(comp.normalised().slots.items())
        reasons = [
            f"{option}: {why}"
            for slot in ("scheme",) + tuple(SLOT_OPTIONS)
            for option, factor, why in self.rules(slot)
            if factor > 1 and (slot, option) in chosen
        ]
        if self.budget is not None:
            sized = [h for h in ("init_size", "pop_size", "patience") if h in comp.hp]
            if sized:
                reasons.append(f"defaults of {', '.join(sized)} scaled to budget_fevals {_fmt(self.budget)}")
        return list(dict.fromkeys(reasons))

    def weak_slot(self, slots: list[str], per_task: dict, task_stats: dict, rng: random.Random) -> str:
        """The slot to change in a refinement: where the parent's weakest task points, else any."""
        scored = {t: s for t, s in per_task.items() if s is not None and t in task_stats}
        if scored:
            worst = min(scored, key=scored.get)
            budget = task_stats[worst].get("budget_fevals")
            if budget is not None and budget < 300:
                early = [s for s in ("init", "screening") if s in slots]
                if early and rng.random() < 0.6:
                    return rng.choice(early)  # weak where the budget is small: the early search matters
        return rng.choice(slots)


def profile_of(stats: dict[str, float]) -> Profile:
    """The Profile of averaged prompt statistics."""
    return Profile(
        stats.get("budget_fevals"),
        stats.get("fdc"),
        stats.get("local_optima_share"),
        stats.get("constraint_density"),
        stats.get("failed_fraction"),
    )
