"""Operators and models chosen by what pays: a discounted UCB bandit (`[evolution.bandit]`).

Why discounted UCB (Garivier & Moulines 2011, as LLaMEA 1.4 uses for its operators) and not a
cost-aware UCB over fixed arms: what pays changes during a run -- `new` pays early, `refine` once
good parents exist, `fix` while failures are fresh -- and discounting old pulls (factor `discount`
per candidate) lets the bandit follow that, where a stationary UCB would keep trusting the first
generations. Cost enters through the reward, so both operators and models (ShinkaEvolve #82: a
bandit over models only) are judged by the same yardstick:

    reward = max(0, score - baseline) / cost,  cost = tokens / 1000 * price of the model

`baseline` is the best score among the candidate's working parents (refine, simplify, crossover),
else the population's best when it was planned (new, fix): the improvement the candidate brought.
A failure earns 0. Candidates made before any candidate worked (generation 0) had nothing to
improve on and settle nothing: their whole score would dwarf every later gain. Rewards are divided by the largest reward seen so far, so the exploration weight
`exploration` means the same whatever the units of cost.

A generation's plans are drawn before any of its candidates is made: each choice within a
generation counts as a pull at the arm's current mean (a "hallucinated" pull, as batch UCB does),
so one generation spreads over arms instead of taking the same argmax n times. Pulls are settled
in plan order after the generation is made, so the bandit depends only on the seed and the
candidates: a resume rebuilds it by replay, and the generation records hold its state to check that.
"""

from __future__ import annotations

import math


class DiscountedUCB:
    """Discounted UCB over named arms, with rewards normalised by the largest seen."""

    def __init__(self, arms: list[str], discount: float, exploration: float):
        self.arms = list(arms)
        self.discount = discount
        self.exploration = exploration
        self.n = {a: 0.0 for a in self.arms}  # discounted pulls
        self.s = {a: 0.0 for a in self.arms}  # discounted normalised reward
        self.pending = {a: 0 for a in self.arms}  # pulls chosen in this generation, not yet settled
        self.top = 0.0  # largest raw reward seen (the normaliser)
        self.pulls = {a: 0 for a in self.arms}  # undiscounted, for the record and `status`

    def _mean(self, a: str) -> float:
        return self.s[a] / self.n[a] if self.n[a] > 0 else 0.0

    def choose(self, applicable: list[str]) -> str:
        """The arm with the highest upper bound among `applicable` (an arm never pulled first)."""
        arms = [a for a in self.arms if a in applicable]
        n = {a: self.n[a] + self.pending[a] for a in arms}
        fresh = [a for a in arms if n[a] == 0]
        if fresh:
            pick = fresh[0]
        else:
            total = sum(n.values())
            pick = max(
                arms, key=lambda a: self._mean(a) + self.exploration * math.sqrt(2 * math.log(max(total, 1.0)) / n[a])
            )  # ties: the first arm in the configured order
        self.pending[pick] += 1
        return pick

    def settle(self, arm: str, reward: float) -> None:
        """One pull of `arm` earned `reward` (raw, >= 0): discount the past, count this one."""
        self.pending[arm] = max(0, self.pending[arm] - 1)
        self.top = max(self.top, reward)
        for a in self.arms:
            self.n[a] *= self.discount
            self.s[a] *= self.discount
        self.n[arm] += 1.0
        self.s[arm] += reward / self.top if self.top > 0 else 0.0
        self.pulls[arm] += 1

    def state(self) -> dict:
        """Plain-JSON state (the generation record keeps it)."""
        return {
            a: {"pulls": self.pulls[a], "weight": round(self.n[a], 6), "mean": round(self._mean(a), 6)}
            for a in self.arms
        }


def improvement(score: float | None, baseline: float | None) -> float:
    """What a candidate added over its baseline (0 for a failure or no gain)."""
    if score is None:
        return 0.0
    return max(0.0, score - (baseline if baseline is not None else 0.0))


def bandit_lines(record: dict | None) -> list[str]:
    """`status` lines: the bandit's pulls and mean reward per operator and model after the last generation."""
    bandit = (record or {}).get("bandit")
    if not bandit:
        return []
    lines = [f"bandit after generation {record['generation']} (discounted UCB; mean = normalised gain per token):"]
    for what in ("operators", "models"):
        if bandit.get(what):
            lines.append(
                f"  {what}: "
                + ", ".join(f"{a} {v['pulls']} pulls (mean {v['mean']:.3f})" for a, v in bandit[what].items())
            )
    return lines
