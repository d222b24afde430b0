"""Speculation: acting on a reply before the check in plan order has reached it.

Replies arrive in any order, but a reply is checked (copy? near-copy?) only once every earlier
sibling's final code is known, so that the run does not depend on arrival order. Waiting for that
would leave the sandbox (or the LLM) idle, so `InFlight` acts on an early reply as its check will
most likely decide: it starts evaluating it, or, when it nearly copies the archive, asks for it
again at once. When the check comes to the reply, that work is used if the check decided the same
(same code to evaluate; the same re-ask prompt) and thrown away otherwise, so speculation only
ever costs work, never changes the result. It is skipped when the reply resembles an earlier
sibling's reply that is in already (the check would likely overrule it).
"""

from __future__ import annotations

import hashlib
from concurrent.futures import Future
from dataclasses import dataclass, field

from generator.archive import Candidate
from generator.campaign.evolution import Plan
from generator.campaign.novelty import Nearest, Shape, similarity
from generator.campaign.port import CampaignPort
from generator.llm.client import CapReached
from generator.llm.prompts import normalise_code
from generator.llm.records import Exchange

# What a slot is doing; it moves down this list (asking <-> replied once when re-asked).
PLANNED, ASKING, REPLIED, BLOCKED, EVALUATING, WAITING, DONE = (
    "planned",
    "asking",
    "replied",
    "blocked",
    "evaluating",
    "waiting",
    "done",
)


@dataclass
class Slot:
    """One planned candidate on its way to the archive."""

    plan: Plan
    cand: Candidate
    recorded: bool = False  # came back from the archive (resume): nothing to ask or evaluate
    stage: str = PLANNED
    messages: list[dict] | None = None
    exchange: Exchange | None = None
    reasked: bool = False
    first: dict = field(default_factory=dict)  # the first reply when it was re-asked
    spec: Future | None = None  # an evaluation started before an earlier sibling's reply was in
    spec_code: str | None = None
    spec_shape: Shape | None = None
    spec_near: Nearest | None = None  # what the speculation found nearest
    spec_tried: bool = False
    spec_reask: Future | None = None  # a re-ask sent before the check in plan order confirmed it
    spec_messages: list[dict] | None = None


class Speculation:
    """The speculative part of `InFlight` (which holds the state used here)."""

    c: CampaignPort  # the campaign, as InFlight holds it

    def _speculate(self, slot: Slot, slots: list[Slot], earlier: list[Slot]) -> None:
        """Act on a reply whose earlier siblings are not all checked yet, as the check will most
        likely decide: evaluate it, or ask again at once if it nearly copies the archive. Nothing
        is done when it resembles an earlier sibling's reply (the check decides first then)."""
        reply = self._reply(slot.exchange) if slot.exchange.ok else None
        if reply is None or reply.code is None:
            slot.spec_tried = True
            return
        shape = slot.spec_shape = slot.spec_shape or Shape.of(reply.code)
        layout = hashlib.sha256(normalise_code(reply.code).encode()).hexdigest()[:16]
        near = slot.spec_near = self.index.nearest(shape)
        limit = min(self.novelty.max_similarity, 0.999)
        for other in earlier:  # a sibling that will be asked again does not count with its first reply
            if (
                other.spec_shape is not None
                and shape is not None
                and not self._will_reask(other)
                and similarity(shape, other.spec_shape) > limit
            ):
                slot.spec_tried = True
                return
        if layout in self.by_hash or near.exact:
            slot.spec_tried = True
            return
        if self._will_reask(slot):
            if not self._room():
                return  # try again when a request is answered
            slot.spec_tried = True
            messages = self.c.messages(
                slot.plan, self.existing, copied=self._candidate(near.id, slots), similarity=near.similarity
            )
            try:
                slot.spec_reask = self._send(slot, messages, reask=True)
                slot.spec_messages = messages
            except CapReached:
                pass  # not now: the check in plan order asks again, waiting for room under the cap
            return
        slot.spec_tried = True
        slot.spec_code = reply.code
        slot.spec = self._eval.submit(self._evaluate, reply.code)
        self.pending[slot.spec] = slot

    def _will_reask(self, slot: Slot) -> bool:
        near = slot.spec_near
        return (
            near is not None
            and near.id is not None
            and not near.exact
            and near.similarity > self.novelty.max_similarity
        )

    def _drop_speculation(self, slot: Slot, keep_reask: bool = False) -> None:
        for name in ("spec",) if keep_reask else ("spec", "spec_reask"):
            future = getattr(slot, name)
            if future is not None:
                future.cancel()
                if future in self.pending:
                    self.discarded.add(future)  # running or unread: its result is thrown away
                setattr(slot, name, None)
