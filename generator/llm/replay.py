"""`replay/RUN_DIR`: the exchanges of an earlier run served again (registry "llm_backend", name "replay")."""

from __future__ import annotations

from pathlib import Path

from generator.errors import TunesmithError
from generator.llm.backend import LLMBackend
from generator.llm.client import StopCampaign
from generator.llm.records import Exchange, prompt_hash, read_exchanges


class ReplayBackend:
    """Serves the recorded exchanges of RUN_DIR again, as if the LLM answered them a second time.

    A call for a candidate gets the last exchange recorded for that candidate id and prompt (so a
    run that was interrupted and resumed replays exactly); calls without a recorded ref get the
    rest in order.
    """

    def __init__(self, run_dir: str):
        self.run_dir = run_dir
        if not (Path(run_dir) / "config.json").exists():
            raise TunesmithError(
                f"llm.model = 'replay/{run_dir}': {run_dir}: not a Tunesmith run directory (no "
                "config.json); give the output.run_dir of a campaign"
            )
        recorded = read_exchanges(run_dir)
        self.by_ref: dict[str, list[Exchange]] = {}
        for ex in recorded:
            if ex.ref:
                self.by_ref.setdefault(ex.ref, []).append(ex)
        self.in_order = recorded
        self.used: set[str] = set()
        self.next = 0

    def __call__(self, messages: list[dict], ref: str | None = None) -> Exchange:
        if ref in self.by_ref:
            # a ref asked more than once (a re-ask sent early on a guess, then again): the answer to
            # the same prompt, else the last
            phash = prompt_hash(messages)
            ex = next((x for x in reversed(self.by_ref[ref]) if x.prompt_hash == phash), self.by_ref[ref][-1])
            self.used.add(ex.id)
            return ex
        while self.next < len(self.in_order) and self.in_order[self.next].id in self.used:
            self.next += 1
        if self.next >= len(self.in_order):
            raise StopCampaign(
                f"replay/{self.run_dir}: all {len(self.in_order)} recorded exchanges were served; "
                "the replayed run ends here"
            )
        ex = self.in_order[self.next]
        self.used.add(ex.id)
        self.next += 1
        return ex


class ReplayLLM(LLMBackend):
    """Recorded answers: nothing is sent, nothing is paid, no key is needed."""

    def missing_key(self, settings) -> str | None:
        return None

    def check(self, settings, keys: bool = True) -> None:
        return None  # the run directory is checked when the client opens it

    def open(self, settings, own_completion: bool = False):
        return ReplayBackend(settings.model.split("/", 1)[1])


BACKEND = ReplayLLM()
