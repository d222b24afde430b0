"""A generation in flight: its candidates asked for together, each evaluated once its reply is in.

`InFlight.make(plans)` turns one generation's plans into candidates. Up to `[llm] concurrency`
requests are in flight at once; evaluations run beside them, on one pool of sandbox workers
shared by all candidates. The result is the one a serial run gives with the same replies,
whatever order the replies arrive in, because every step that depends on another candidate is
taken in plan order:

- prompts read the archive as the previous generation left it, never a sibling;
- a reply is checked against the archive (copy? near-copy?) only after every earlier sibling's
  final code is known (its re-ask answered), so "the archive" means the same in every run;
- candidates are appended to the archive in plan order (one that finished early waits).

A reply that overtakes an earlier sibling's is acted on at once, as its check will most likely
decide (speculation): evaluated, or asked again if it nearly copies the archive. When the check
in plan order comes to it, that work counts if the check decides the same, and is thrown away if
not (e.g. the reply copied a sibling whose reply came later: the only case where near-copy
rejection costs an evaluation, or an early re-ask an LLM call).

Caps: a request reserves its worst case (prompt plus a full-length reply) before it is sent, in
plan order; one that could pass a cap waits until the calls in flight have finished and their real
usage is known, and stops the campaign only if it still could. A stop at one candidate (cap,
fatal LLM error, too many LLM failures in a row, a broken evaluation) records every earlier
candidate first, so the archive is always a prefix of the serial run's and a resume continues it.

Diff edits (`[evolution] edit = "diff"`): a refine, simplify or fix reply's SEARCH/REPLACE blocks
are applied to Parent 1's code in the request's thread; blocks that do not apply are asked again
for full code at once (ref `<id>:full`), so the candidate never silently copies its parent.

With `concurrency = 1` one candidate is asked for, checked, evaluated and recorded before the
next is asked for: the loop of earlier versions.
"""

from __future__ import annotations

import hashlib
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from generator.archive import Candidate
from generator.campaign.evolution import Plan
from generator.campaign.novelty import Shape, ShapeIndex
from generator.campaign.port import CampaignPort
from generator.campaign.speculation import (
    ASKING,
    BLOCKED,
    DONE,
    EVALUATING,
    PLANNED,
    REPLIED,
    WAITING,
    Slot,
    Speculation,
)
from generator.errors import TunesmithError
from generator.llm.client import CapReached, StopCampaign
from generator.llm.edits import apply_reply
from generator.llm.prompts import DIFF_OPERATORS, Reply, extract_reply, normalise_code
from generator.llm.reply_code import truncation_error


class InFlight(Speculation):
    """Makes generations for a campaign (prompts, LLM, archive, evaluation are the campaign's); it uses
    only what `CampaignPort` declares."""

    def __init__(self, campaign: CampaignPort):
        self.c = campaign
        self.concurrency = campaign.cfg.llm.concurrency
        self.novelty = campaign.cfg.novelty
        self.index = ShapeIndex()  # the archive's code, as far as plan order has reached
        self.by_hash: dict[str, str] = {}  # layout-normalised code hash -> first candidate with it
        self.unanswered = 0  # requests in a row that got no answer (after the client's retries)
        self.truncated: set[str] = set()  # candidates whose reply was cut off (max_tokens): their error says so
        # exchange id -> how its diff edit went ({"blocks", "applied", "code" or "reason"}): set in the
        # request's thread, read by the in-order check (generator.llm.edits)
        self.edits: dict[str, dict] = {}
        self._llm = ThreadPoolExecutor(self.concurrency, thread_name_prefix="tunesmith-llm")
        # live tasks measure real kernels on one device: two candidates timed at once would disturb
        # each other's measurements, so they are evaluated one after the other (requests still overlap)
        live = any(t.info.get("live") for t in campaign.train)
        self._eval = ThreadPoolExecutor(1 if live else self.concurrency, thread_name_prefix="tunesmith-eval")
        self.pending: dict[Future, Slot] = {}
        self.discarded: set[Future] = set()  # speculative work the in-order check overruled
        self.asking: set[Future] = set()  # requests in flight

    def close(self) -> None:
        """Stop the thread pools (requests already sent finish and are recorded)."""
        self._llm.shutdown(wait=False, cancel_futures=True)
        self._eval.shutdown(wait=False, cancel_futures=True)

    # -- the generation ------------------------------------------------------------------------
    def make(self, plans: list[Plan]) -> list[Candidate]:
        """The candidates of `plans`, in plan order; raises (after recording the ones before) on a stop."""
        self.existing = self.c.existing()  # prompts see the archive as the previous generation left it
        slots = [self._slot(p) for p in plans]
        n, send, check, record = len(slots), 0, 0, 0
        stop: tuple[int, BaseException] | None = None

        def stop_at(i: int, exc: BaseException) -> None:
            nonlocal stop
            if stop is None or i < stop[0]:
                stop = (i, exc)

        try:
            while True:
                before = (send, check, record, [s.stage for s in slots])
                limit = n if stop is None else stop[0]
                # check: in plan order, each against the archive and the siblings before it
                while check < (n if stop is None else stop[0]) and slots[check].stage in (REPLIED, BLOCKED):
                    slot = slots[check]
                    if slot.stage == REPLIED:
                        self._check(slot, slots, stop_at, check)
                        if slot.stage == REPLIED:
                            continue  # asked again early, and that answer is in: check it now
                    if slot.stage == BLOCKED and not (self._room() and self._ask(slot, stop_at, check)):
                        break  # a re-ask waits for room (or for a cap to clear)
                    if slot.stage == ASKING:
                        break  # re-asked: the siblings after it wait for its final code
                    check += 1
                # a reply that overtook an earlier sibling's is acted on now (evaluated, or asked again
                # if it nearly copies the archive); the check in plan order decides whether that counts
                for slot in slots[check + 1 : limit]:
                    if slot.stage == REPLIED and not (slot.recorded or slot.reasked or slot.spec_tried):
                        self._speculate(slot, slots, slots[check : slots.index(slot)])
                # ask: in plan order, while there is room
                while send < limit and (send <= record if self.concurrency == 1 else self._room()):
                    slot = slots[send]
                    if not slot.recorded:
                        slot.messages = slot.messages or self.c.messages(slot.plan, self.existing)
                        if not self._ask(slot, stop_at, send):
                            break
                    send += 1
                for slot in slots[:check]:
                    if slot.stage == WAITING:
                        self._copy_twin(slot, slots)
                # record: in plan order
                limit = n if stop is None else stop[0]
                while record < limit and slots[record].stage == DONE:
                    self._record(slots[record])
                    record += 1
                limit = n if stop is None else stop[0]
                if record >= limit:
                    break
                if before == (send, check, record, [s.stage for s in slots]) and not self.pending:
                    raise TunesmithError(
                        f"internal: generation stalled at {slots[record].plan.id} "
                        f"({slots[record].stage}); please report this"
                    )
                if not self.pending:
                    continue  # progress without waiting (e.g. recorded candidates of a resume)
                done, _ = wait(list(self.pending), return_when=FIRST_COMPLETED)
                for future in done:
                    self._finished(future, slots, stop_at)
        except BaseException:
            for future in self.pending:
                future.cancel()
            self.pending.clear()
            self.asking.clear()
            self.discarded.clear()
            raise
        self._drain()
        if stop is not None:
            raise stop[1]
        return [s.cand for s in slots]

    def _drain(self) -> None:
        """Let requests still in flight finish (their replies are recorded for a resume)."""
        for future in list(self.pending):
            if future not in self.asking:
                future.cancel()  # an evaluation no candidate waits for
        wait(list(self.pending))
        self.pending.clear()
        self.discarded.clear()
        self.asking.clear()

    def _slot(self, plan: Plan) -> Slot:
        cand = self.c.recorded(plan)
        if cand is not None:
            return Slot(plan, cand, recorded=True, stage=REPLIED)
        cand = Candidate(
            id=plan.id,
            generation=plan.generation,
            operator=plan.operator,
            parent_ids=[p.id for p in plan.parents],
            created=time.time(),
            model=plan.model,
        )
        return Slot(plan, cand)

    def _room(self) -> bool:
        """Fewer than `concurrency` requests in flight. (With concurrency 1 the next candidate is
        asked for only once the one before it is recorded: one candidate at a time, as before.)"""
        return len(self.asking) < self.concurrency

    # -- asking ----------------------------------------------------------------------------------
    def _ask(self, slot: Slot, stop_at, i: int) -> bool:
        """Reserve and send the slot's request; False when a cap holds it back (or stops the run)."""
        try:
            self._send(slot, slot.messages, slot.reasked)
        except CapReached as exc:
            if not self.asking:
                stop_at(i, exc)
            # else calls in flight may cost less than their worst case: try again once they are in
            return False
        if not slot.reasked:
            slot.cand.created = time.time()
        slot.stage = ASKING
        return True

    def _send(self, slot: Slot, messages: list[dict], reask: bool) -> Future:
        """Reserve a request's worst case against the caps (CapReached if it could pass one) and send it."""
        llm, plan = self.c.llm_for(slot.plan.model), slot.plan
        ref = f"{plan.id}:reask" if reask else plan.id
        hold = llm.reserve(messages, ref)
        seed = self.c.cfg.llm.seed
        if seed is not None:
            seed += int(plan.id[1:])
        elif (plan.model or self.c.cfg.llm.model).startswith("synth/"):
            # the synthesizer, unseeded, answers a repeated prompt by how often it was asked: with
            # requests in flight together that would be arrival order, so give each candidate its own
            seed = int(plan.id[1:])
        purpose = f"generate:{plan.operator}" + (":reask" if reask else "")
        if self.c.cfg.evolution.edit == "diff" and plan.operator in DIFF_OPERATORS and plan.parents:
            parent_code = self.c.archive.code(plan.parents[0]) or ""
            future = self._llm.submit(self._complete_edit, slot, messages, purpose, ref, seed, hold, parent_code)
        else:
            future = self._llm.submit(llm.complete, messages, purpose, ref, seed, hold)
        self.pending[future] = slot
        self.asking.add(future)
        return future

    def _complete_edit(self, slot: Slot, messages, purpose, ref, seed, hold, parent_code: str):
        """Ask for a diff edit; when its blocks do not apply, ask at once for full code, saying why
        (ref `<id>:full`, so a resume replays both). Runs in a request thread."""
        llm = self.c.llm_for(slot.plan.model)
        ex = llm.complete(messages, purpose, ref, seed, hold)
        if not ex.ok:
            return ex
        outcome = apply_reply(ex.reply, parent_code)
        if outcome.blocks == 0 and outcome.error is None:  # answered with full code (or none): read as any reply
            self.edits[ex.id] = {"mode": "diff", "blocks": 0, "applied": False}
            return ex
        if outcome.code is not None:
            self.edits[ex.id] = {"mode": "diff", "blocks": outcome.blocks, "applied": True, "code": outcome.code}
            return ex
        retry = self.c.messages(slot.plan, self.existing, edit_error=outcome.error)
        full = llm.complete(retry, purpose + ":full", f"{ref}:full", seed, llm.reserve(retry, f"{ref}:full"))
        self.edits[full.id] = {
            "mode": "diff",
            "blocks": outcome.blocks,
            "applied": False,
            "reason": outcome.error,
            "diff_exchange_id": ex.id,
        }
        return full

    def _reply(self, ex) -> Reply:
        """Description and code of an answered exchange (a diff edit's code: the parent's, edited)."""
        reply = extract_reply(ex.reply, ex.finish_reason)
        code = self.edits.get(ex.id, {}).get("code")
        return Reply(reply.description, code, False) if code is not None else reply

    def _finished(self, future: Future, slots: list[Slot], stop_at) -> None:
        slot = self.pending.pop(future)
        self.asking.discard(future)
        i = slots.index(slot)
        if future.cancelled() or future in self.discarded:
            self.discarded.discard(future)
            return
        if future is slot.spec and slot.stage != EVALUATING:
            return  # a speculative evaluation: its result is read when the slot is checked
        if future is slot.spec_reask and slot.stage != ASKING:
            return  # a speculative re-ask: its reply is read when the slot is checked
        exc = future.exception()
        if slot.stage == ASKING:
            if exc is not None:  # a fatal LLM error (bad key, unknown model): nothing after it is asked
                stop_at(i, exc)
                return
            slot.exchange = future.result()
            slot.stage = REPLIED
        elif slot.stage == EVALUATING:
            self._evaluated(slot, future, stop_at, i)

    def _evaluated(self, slot: Slot, future: Future, stop_at, i: int) -> None:
        if future.exception() is not None:  # the sandbox itself broke: the run stops, resumable, says why
            stop_at(i, future.exception())
            return
        fitness, seconds = future.result()
        cand = slot.cand
        cand.timings["eval_s"] = round(seconds, 3)
        cand.fitness = fitness.to_dict() if hasattr(fitness, "to_dict") else fitness
        cand.error = (cand.fitness or {}).get("error")
        if cand.id in self.truncated:  # the fix prompt shows this message: it asks for shorter code
            cand.error = truncation_error(cand.error)
        slot.stage = DONE
        self.c.evaluated()

    # -- checking --------------------------------------------------------------------------------
    def _check(self, slot: Slot, slots: list[Slot], stop_at, i: int) -> None:
        """Take the reply apart; a copy waits for its twin's score, a near-copy is asked again once,
        anything else joins the archive's code and goes to evaluation."""
        cand = slot.cand
        if slot.recorded:
            if cand.code_path and not cand.duplicate_of:
                self._index(cand, self.c.archive.code(cand))
            slot.stage = DONE
            return
        ex = slot.exchange
        cand.exchange_id = ex.id
        cand.timings["llm_s"] = round(ex.latency_s + slot.first.get("llm_s", 0.0), 3)
        reply = self._reply(ex) if ex.ok else None
        if slot.reasked and (reply is None or reply.code is None):
            # the second answer is unusable: the first one, only nearly a copy, is evaluated after all
            slot.first["reasked"]["error"] = ex.error or "the reply holds no Python code"
            ex = slot.first["exchange"]
            reply = self._reply(ex)
            cand.exchange_id = ex.id
        if not ex.ok:
            self._unanswered(slot, ex, stop_at, i)
            return
        self.unanswered = 0
        cand.description = reply.description
        edit = self.edits.get(ex.id)
        cand.edit = {k: v for k, v in edit.items() if k != "code"} if edit else None
        if reply.code is None:
            why = "empty reply" if not (ex.reply or "").strip() else "the reply holds no Python code"
            if edit and edit.get("reason"):
                why = f"the diff edit did not apply ({edit['reason']}) and the full-code answer: {why}"
            cand.error = {"kind": "no_code", "message": why, "traceback": None, "line": None}
            slot.stage = DONE
            return
        if reply.truncated:
            self.truncated.add(cand.id)
        cand.code_path = self.c.archive.write_code(cand.id, reply.code)
        cand.code_hash = hashlib.sha256(normalise_code(reply.code).encode()).hexdigest()[:16]
        shape = Shape.of(reply.code)
        near = self.index.nearest(shape)
        cand.novelty = {"nearest": near.id, "similarity": near.similarity} if near.id else None
        if slot.first.get("reasked"):
            cand.novelty = {**(cand.novelty or {}), "reasked": slot.first["reasked"]}
        twin = self.by_hash.get(cand.code_hash)
        if twin is None and near.exact and self.novelty.copies == "structure":
            twin = near.id
        if twin is not None:  # the same algorithm again: same fitness, no second evaluation
            self._drop_speculation(slot)
            cand.duplicate_of = twin
            slot.stage = WAITING
            self._copy_twin(slot, slots)
            return
        if not slot.reasked and near.id and near.similarity > self.novelty.max_similarity:
            slot.reasked = True
            slot.first = {
                "exchange": ex,
                "llm_s": ex.latency_s,
                "reasked": {"exchange_id": ex.id, "nearest": near.id, "similarity": near.similarity},
            }
            slot.messages = self.c.messages(
                slot.plan, self.existing, copied=self._candidate(near.id, slots), similarity=near.similarity
            )
            early = slot.spec_reask
            if early is not None and slot.spec_messages == slot.messages:  # asked again early, rightly
                self._drop_speculation(slot, keep_reask=True)
                if early in self.pending:
                    slot.stage = ASKING  # its answer comes in as a re-ask's would
                elif early.exception() is not None:
                    stop_at(i, early.exception())
                    slot.stage = ASKING
                else:
                    slot.exchange, slot.stage = early.result(), REPLIED
                return
            self._drop_speculation(slot)
            slot.stage = BLOCKED  # to be asked again as soon as there is room
            return
        self._index(cand, reply.code, shape)
        slot.stage = EVALUATING
        if slot.spec is not None and slot.spec_code == reply.code:  # started early: it counts
            if slot.spec.done():
                self._evaluated(slot, slot.spec, stop_at, i)
            return
        self._drop_speculation(slot)
        self.pending[self._eval.submit(self._evaluate, reply.code)] = slot

    def _unanswered(self, slot: Slot, ex, stop_at, i: int) -> None:
        """A request that got no answer (network, server down) is no candidate: it costs no budget and
        is asked again with the same id, here or, after too many in a row, on resume."""
        self.unanswered += 1
        limit = self.c.cfg.llm.max_consecutive_errors
        if self.unanswered < limit:
            slot.stage = BLOCKED  # asked again as soon as there is room
            slot.spec_tried = False  # its answer, when it comes, may be acted on early like any other
            return
        slot.stage = PLANNED  # not recorded: the archive ends before it, so a resume asks for it again
        stop_at(
            i,
            StopCampaign(
                f"llm ({self.c.cfg.llm.model}): {self.unanswered} requests in a row got no answer, "
                f"last: {ex.error}; nothing was recorded for {slot.plan.id}: check the network "
                "or the server, then resume the run (it asks again)"
            ),
        )

    def _evaluate(self, code: str):
        start = time.monotonic()
        fitness = self.c.evaluate(code)
        return fitness, time.monotonic() - start

    def _index(self, cand: Candidate, code: str | None, shape: Shape | None = None) -> None:
        if cand.code_hash:
            self.by_hash.setdefault(cand.code_hash, cand.id)
        self.index.add(cand.id, shape or Shape.of(code))

    def _candidate(self, cid: str, slots: list[Slot]) -> Candidate:
        """An earlier candidate: a sibling in this generation, or one the archive holds."""
        sibling = next((s for s in slots if s.cand.id == cid), None)
        return sibling.cand if sibling is not None else self.c.candidate(cid)

    def _copy_twin(self, slot: Slot, slots: list[Slot]) -> None:
        twin = next((s for s in slots if s.cand.id == slot.cand.duplicate_of), None)
        if twin is not None and twin.stage != DONE:
            return  # a sibling still being evaluated: wait for its score
        other = self._candidate(slot.cand.duplicate_of, slots)
        slot.cand.fitness, slot.cand.error = other.fitness, other.error
        slot.stage = DONE

    # -- recording -------------------------------------------------------------------------------
    def _record(self, slot: Slot) -> None:
        cand = slot.cand
        if not slot.recorded:
            self.c.archive.append_candidate(cand)
        self.c.recorded_one(cand)
