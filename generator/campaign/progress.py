"""A campaign's progress bars: candidates recorded (of the budget) and sandbox runs evaluated.

On a terminal only: written to a file or a pipe, tqdm's carriage-return updates would fill it
(`disable=None` leaves that to tqdm, which asks whether the stream is a terminal). A resumed run's
bar starts at the candidates already recorded: they are recalled, not made, so counting them again
would make the rate, and the time left, wildly optimistic.
"""

from __future__ import annotations

import sys


class CampaignProgress:
    """The two bars of a campaign; `recorded`: ids of candidates a resume recalls from the archive."""

    def __init__(self, enabled: bool, budget: int, recorded=()):
        from tqdm import tqdm

        self.recorded = set(recorded)
        shown = (not enabled) or None  # None: shown on a terminal only
        self.candidates = tqdm(
            total=budget,
            initial=min(len(self.recorded), budget),
            desc="candidates",
            unit="cand",
            file=sys.stderr,
            disable=shown,
            dynamic_ncols=True,
            position=0,
        )
        # sandbox runs (task x repeat) of the candidates evaluated in this session
        self.runs = tqdm(desc="evaluations", unit="run", file=sys.stderr, disable=shown, dynamic_ncols=True, position=1)

    def recorded_one(self, cid: str, best: float | None) -> None:
        """A candidate reached the archive (one recalled on resume is counted already)."""
        if cid not in self.recorded:
            self.candidates.update(1)
        self.candidates.set_postfix_str(f"best={best:.3f}" if best is not None else "best=-")

    def evaluated(self, runs: int) -> None:
        self.runs.update(runs)

    def close(self) -> None:
        self.runs.close()
        self.candidates.close()
