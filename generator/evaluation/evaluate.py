"""Candidate source x tasks x repeats -> Fitness: static checks, sandboxed runs, score P from traces.

The runs of one evaluation are cut into at most `workers` contiguous chunks, one sandbox host
process each (the host imports numpy once and forks a fresh process per run). The seed of a
run depends only on (seed, repeat), so the result does not depend on `workers`.
"""

from __future__ import annotations

import time
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, FIRST_EXCEPTION, CancelledError, wait

import numpy as np

from generator.candidate.checks import inspect_source
from generator.errors import TunesmithError, printable
from generator.evaluation.runs import init_kwargs, run_seed
from generator.sandbox.jobs import Job, JobOutcome, SandboxConfig
from generator.sandbox.pool import run_job
from generator.scoring.fitness import CandidateError, Fitness, TaskFitness
from generator.scoring.oracle import Oracle
from generator.scoring.repeats import repeat_values, standard_error
from generator.tasks.cache import Task
from generator.tasks.sources import MeasuredTask


def plan_jobs(runs: list[tuple[int, int, int]], workers: int) -> list[list[tuple[int, int, int]]]:
    """Cut the runs (ordered by task, then repeat) into at most `workers` contiguous chunks."""
    n = max(1, min(int(workers), len(runs)))
    bounds = np.linspace(0, len(runs), n + 1).round().astype(int)
    return [runs[a:b] for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def evaluate_source(
    source: str,
    tasks: list[Task],
    repeats: int = 3,
    seed: int = 0,
    timeout_s: float = 30.0,
    hyperparameters: dict | None = None,
    workers: int = 1,
    *,
    executor=None,
    config: SandboxConfig | None = None,
    seeds: dict | None = None,
    first_repeat: int = 0,
) -> Fitness:
    """Score a candidate's source on tasks x repeats in the sandbox (Fitness.error says why not).

    `first_repeat`: run repeats first_repeat .. first_repeat + repeats - 1 (racing adds runs to a candidate;
    repeat r has the same seed for every candidate, so candidates are compared on the same draws).
    `seeds` ((task index, repeat) -> generator.scoring.seeding.SeedRun) makes hybrid runs: those rows are
    charged first and the candidate's random samples start with them (see generator.guided.run)."""
    from generator.scoring.score import budget_for

    start = time.monotonic()
    if repeats < 1 or not tasks:
        raise TunesmithError("evaluate: need at least one task and repeats >= 1")
    found = inspect_source(source)
    if isinstance(found, CandidateError):
        return Fitness(None, {}, time.monotonic() - start, found, {"seed": seed, "repeats": repeats})
    budgets = [budget_for(t) for t in tasks]
    config = config or SandboxConfig(timeout_s=float(timeout_s))
    repeat_ids = range(int(first_repeat), int(first_repeat) + repeats)
    runs = [(ti, r, run_seed(seed, r)) for ti in range(len(tasks)) for r in repeat_ids]
    live = {ti for ti, t in enumerate(tasks) if isinstance(t, MeasuredTask)}
    # a cluster: one chunk per slot; live runs all go to one job, run one after another (one device)
    chunks = plan_jobs([r for r in runs if r[0] not in live], max(workers, getattr(executor, "slots", 0)))
    jobs = []
    for chunk in chunks:
        kwargs = init_kwargs(found, hyperparameters, budgets[chunk[0][0]].max_fevals)
        jobs.append(Job(source, found.class_name, kwargs, tasks, budgets, chunk, config, seeds=seeds or {}))
    if live:
        chunk = [r for r in runs if r[0] in live]
        kwargs = init_kwargs(found, hyperparameters, budgets[chunk[0][0]].max_fevals)
        jobs.append(
            Job(source, found.class_name, kwargs, tasks, budgets, chunk, config, oracle_factory=measured_oracle)
        )
    outcomes = _run_jobs(jobs, workers, executor)
    fitness = _aggregate(tasks, repeats, outcomes, seed)
    fitness.wall_s = time.monotonic() - start
    fitness.metadata.update(
        {
            "seed": seed,
            "repeats": repeats,
            "timeout_s": config.timeout_s,
            "first_repeat": int(first_repeat),
            "workers": len(jobs),
            "class_name": found.class_name,
            "hyperparameters": jobs[0].init_kwargs,
        }
    )
    return fitness


def measured_oracle(task: Task, budget, space=None) -> Oracle:
    """The oracle of one run in a job of measured tasks: the task's own (MeasuredTask), else the answer key's."""
    if isinstance(task, MeasuredTask):
        return task.make_oracle(budget, space)
    return Oracle(task, budget, space)


def run_measured_job(job: Job) -> JobOutcome:
    """A job of measured tasks, run by its task (a live task holds its device for the whole job)."""
    task = next(job.tasks[r[0]] for r in job.runs if isinstance(job.tasks[r[0]], MeasuredTask))
    return task.run_job(job)


def _runner(job: Job):
    """run_job, or for measured tasks the task's own way to run the job."""
    return run_job if job.oracle_factory is None else run_measured_job


def _run_jobs(jobs: list[Job], workers: int, executor) -> list[JobOutcome | None]:
    """Run the jobs; once one fails, the ones not yet started are cancelled (the candidate failed)."""
    if len(jobs) == 1 and executor is None:
        return [_runner(jobs[0])(jobs[0])]
    from generator.evaluation.executors import get_executor

    own = executor is None
    ex = executor or get_executor(None, workers)
    try:
        futures = [ex.submit(_runner(job), job) for job in jobs]
        pending = set(futures)
        while pending:
            done, pending = wait_futures(pending, FIRST_EXCEPTION)
            if any(f.cancelled() for f in done):  # not by us: the campaign stopped and shut the executor down
                raise CancelledError("the evaluation was cancelled: the campaign stopped")
            if any(f.exception() is not None or f.result().error is not None for f in done):
                for f in pending:
                    f.cancel()
                while pending:  # the ones already running finish
                    _, pending = wait_futures(pending)
                break
        return [None if f.cancelled() else _outcome(f) for f in futures]
    finally:
        if own:
            ex.shutdown(wait=True)


POLL_S = 0.2  # how often wait_futures looks for futures cancelled without notice


def wait_futures(futures, return_when=ALL_COMPLETED):
    """`concurrent.futures.wait` that also returns futures cancelled by `shutdown(cancel_futures=True)`.

    That shutdown marks queued futures cancelled without waking the threads in `wait()` on them (CPython
    notifies waiters only when a worker takes the item off the queue, which then never happens), so a plain
    `wait()` hangs for ever. That hang kept a stopped campaign alive: its evaluation threads waited on the
    sandbox jobs the campaign's stop had cancelled, and Python waits for those threads before it exits."""
    futures = set(futures)
    while True:
        done, pending = wait(futures, timeout=POLL_S, return_when=return_when)
        cancelled = {f for f in pending if f.cancelled()}
        if cancelled or not pending or _met(done, return_when):
            return done | cancelled, pending - cancelled


def _met(done, return_when) -> bool:
    """Whether `wait` returned because `return_when` was met (not because its timeout ran out)."""
    if return_when == FIRST_COMPLETED:
        return bool(done)
    if return_when == FIRST_EXCEPTION:
        return any(not f.cancelled() and f.exception() is not None for f in done)
    return False


def _outcome(future) -> JobOutcome:
    """A job's outcome; a job the executor lost (its Dask workers kept dying) failed as 'killed'."""
    from generator.evaluation.dask_executor import WorkerLost

    if isinstance(future.exception(), WorkerLost):
        return JobOutcome([], CandidateError("killed", str(future.exception())), "", 0.0)
    return future.result()


def _aggregate(tasks: list[Task], repeats: int, outcomes: list[JobOutcome | None], seed: int = 0) -> Fitness:
    from generator.scoring.behaviour import mean_behaviour, run_behaviour
    from generator.scoring.score import score_traces

    error = next((o.error for o in outcomes if o is not None and o.error is not None), None)
    runs = [r for o in outcomes if o is not None for r in o.runs]
    meta = {"protections": merge_protections([r.protections for r in runs])}
    cut = sum(1 for r in runs if getattr(r, "cut", False))
    if cut:  # ended at the wall-clock limit, scored on what they found (SandboxConfig.cut_slow_runs)
        meta["runs_cut_at_time_limit"] = cut
    if error is not None:
        out = next((o.output for o in outcomes if o is not None and o.error is not None), "")
        meta["output"] = printable(out[-4000:])  # the run's own words: no terminal escapes
        return Fitness(None, {}, 0.0, error, meta)
    per_task, behaviours, notes = {}, [], {}
    for ti, task in enumerate(tasks):
        mine = sorted((r for r in runs if r.task == ti), key=lambda r: r.repeat)
        traces = [r.trace for r in mine]
        if isinstance(task, MeasuredTask):  # a live task: against its measured cache, or else live random search
            ts = task.score(traces, seed)
            if ts.note:  # no measured cache here: not P, and the output must say so
                notes[task.name] = ts.note
        else:
            ts = score_traces(task, traces)
        per_task[task.name] = TaskFitness(
            score=ts.score,
            std=ts.std,
            fevals=float(np.mean([t.fevals for t in traces])),
            unique=float(np.mean([t.rows.size for t in traces])),
            per_repeat=tuple(ts.per_repeat),
            wall_s=float(sum(r.wall_s for r in mine)),
            runs=len(traces),
            se=standard_error(ts.per_repeat),
        )
        if not isinstance(task, MeasuredTask):  # a live task's rows have no answer key to find the incumbent by
            behaviours += [
                run_behaviour(task.space.valid, task.key.values, t.rows, not task.objective.higher_is_better)
                for t in traces
            ]
    behaviour = mean_behaviour(behaviours)
    if behaviour is not None:  # the candidate's niche ([niches]): measured here, from the oracle's rows
        meta["behaviour"] = behaviour
    score = float(np.mean([tf.score for tf in per_task.values()]))
    if notes:
        meta["score_notes"] = notes
    meta["runs"] = sum(tf.runs for tf in per_task.values())
    meta["se"] = standard_error(repeat_values({t: tf.to_dict() for t, tf in per_task.items()}))
    return Fitness(score, per_task, 0.0, None, meta)


def merge_protections(records: list[dict]) -> dict:
    """A wall counts as held only if it held in every run; notes are kept once each."""
    held: dict[str, bool] = {}
    notes: list[str] = []
    for rec in records:
        for name, ok in (rec.get("held") or {}).items():
            held[name] = held.get(name, True) and bool(ok)
        for note in rec.get("notes") or []:
            if note not in notes and len(notes) < 20:
                notes.append(note)
    return {"held": held, "notes": notes}


# ------------------------------------------------------------------------- the CLI's helpers


def load_task_paths(paths: list[str], only: list[str] | None = None) -> list[Task]:
    """Tasks from hub directories / cache files, optionally those whose name contains a filter."""
    from generator.tasks.entries import load_tasks

    tasks = [t for p in paths for t in load_tasks(p)]
    if only:
        tasks = [t for t in tasks if any(o in t.name for o in only)]
        if not tasks:
            raise TunesmithError(f"--task {only}: no task name matches; names look like 'convolution_milo/A100'")
    return tasks


def parse_hp_args(items: list[str]) -> dict:
    """NAME=VALUE pairs (VALUE as JSON when it parses, else a string)."""
    import json

    out = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name:
            raise TunesmithError(f"--hp {item!r}: expected NAME=VALUE, e.g. --hp pop_size=16")
        try:
            out[name] = json.loads(raw)
        except ValueError:
            out[name] = raw
    return out


def evaluate_file(
    path: str,
    task_paths: list[str],
    only: list[str] | None = None,
    *,
    repeats: int = 10,
    seed: int = 0,
    timeout_s: float = 30.0,
    workers: int = 1,
    hp_args=(),
    executor: str | None = None,
) -> tuple[str, Fitness]:
    """Evaluate an optimizer file; returns (strategy name = the path as given, as `bench` names it; Fitness)."""
    from pathlib import Path

    from generator.scoring.degenerate import warn_degenerate

    file = Path(path)
    try:
        source = file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise TunesmithError(f"{path}: cannot read the optimizer file ({exc}); give a Python source file") from None
    tasks = load_task_paths(task_paths, only)
    warn_degenerate(tasks)
    hyperparameters = parse_hp_args(list(hp_args)) or None
    ex = None
    if executor and executor != "local":  # e.g. dask-local or dask://HOST:PORT
        from generator.evaluation.executors import get_executor

        ex = get_executor(executor, workers)
    try:
        fitness = evaluate_source(
            source,
            tasks,
            repeats=repeats,
            seed=seed,
            timeout_s=timeout_s,
            hyperparameters=hyperparameters,
            workers=workers,
            executor=ex,
        )
    finally:
        if ex is not None:
            ex.shutdown(wait=True)
    return str(path), fitness


def fitness_json(name: str, fitness: Fitness) -> dict:
    """The `bench` JSON shape for one strategy, plus "error" when it failed and the full Fitness."""
    entry = {
        "score": fitness.score,
        "per_task": {
            t: {"score": tf.score, "std": tf.std, "unique_evals": tf.unique, "fevals": tf.fevals}
            for t, tf in fitness.per_task.items()
        },
        "wall_s": round(fitness.wall_s, 3),
    }
    doc = {"results": {name: entry}, "fitness": fitness.to_dict()}
    if fitness.error is not None:
        entry["error"] = doc["error"] = fitness.error.to_dict()
    return doc


def write_json(path: str, name: str, fitness: Fitness) -> None:
    import json
    from pathlib import Path

    Path(path).write_text(json.dumps(fitness_json(name, fitness), indent=2) + "\n")


def format_fitness(name: str, fitness: Fitness) -> str:
    """A short table: P per task (std over repeats, fevals per run), the mean, or the error."""
    if fitness.error is not None:
        e = fitness.error
        lines = [f"{name}: FAILED ({e.kind}) {e.message}"]
        if e.lineno:
            lines.append(f"  line {e.lineno}: {e.line}")
        if e.task:
            lines.append(f"  on task {e.task}, repeat {e.repeat}")
        if e.traceback:
            lines += ["  " + ln for ln in e.traceback.splitlines()[-6:]]
        return "\n".join(lines)
    width = max(len(t) for t in fitness.per_task)
    notes = fitness.metadata.get("score_notes") or {}  # tasks scored otherwise than by P (live, no cache)
    lines = [f"{'task':<{width}}  {'P' if not notes else 'score':>7}  {'std':>6}  {'fevals':>7}"]
    for t, tf in fitness.per_task.items():
        lines.append(f"{t:<{width}}  {tf.score:7.3f}  {tf.std:6.3f}  {tf.fevals:7.0f}")
    lines += [not_p_line(t, note) for t, note in notes.items()]
    held = fitness.metadata.get("protections", {}).get("held", {})
    lines.append(
        f"{name}: mean {'P' if not notes else 'score'} = {fitness.score:.3f} "
        f"({fitness.metadata.get('repeats')} repeats, "
        f"{fitness.wall_s:.1f} s; walls held: {sum(map(bool, held.values()))}/{len(held)})"
    )
    if fitness.metadata.get("runs_cut_at_time_limit"):
        lines.append(
            f"note: {fitness.metadata['runs_cut_at_time_limit']} run(s) reached the wall-clock limit "
            f"({fitness.metadata.get('timeout_s', '?')} s) before their budget was spent and were scored on "
            "what they had found; the optimizer's own code is slow (raise --timeout to let them finish)"
        )
    missing = weak_walls(held)
    if missing:
        lines.append(
            f"warning: sandbox walls that did not hold here: {', '.join(missing)} "
            "(see docs/explanation/security.md; run as root in a container for all of them)"
        )
    return "\n".join(lines)


RANDOM_BASIS_NOTE = "advantage over live random search of the same budget (no measured cache)"


def not_p_line(task_name: str, note: str = RANDOM_BASIS_NOTE) -> str:
    """The line under a table that says a task's number is not P (evaluate and bench print it alike)."""
    return f"note: {task_name} is scored by its {note}, not P: 0 = as good as random search there, higher is better"


# allowlist_root: where the kernel refuses pivot_root the run falls back to covering known paths, which
# leaves the rest of the file system readable; the user should hear that. shared_files_in_ram: without
# it a run can keep bits in the page cache of the files it reads (docs/explanation/security.md).
MAIN_WALLS = (
    "network_namespace",
    "mount_namespace",
    "allowlist_root",
    "hidden_paths",
    "private_proc",
    "unprivileged_user",
    "shared_files_in_ram",
)


def weak_walls(held: dict) -> list[str]:
    """The main walls that did not hold in some run (an empty list when all did)."""
    return [w for w in MAIN_WALLS if held and not held.get(w, False)]
