"""A campaign end to end: config -> tasks -> prompts -> LLM -> evaluation -> archive, with resume.

`Campaign.run` runs the evolution loop to the end of its budget, then the final stages (campaign.stages);
`run_campaign` and `resume` (campaign.run) make the Campaign. Resume replays the deterministic loop:
candidates already in the archive are returned from it, an exchange already answered for a candidate is
reused, and only the rest is asked and evaluated. A generation's candidates are made together by
`inflight.InFlight` (requests in flight, evaluation as replies arrive, everything recorded in plan
order); the Campaign gives it prompts, the LLM client, the archive and the evaluator (campaign.port
declares what it may use).
"""

from __future__ import annotations

import sys
import threading

from generator.archive import Archive, Candidate
from generator.campaign.evolution import Evolution, Plan
from generator.campaign.printing import Summary
from generator.campaign.stages import FinalStages
from generator.config import CampaignConfig
from generator.errors import TunesmithError
from generator.interrupts import reason as interrupt_reason
from generator.interrupts import sigterm_as_interrupt
from generator.llm.client import LLMClient, StopCampaign
from generator.llm.prompts import ParentView
from generator.llm.records import Usage
from generator.scoring.degenerate import aggregated, warn_degenerate
from generator.tasks.entries import load_task_set


class Campaign(FinalStages):
    """One run: owns the archive, the LLM client, the prompt builder and the evaluator."""

    def __init__(self, cfg: CampaignConfig, archive: Archive, evaluate=None, completion=None, progress: bool = True):
        from generator.llm.prompts import PromptBuilder

        self.cfg = cfg
        self.archive = archive
        archive.prepare_append()
        self.done = {c.id: c for c in archive.candidates(raced=False)}  # the race is replayed from its record
        exchanges = archive.exchanges()
        usage = Usage()
        for ex in exchanges:
            usage.add(ex)
        self.tokens = {ex.id: ex.prompt_tokens + ex.completion_tokens for ex in exchanges}  # the bandit's cost
        self.llm = LLMClient(
            cfg.llm,
            on_exchange=self._exchanged,
            recorded=exchanges,
            usage=usage,
            completion=completion,
            first_id=len(exchanges) + 1,
        )
        self._llms = {}
        self.train = load_task_set(cfg.tasks.train, cfg.tasks)
        warn_degenerate(self.train)
        self.prompts = PromptBuilder(self.train, cfg.prompts)
        self._evaluate = evaluate
        self.progress = progress
        self.made: list[Candidate] = []
        self.by_id: dict[str, Candidate] = {}
        self._bars = None  # generator.campaign.progress.CampaignProgress, while the loop runs
        self._executor = None
        self._executor_error = None
        self._seeds = None  # LLM seeding of every evaluation ([llm_guided] seed_rounds), asked once
        self._inflight = None
        self._lock = threading.Lock()
        self._status_lock = threading.Lock()  # the executor's watchdog writes status too (one temp file)

    def _exchanged(self, ex) -> None:
        self.archive.append_exchange(ex)
        self.tokens[ex.id] = ex.prompt_tokens + ex.completion_tokens

    def llm_for(self, model: str | None) -> LLMClient:
        """The client that asks `model` (one of [llm] models), or the campaign's model for None."""
        if model is None:
            return self.llm
        with self._lock:
            return self._llms.setdefault(model, self.llm.for_model(model))

    def cost_of(self, cand: Candidate) -> float:
        """Tokens of the exchange that made a candidate (the bandit's cost; 0 when there was none)."""
        return float(self.tokens.get(cand.exchange_id, 0))

    # -- what the generation maker (inflight.py) asks of the campaign -----------------------------
    def produce_generation(self, plans: list[Plan]) -> list[Candidate]:
        """Make (or, on resume, recall) the candidates that `plans` ask for, in plan order."""
        from generator.campaign.inflight import InFlight

        if self._inflight is None:
            self._inflight = InFlight(self)
        return self._inflight.make(plans)

    def recorded(self, plan: Plan) -> Candidate | None:
        """The candidate `plan` asks for if the archive holds it already (resume), else None."""
        cand = self.done.get(plan.id)
        if cand is not None and (
            cand.operator != plan.operator
            or cand.parent_ids != [p.id for p in plan.parents]
            or cand.model != plan.model
        ):
            raise TunesmithError(
                f"{self.archive.run_dir}: recorded {cand.id} was made by {cand.operator}"
                f"{cand.parent_ids} but the loop now asks for {plan.operator}"
                f"{[p.id for p in plan.parents]}; the run's config or code changed, "
                "start a new run directory"
            )
        return cand

    def messages(
        self,
        plan: Plan,
        existing: list[ParentView],
        copied: Candidate | None = None,
        similarity: float = 0.0,
        edit_error: str | None = None,
    ) -> list[dict]:
        """The prompt of a plan (`copied`: what its previous answer nearly copied, when asked again;
        `edit_error`: why its diff edit did not apply, when asked again for full code)."""
        view = None
        if copied is not None:  # no score: a sibling's may not be known yet, and the prompt must not vary
            view = ParentView(copied.id, None, self.archive.code(copied) or "", copied.description)
        return self.prompts.messages(
            plan.operator,
            parents=[self._view(p) for p in plan.parents],
            error=plan.parents[0].error if plan.operator == "fix" else None,
            existing=existing if plan.operator == "new" else (),
            copied=view,
            similarity=similarity,
            edit=self.cfg.evolution.edit,
            edit_error=edit_error,
        )

    def candidate(self, cid: str) -> Candidate:
        """A candidate made (or recalled) in this session, by id."""
        return self.by_id[cid]

    def recorded_one(self, cand: Candidate) -> None:
        """A candidate reached the archive (in plan order): progress and status follow."""
        self.made.append(cand)
        self.by_id[cand.id] = cand
        self._tick(cand)
        self._write_status("running")

    def evaluated(self, runs: int | None = None) -> None:
        """One candidate's sandbox runs are done (the evaluation progress bar)."""
        if self._bars is not None:
            self._bars.evaluated(runs if runs is not None else len(self.train) * self.first_repeats())

    def first_repeats(self) -> int:
        """Repeats per task a new candidate gets: all of them, or with racing the first stage."""
        ev = self.cfg.evaluation
        return min(ev.min_repeats, ev.repeats) if ev.racing else ev.repeats

    def evaluate(self, code: str, repeats: int | None = None, first_repeat: int = 0):
        """Fitness of a candidate's code on the training tasks (sandboxed; static checks first)."""
        ev = self.cfg.evaluation
        seed = ev.seed if ev.seed is not None else self.cfg.evolution.seed
        repeats = repeats or self.first_repeats()
        if self._evaluate is not None:
            more = {"first_repeat": first_repeat} if first_repeat else {}
            return aggregated(
                self._evaluate(code, self.train, repeats, seed, ev.timeout, ev.workers, **more), ev.aggregate
            )
        from generator.evaluation.evaluate import evaluate_source

        with self._lock:  # candidates are evaluated from several threads: make the shared parts once
            self._connect()
            seeds = self.seeds(seed)
        return aggregated(
            evaluate_source(
                code,
                self.train,
                repeats=repeats,
                seed=seed,
                timeout_s=ev.timeout,
                workers=ev.workers,
                executor=self._executor,
                seeds=seeds,
                first_repeat=first_repeat,
            ),
            ev.aggregate,
        )

    def race(self):
        """The race between generations ([evaluation] racing), or None for fixed repeats."""
        ev = self.cfg.evaluation
        if not ev.racing:
            return None
        from generator.racing.candidates import Race
        from generator.racing.rule import RaceSettings

        def extend(code: str, repeats: int, first_repeat: int):
            fitness = self.evaluate(code, repeats, first_repeat)
            self.evaluated(repeats * len(self.train))
            return fitness

        settings = RaceSettings(min(ev.min_repeats, ev.repeats), ev.repeats, ev.confidence, ev.indifference)
        return Race(settings, self.archive, lambda c: self.archive.code(c) or "", extend, ev.aggregate)

    def connect(self) -> None:
        """Make the campaign's executor now (connect to its cluster); raises what went wrong."""
        with self._lock:
            self._connect()

    def _connect(self) -> None:
        if self._executor_error is not None:  # e.g. no scheduler: fail once, not once per candidate
            raise self._executor_error
        try:
            self._make_executor(self.cfg.evaluation)
        except TunesmithError as exc:
            self._executor_error = exc
            raise

    def _make_executor(self, ev) -> None:
        """One pool for the whole campaign, shared by the candidates evaluated at the same time."""
        if self._executor is None and (ev.workers > 1 or ev.executor != "local" or self.cfg.llm.concurrency > 1):
            from generator.evaluation.executors import get_executor

            self._executor = get_executor(ev.executor, ev.workers, worker_wait_s=ev.worker_wait, notice=self._notice)

    def _notice(self, message: str) -> None:
        """The executor waits for the cluster (or goes on): say so in `status`, then on the terminal (in that
        order, so whoever reads the line finds `status` already saying it)."""
        self._write_status("waiting" if "waiting" in message else "running", message)
        print(f"tunesmith: {message}", file=sys.stderr, flush=True)

    def seeds(self, seed: int):
        """The LLM's seeds per (task, repeat) when [llm_guided] seed_rounds > 0 (recorded; reused on resume)."""
        if not self.cfg.llm_guided.seed_rounds:
            return None
        if self._seeds is None:
            from generator.guided.run import campaign_seeds

            self._seeds = campaign_seeds(
                self.train, self.cfg.evaluation.repeats, seed, self.llm, self.cfg.llm_guided, self.cfg.prompts
            )
        return self._seeds

    def _view(self, c: Candidate) -> ParentView:
        return ParentView(c.id, c.score, self.archive.code(c) or "", c.description, c.per_task)

    def existing(self) -> list[ParentView]:
        """The best working algorithms so far, for 'new' prompts to differ from."""
        ok = sorted((c for c in self.made if c.ok and not c.duplicate_of), key=lambda c: -c.score)
        return [ParentView(c.id, c.score, "", c.description) for c in ok[: self.cfg.prompts.max_existing]]

    # -- progress and status -----------------------------------------------------------------
    def _tick(self, cand: Candidate) -> None:
        if self._bars is not None:
            self._bars.recorded_one(cand.id, max((c.score for c in self.made if c.ok), default=None))

    def _write_status(self, state: str, reason: str = "") -> None:
        best = max((c for c in self.made if c.ok and not c.duplicate_of), key=lambda c: c.score, default=None)
        with self._status_lock:
            self.archive.write_status(
                {
                    "state": state,
                    "reason": reason,
                    "candidates": len(self.made),
                    "budget": self.cfg.evolution.budget,
                    "usage": self.llm.usage.to_dict(),
                    "best": best.id if best else None,
                }
            )

    def run(self) -> Summary:
        """Run the loop to the end of the budget, or until a cap or the LLM stops it cleanly.

        Ctrl-C and SIGTERM stop it cleanly too (status `stopped`, resumable); the KeyboardInterrupt
        goes on to the caller with `resume_command` set.
        """
        from generator import parsing

        parsing.isolate()  # other libraries' threads (Dask, LLM clients) parse here too (gh-106905)
        with sigterm_as_interrupt():
            return self._run()

    def _run(self) -> Summary:
        from generator.campaign.progress import CampaignProgress

        race = self.race()
        evo = self._evo = Evolution(
            self.cfg.evolution,
            produce_generation=self.produce_generation,
            on_generation=lambda g, pop: self._on_generation(g, pop),
            models=self.cfg.llm.models,
            cost_of=self.cost_of,
            race=race,
        )
        from generator.campaign.niches import never_exchange

        if never_exchange(self.cfg.evolution) and self.progress:
            print(f"tunesmith: warning: {never_exchange(self.cfg.evolution)}", file=sys.stderr)
        n = self.cfg.evolution.budget
        state, reason = "finished", f"budget of {n} candidate{'s' if n != 1 else ''} spent"
        if self.done and self.progress:  # before the bars: a line printed under them breaks them up
            print(
                f"continuing {self.archive.run_dir}: {len(self.done)} candidates recorded, their replies and "
                "scores are reused",
                file=sys.stderr,
                flush=True,
            )
        self._bars = CampaignProgress(self.progress, n, self.done)
        try:
            if self._evaluate is None and self.cfg.evaluation.executor != "local":
                self.connect()  # a cluster that is not there is named before the LLM is asked anything
            evo.run()
            if race is not None:  # the winner: measured for the first place, not only for a place among the top
                race.final(self.made, self.cfg.evolution.n_parents)
            if evo.niches is not None and evo.niches.silent() and self.progress:
                print(
                    f"tunesmith: warning: islands {', '.join(map(str, evo.niches.silent()))} never took a migrant "
                    "(every one was worse than their survivors): lower migration_interval or use fewer islands",
                    file=sys.stderr,
                )
        except StopCampaign as exc:
            state, reason = "stopped", str(exc)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (generator.interrupts)
            exc.resume_command = f"tunesmith resume {self.archive.run_dir}"  # first: a second Ctrl-C may come
            self._write_status("stopped", interrupt_reason(exc))
            raise
        except Exception as exc:  # e.g. the sandbox itself broke: the run stays resumable, say why it stopped
            self._write_status("stopped", f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
            exc.resume_command = f"tunesmith resume {self.archive.run_dir}"
            raise
        finally:
            self._bars.close()
            if self._inflight is not None:
                self._inflight.close()
                self._inflight = None
            # evaluations still queued in this session's threads must not start a new executor
            with self._lock:
                self._executor_error = self._executor_error or TunesmithError("the campaign has stopped")
                executor, self._executor = self._executor, None
            if executor is not None:  # stopped early: what is in flight is evaluated again on resume
                stopped = sys.exc_info()[0] is not None
                executor.shutdown(wait=not stopped, cancel_futures=stopped)
        self._write_status(state, reason)
        if state == "finished":
            self._hpo_stage()
            self._validation_stage()
            self._sealed_test_stage()
        return self.summary(state, reason)

    def _on_generation(self, generation: int, population: list[Candidate]) -> None:
        recorded = {g["generation"]: g for g in self.archive.generations()}
        state = self._evo.state(generation)
        if generation not in recorded:
            self.archive.append_generation(generation, [c.id for c in population], state)
        elif "bandit" in state and recorded[generation].get("bandit") != state["bandit"]:
            raise TunesmithError(
                f"{self.archive.run_dir}: the bandit's state after generation {generation} differs "
                "from the recorded one; the run's config or code changed, start a new run directory"
            )

    def summary(self, state: str, reason: str) -> Summary:
        board = self.archive.best(10)
        best_file = self.archive.code_file(board[0]) if board else None
        from generator.campaign.final_choice import load_choice

        choice = load_choice(self.archive.run_dir) if self.cfg.tasks.validation else None
        if choice is not None and choice.winner is not None:  # the validation winner is the best candidate
            best_file = self.archive.code_file(self.archive.candidate(choice.winner))
        from generator.campaign.sealed_test import load_test

        return Summary(
            self.archive.run_dir,
            state,
            reason,
            len(self.made),
            self.cfg.evolution.budget,
            self.llm.usage.to_dict(),
            board,
            best_file,
            self.cfg.llm.model,
            choice,
            load_test(self.archive.run_dir),
        )
