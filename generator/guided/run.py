"""LLM-guided tuning (`llm_guided`): the LLM proposes configurations directly, round after round.

Each round the LLM sees the kernel, the GPU, the parameters and restrictions, the statistics of
the space, the best configurations so far with their measured results, the failed ones and the
invalid proposals of its last reply with the reason, and proposes a batch of configurations as
JSON. The proposals are data: parsed, checked against the restrictions, deduplicated, and the new
valid ones evaluated through the same Oracle as every other strategy (same budget, trace and
score P). It stops when `patience` rounds in a row bring no better result, after `max_rounds`
rounds, or when the budget is spent. The LLM runs in this (trusted) process through the LLM
layer (generator.llm.client): caps, accounting, recording and `replay/RUN_DIR` work as in campaigns.

The first `seed_rounds` rounds can also seed any other optimizer (a hybrid run, see
generator.scoring.seeding): `seed_stage` returns the rows they evaluated, and the optimizer continues
from them on the rest of the same budget.
"""

from __future__ import annotations

import fcntl
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from generator.errors import TunesmithError
from generator.guided.prompt import Feedback, GuidedPromptBuilder, check_proposal, parse_reply
from generator.scoring.oracle import Oracle, StopCriterionReached
from generator.scoring.score import Budget, Trace
from generator.scoring.seeding import SeedRun
from generator.tasks.cache import Task
from generator.tasks.space import SearchSpace

PURPOSE = "llm_guided"
LLM_KEYS = ("model", "temperature", "api_base", "max_tokens", "timeout", "retries")  # options for [llm]
RUN_KEYS = ("record",)  # where a bench run appends its exchanges
BARREN_ROUNDS = 3  # rounds in a row with no new valid proposal end the run, whatever the patience


@dataclass
class RoundLog:
    """One round: what the reply held and what came of it."""

    round: int
    exchange_id: str | None
    proposals: int
    invalid: int
    duplicates: int
    evaluated: int
    best_cost: float
    improved: bool
    problem: str | None = None  # why nothing could be read from the reply, if so


@dataclass
class GuidedResult:
    """A finished guided run (or seeding stage): its rounds and why it stopped."""

    rounds: list[RoundLog] = field(default_factory=list)
    reason: str = ""


class _History:
    """What the oracle answered so far, in the shape the prompt shows it."""

    def __init__(self, task: Task, oracle: Oracle):
        self.task, self.oracle = task, oracle
        self.costs: dict[int, float] = {}  # row -> cost (float max: failed), evaluation order
        self.best = math.inf

    def evaluate(self, row: int, config: tuple) -> None:
        cost = self.oracle(config)  # may raise StopCriterionReached: then nothing is recorded here
        self.costs[row] = cost
        if cost < sys.float_info.max:
            self.best = min(self.best, cost)

    def failed(self, row: int) -> bool:
        return self.costs[row] >= sys.float_info.max

    def ranked(self) -> list[int]:
        """Evaluated rows, best first, failed last (stable in evaluation order)."""
        return sorted(self.costs, key=lambda r: self.costs[r])

    def view(self, settings) -> dict:
        """best (config + result), failed (config + reason), others (values only), counts."""
        names = list(self.task.space.tune_params)
        space, key, objective = self.oracle.space, self.task.key, self.task.objective.name
        sign = -1.0 if self.task.objective.higher_is_better else 1.0  # the oracle's cost is minimised
        ranked = [r for r in self.ranked() if not self.failed(r)]
        best = [
            {"config": _named(names, space.config_of(r)), objective: _round(sign * self.costs[r])}
            for r in ranked[: settings.show_best]
        ]
        failed_rows = [r for r in self.costs if self.failed(r)]
        failed = (
            [
                {"config": _named(names, space.config_of(r)), "error": key.failure_kinds.get(r, "failed")}
                for r in failed_rows[-settings.show_failed :]
            ]
            if settings.show_failed
            else []
        )
        # the next best after those: they sit near the best, where new proposals are likeliest to repeat them
        others = [
            list(map(_plain, space.config_of(r)))
            for r in ranked[settings.show_best : settings.show_best + settings.show_evaluated]
        ]
        return {
            "best": best,
            "failed": failed,
            "others": others,
            "n_evaluated": len(self.costs),
            "n_failed": len(failed_rows),
        }


def _plain(v):
    item = getattr(v, "item", None)
    return item() if callable(item) else v


def _named(names: list[str], config: tuple) -> dict:
    return {n: _plain(v) for n, v in zip(names, config)}


def _round(x: float) -> float:
    return float(f"{x:.5g}")


def guide(
    task: Task,
    oracle: Oracle,
    llm,
    settings,
    seed: int,
    ref: str,
    rounds: int | None = None,
    prompts_cfg=None,
    purpose: str = PURPOSE,
) -> GuidedResult:
    """Rounds of proposals on `oracle` until patience, max_rounds (or `rounds`, without patience) or the budget ends."""
    builder = GuidedPromptBuilder(task, prompts_cfg)
    history = _History(task, oracle)
    result = GuidedResult()
    feedback: Feedback | None = None
    limit = rounds if rounds is not None else settings.max_rounds
    stale = barren = 0
    for k in range(1, limit + 1):
        if oracle.is_done():
            result.reason = "budget spent"
            break
        messages = builder.messages(
            history.view(settings), settings.batch, oracle.fevals, oracle.budget_spent_fraction, feedback
        )
        ex = llm.complete(messages, purpose=purpose, ref=f"{ref}:{k}", seed=(seed + k) % 2**31)
        before = history.best
        log, feedback, stopped = _play(task, oracle, history, ex, k, settings)
        log.improved = history.best < before
        result.rounds.append(log)
        if stopped:
            result.reason = "budget spent"
            break
        stale = 0 if log.improved else stale + 1
        barren = 0 if log.evaluated else barren + 1
        if rounds is None and stale >= settings.patience:
            result.reason = f"no better result in {stale} rounds (patience)"
            break
        if barren >= BARREN_ROUNDS:
            result.reason = f"nothing new to evaluate in {barren} rounds"
            break
    else:
        result.reason = f"{limit} rounds done"
    return result


def _play(task, oracle, history: _History, ex, k: int, settings) -> tuple[RoundLog, Feedback, bool]:
    """Read one reply, evaluate its new valid proposals; returns the log, the next feedback, stopped."""
    items, problem = parse_reply(ex.reply) if ex.ok else ([], f"the LLM call failed ({ex.error})")
    invalid, known, dup, new, stopped = [], [], 0, 0, False
    seen_now: set[int] = set()
    names = list(task.space.tune_params)
    sign = -1.0 if task.objective.higher_is_better else 1.0
    for item in items[: max(settings.batch * 2, settings.batch + 10)]:  # a runaway reply is cut short
        config, why = check_proposal(item, task, oracle.space)
        if config is None:
            shown = item if isinstance(item, (dict, list)) and len(str(item)) <= 400 else str(item)[:200]
            invalid.append({"proposal": shown, "reason": why})
            continue
        row = oracle.space.row_of(config)
        if row in history.costs or row in seen_now:
            dup += 1
            if row in history.costs:  # shown back with its result, so that it is not proposed a third time
                known.append(
                    {
                        "proposal": _named(names, config),
                        "reason": "already evaluated"
                        + (
                            " (failed)"
                            if history.failed(row)
                            else f" ({task.objective.name} {_round(sign * history.costs[row])})"
                        ),
                    }
                )
            continue
        seen_now.add(row)
        try:
            history.evaluate(row, config)
        except StopCriterionReached:
            stopped = True
            break
        new += 1
    log = RoundLog(k, ex.id, len(items), len(invalid), dup, new, history.best, False, problem)
    lines = [
        f"round {k}: {len(items)} proposals, {new} new configurations evaluated, {dup} already known, "
        f"{len(invalid)} invalid"
    ]
    if problem:
        lines.append(f"{problem}; answer with one ```json block holding a list of objects")
    elif items and new == 0:
        lines.append("nothing new was evaluated: propose configurations that are not listed above")
    return log, Feedback(lines, invalid[: settings.show_failed] + known[: settings.show_failed]), stopped


# ---------------------------------------------------------------- runs for bench, hybrids and campaigns


def split_options(options: dict) -> tuple[dict, dict, dict]:
    """Strategy options -> ([llm] keys, [llm_guided] keys, run keys such as `record`)."""
    llm = {k: v for k, v in options.items() if k in LLM_KEYS}
    run = {k: v for k, v in options.items() if k in RUN_KEYS}
    rest = {k: v for k, v in options.items() if k not in LLM_KEYS and k not in RUN_KEYS}
    return llm, rest, run


def guided_settings(options: dict):
    """The validated [llm_guided] settings from strategy options (unknown keys name the fix)."""
    from pydantic import ValidationError

    from generator.config import GuidedConfig

    try:
        return GuidedConfig(**options)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise TunesmithError(
            f"llm_guided option {'.'.join(map(str, err['loc']))}: {err['msg']}; valid options: "
            f"{', '.join(list(GuidedConfig.model_fields) + list(LLM_KEYS))}"
        ) from None


_CLIENTS: dict = {}


def client_for(llm_options: dict, record: str | None = None):
    """One LLMClient per process and settings (a replay/ backend reads its run directory once)."""
    from generator.config import LLMConfig
    from generator.llm.client import LLMClient

    key = (tuple(sorted(llm_options.items())), record)
    if key not in _CLIENTS:
        try:
            cfg = LLMConfig(**{"model": "synth/components", **llm_options})
        except Exception as exc:  # pydantic's message, one line
            raise TunesmithError(
                f"llm_guided: bad LLM option ({str(exc).splitlines()[-1].strip()}); "
                "check --model and the strategy options"
            ) from None
        _CLIENTS[key] = LLMClient(cfg, on_exchange=ExchangeLog(record).append if record else None)
    return _CLIENTS[key]


class ExchangeLog:
    """Appends exchanges to RUN_DIR/exchanges.jsonl from several processes at once (file lock)."""

    def __init__(self, run_dir: str):
        self.path = Path(run_dir) / "exchanges.jsonl"

    def append(self, ex) -> None:
        import json

        ex.id = ex.ref or ex.id  # unique across worker processes: the ref names task, run and round
        line = json.dumps(ex.to_dict(), separators=(",", ":"), default=str) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.write(line)
            fh.flush()
            fcntl.flock(fh, fcntl.LOCK_UN)


def open_record(run_dir: str, meta: dict) -> None:
    """Make RUN_DIR a place for recorded exchanges (a run directory `replay/RUN_DIR` can read)."""
    from generator.archive import Archive

    if not Archive.exists(run_dir):
        Archive.create(run_dir, {"kind": "llm_guided exchanges", **meta})


def _oracle(task: Task, budget: Budget, space: SearchSpace | None) -> Oracle:
    """The task's oracle: looked up in the cache, or measured on the device for a live task."""
    cls = getattr(task, "oracle_class", None) or Oracle
    return cls(task, budget, space if space is not None else SearchSpace(task.space))


def run_guided(task: Task, options: dict, seed: int, budget: Budget, space: SearchSpace | None = None) -> Trace:
    """One llm_guided run (a bench strategy): rounds of proposals on a fresh oracle; its trace."""
    llm_opts, opts, run = split_options(options)
    settings = guided_settings(opts)
    oracle = _oracle(task, budget, space)
    guide(task, oracle, client_for(llm_opts, run.get("record")), settings, seed, f"guided:{task.name}:{seed}")
    return oracle.trace()


def seed_stage(
    task: Task,
    options: dict,
    seed: int,
    budget: Budget,
    space: SearchSpace | None = None,
    llm=None,
    ref: str | None = None,
    prompts_cfg=None,
) -> SeedRun:
    """The first `seed_rounds` rounds (default 1) of llm_guided on the task's budget: the rows they evaluated."""
    if getattr(task, "oracle_class", None) is not None:
        raise TunesmithError(
            f"{task.name}: seeding runs on cached tasks only (its evaluations would be measured "
            "twice on a live task); use the problem's cached task, or llm_guided alone"
        )
    llm_opts, opts, run = split_options(options)
    settings = guided_settings(opts)
    oracle = Oracle(task, budget, space if space is not None else SearchSpace(task.space))
    llm = llm or client_for(llm_opts, run.get("record"))
    guide(
        task,
        oracle,
        llm,
        settings,
        seed,
        ref or f"seed:{task.name}:{seed}",
        rounds=max(1, settings.seed_rounds),
        prompts_cfg=prompts_cfg,
        purpose=f"{PURPOSE}:seed",
    )
    rows = oracle.trace().rows.tolist()
    cost = oracle._cost  # ranking by what the oracle answered (failed = float max, last)
    ranked = sorted(rows, key=lambda r: (cost[r], rows.index(r)))
    return SeedRun(tuple(int(r) for r in rows), tuple(int(r) for r in ranked))


def campaign_seeds(
    tasks: list[Task], repeats: int, seed: int, llm, settings, prompts_cfg=None, progress: bool = False
) -> dict[tuple[int, int], SeedRun]:
    """Seeds for every (task, repeat) of a campaign's evaluations, asked once with the campaign's LLM client."""
    from generator.evaluation.runs import run_seed
    from generator.scoring.score import budget_for

    opts = settings.model_dump()
    out = {}
    for ti, task in enumerate(tasks):
        space = SearchSpace(task.space)
        for r in range(repeats):
            s = run_seed(seed, r)
            out[(ti, r)] = seed_stage(
                task, opts, s, budget_for(task), space, llm=llm, ref=f"seed:{task.name}:{r}", prompts_cfg=prompts_cfg
            )
    return out


def summary(result: GuidedResult) -> str:
    """One line: rounds, proposals, evaluated, invalid, why it stopped."""
    n = np.array([[r.proposals, r.evaluated, r.invalid, r.duplicates] for r in result.rounds] or [[0, 0, 0, 0]])
    p, e, i, d = n.sum(axis=0)
    return (
        f"{len(result.rounds)} rounds, {p} proposals: {e} evaluated, {d} already known, {i} invalid; "
        f"stopped: {result.reason}"
    )


def prepare_specs(specs: list, model: str | None = None, record: str | None = None, seed: int = 0) -> list:
    """Bench specs with the LLM settings filled in (llm_guided ones and hybrids' seeders); LLM layer loaded.

    litellm is imported here, in the parent, so that forked bench workers inherit it.
    """
    from dataclasses import replace

    def fill(spec):
        extra = {k: v for k, v in (("model", model), ("record", record)) if v is not None}
        return replace(spec, options={**extra, **spec.options})

    out = []
    for spec in specs:
        if spec.kind == PURPOSE:
            spec = fill(spec)
        elif spec.seeder is not None:
            spec = replace(spec, seeder=fill(spec.seeder))
        else:
            out.append(spec)
            continue
        guided = spec if spec.kind == PURPOSE else spec.seeder
        llm_opts, opts, run = split_options(guided.options)
        guided_settings(opts)  # a bad option fails now, with its name, not in a worker
        client_for(llm_opts, run.get("record"))  # a model that cannot answer is refused before DIR is made
        if run.get("record"):
            open_record(run["record"], {"bench_seed": seed})
        out.append(spec)
    return out


def usage_line(run_dir: str) -> str:
    """LLM calls, tokens and cost recorded in a run directory."""
    from generator.archive import Archive
    from generator.llm.records import Usage

    usage, models = Usage(), set()
    for ex in Archive.open(run_dir).exchanges():
        usage.add(ex)
        models.add(ex.model or "")
    u = usage.to_dict()
    # the offline synthesizer is not an LLM, and is never called one (as in a campaign's summary)
    who = "offline synthesizer (no LLM)" if models and all(m.startswith("synth/") for m in models) else "LLM"
    calls = f"{u['calls']} call{'s' if u['calls'] != 1 else ''}"
    return (
        f"{who} ({run_dir}): {calls}, {u['tokens']} tokens ({u['prompt_tokens']} prompt + "
        f"{u['completion_tokens']} completion), {u['cost_usd']:.4f} USD"
    )
