"""The campaign's race between generations: more runs for the candidates that can still survive.

`Race` is called by the loop with the pool survivors are chosen from; it asks
`generator.racing.rule.race_round` who is undecided, adds their runs (recorded in the archive's
races.jsonl before the candidate is changed) and asks again until everybody is decided or capped.
At the end of the campaign `final` races the top `mu` for the first place, so the winner is measured
as far as the choice of winner needs (the race between generations only settles who is among the top).
On resume and replay a recorded extension is reused, never run again, and since the decisions depend
only on the recorded fitness the race continues exactly where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from generator.archive import Archive, Candidate, apply_race
from generator.racing.rule import Entrant, RaceSettings, merge_fitness, race_round, repeat_blocks


def repeats_of(cand: Candidate) -> int:
    """Runs per task a candidate has (the fewest over its tasks)."""
    per_task = (cand.fitness or {}).get("per_task") or {}
    return min((len(t.get("per_repeat") or ()) for t in per_task.values()), default=0)


class Race:
    """Races pools of candidates; `extend(code, repeats, first_repeat)` runs more repeats of a candidate."""

    def __init__(
        self,
        settings: RaceSettings,
        archive: Archive,
        code: Callable[[Candidate], str],
        extend: Callable[[str, int, int], object],
        aggregate: str = "mean",
    ):
        self.settings = settings
        self.archive = archive
        self.code = code
        self.extend = extend
        self.aggregate = aggregate
        self.recorded = {(r["id"], int(r["to"])): r for r in archive.races()}
        self.runs_added = 0  # sandbox runs this session added (not those reused from the record)

    def entrant(self, cand: Candidate) -> Entrant:
        n = repeats_of(cand)
        if (cand.fitness.get("metadata") or {}).get("race_stopped"):
            n = self.settings.max_repeats  # its later runs failed: it keeps what it has
        return Entrant(cand.id, cand.score, repeat_blocks(cand.fitness["per_task"]), n)

    def __call__(self, pool: list[Candidate], mu: int) -> None:
        """Race `pool` (working, non-duplicate candidates) for `mu` places, in rounds, until decided."""
        pool = [c for c in pool if c.ok and not c.duplicate_of]
        self._rounds(lambda: pool, mu, self.settings)

    def final(self, made: list[Candidate], mu: int) -> None:
        """Race the campaign's `mu` best of `made` (the candidates it made) for the first place.

        Without the indifference zone: a parent's place may be settled within delta (it only breeds), the
        winner is what the user gets, so it is settled by the test alone or measured to the cap. The mu best
        are chosen again every round: more runs often lower a lucky candidate's mean (its first runs were
        why it ranked high), and whoever then moves up is raced too, not left first on its first runs."""
        field = [c for c in made if c.ok and not c.duplicate_of]
        top = lambda: sorted(field, key=lambda c: (-c.score, c.id))[:mu]  # noqa: E731 - re-ranked each round
        self._rounds(top, 1, replace(self.settings, indifference=0.0))

    def _rounds(self, pool: Callable[[], list[Candidate]], mu: int, settings: RaceSettings) -> None:
        """Rounds of race_round on `pool()` until nobody in it is undecided below the cap."""
        while True:
            entrants = pool()
            more = race_round([self.entrant(c) for c in entrants], mu, settings)
            if not more:
                return
            by_id = {c.id: c for c in entrants}
            for cid in sorted(more):  # plan order: the record is the same however the race is run
                self._run_more(by_id[cid], more[cid])

    def _run_more(self, cand: Candidate, to: int) -> None:
        record = self.recorded.get((cand.id, to))
        if record is None:
            have = repeats_of(cand)
            fitness = self.extend(self.code(cand), to - have, have)
            fitness = fitness.to_dict() if hasattr(fitness, "to_dict") else fitness
            self.runs_added += (to - have) * len(cand.fitness["per_task"])
            if fitness.get("error"):
                record = {"id": cand.id, "to": to, "error": fitness["error"]}
            else:
                record = {"id": cand.id, "to": to, "fitness": merge_fitness(cand.fitness, fitness, self.aggregate)}
            self.archive.append_race(record)  # durable before the candidate changes
            self.recorded[(cand.id, to)] = record
        apply_race(cand, record)
