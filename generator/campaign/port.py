"""What a generation maker (`InFlight`, with its `Speculation` part) asks of the campaign that drives it.

`Campaign` (campaign.loop) is the one implementation; `InFlight` holds it as `self.c` and uses no member
outside this Protocol (tests/campaign/test_campaign_port.py runs `InFlight` through a port that exposes only these
members). Everything here is called from the campaign's own thread except where a docstring says a request
or evaluation thread calls it: those members must be thread-safe.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from generator.archive import Archive, Candidate
    from generator.campaign.evolution import Plan
    from generator.config import CampaignConfig
    from generator.llm.client import LLMClient
    from generator.llm.prompts import ParentView
    from generator.tasks.cache import Task


class CampaignPort(Protocol):
    """The campaign as a generation maker sees it: settings, tasks, archive, prompts, LLM and evaluator."""

    cfg: CampaignConfig
    """The validated campaign settings. Read when `InFlight` is made ([llm] concurrency, [novelty]) and
    for each request ([llm] seed and model, [evolution] edit, [llm] max_consecutive_errors)."""

    train: list[Task]
    """The training tasks. Read once when `InFlight` is made: live tasks are evaluated one at a time."""

    archive: Archive
    """The run's store. `code(candidate)` is read for a diff edit's parent and for a recalled candidate;
    `write_code(id, code)` when a reply is checked; `append_candidate(candidate)` when a candidate is
    recorded, in plan order."""

    def existing(self) -> list[ParentView]:
        """The best working algorithms so far (for 'new' prompts to differ from). Called once at the start
        of each generation, so every prompt of it sees the archive as the previous generation left it."""
        ...

    def recorded(self, plan: Plan) -> Candidate | None:
        """The candidate `plan` asks for if the archive holds it already (resume), else None. Called once
        per plan when its generation starts; raises when the record does not match the plan."""
        ...

    def messages(
        self,
        plan: Plan,
        existing: list[ParentView],
        copied: Candidate | None = None,
        similarity: float = 0.0,
        edit_error: str | None = None,
    ) -> list[dict]:
        """The prompt of `plan`. Called before its first request; again with `copied` (what the reply nearly
        copied) when it is asked again; with `edit_error` (from a request thread) when its diff edit did not
        apply. The same arguments always give the same messages."""
        ...

    def llm_for(self, model: str | None) -> LLMClient:
        """The client that asks `model` (None: the campaign's model). Called before each request and from
        request threads (thread-safe)."""
        ...

    def evaluate(self, code: str) -> Any:
        """Fitness of a candidate's code on the training tasks (sandboxed). Called from an evaluation thread,
        once per candidate that goes to evaluation, and for a speculative evaluation (thread-safe)."""
        ...

    def evaluated(self) -> None:
        """One candidate's evaluation is done and counted (the progress bar). Called in plan-check order."""
        ...

    def candidate(self, cid: str) -> Candidate:
        """A candidate recorded in this session, by id. Called for a copy's twin or a near-copy's original
        that is not a sibling in the current generation."""
        ...

    def recorded_one(self, cand: Candidate) -> None:
        """`cand` reached the archive. Called once per candidate, in plan order, after it is appended (or,
        on resume, recalled): progress and status follow."""
        ...
