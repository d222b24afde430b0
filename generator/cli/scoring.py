"""The `tunesmith` subcommands that score strategies on tasks: `evaluate` (one file, in the sandbox)
and `bench` (Kernel Tuner's strategies and strategy files side by side). Thin, as the rest of the CLI: parse,
call the API, print."""

from __future__ import annotations

import argparse
import sys


def _setup_evaluate(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="Python file with one optimizer class (the candidate interface)")
    p.add_argument(
        "--tasks",
        action="append",
        required=True,
        help="tasks, as in a campaign's [tasks] train: hub:APP/GPU, hub:APP, problem:NAME[/GPU], "
        "live:NAME[,fevals=N][,seconds=S], a Kernel Tuner cache file, a problem.toml or a "
        "benchmark-hub directory (repeatable)",
    )
    p.add_argument("--task", action="append", dest="only", help="keep tasks whose name contains this (repeatable)")
    p.add_argument("--repeats", type=int, default=10, help="runs per task (default 10)")
    p.add_argument("--timeout", type=float, default=30.0, help="wall-clock seconds per run (default 30)")
    p.add_argument("--seed", type=int, default=0, help="seed of the runs (default 0)")
    p.add_argument("--workers", type=int, default=1, help="sandbox processes at a time (default 1)")
    p.add_argument(
        "--executor",
        metavar="URL",
        default="local",
        help="where the runs go: local (default), dask-local or dask://HOST:PORT",
    )
    p.add_argument(
        "--hp",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a declared hyperparameter (repeatable; VALUE is parsed as JSON when it can be)",
    )
    p.add_argument("--json", dest="json_out", help="also write the result as JSON (the shape of `bench`)")


def _cmd_evaluate(args) -> int:
    from generator.evaluation.evaluate import evaluate_file, format_fitness, write_json

    name, fitness = evaluate_file(
        args.file,
        args.tasks,
        args.only,
        repeats=args.repeats,
        seed=args.seed,
        timeout_s=args.timeout,
        workers=args.workers,
        hp_args=args.hp,
        executor=args.executor,
    )
    print(format_fitness(name, fitness))
    if args.json_out:
        write_json(args.json_out, name, fitness)
    return 0 if fitness.error is None else 1


def _setup_bench(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tasks",
        action="append",
        required=True,
        metavar="DIR_OR_FILE",
        help="benchmark-hub directory, cache file, problem.toml or folder (repeatable)",
    )
    p.add_argument(
        "--task",
        action="append",
        dest="only",
        metavar="NAME",
        help="keep tasks whose name contains this, e.g. gemm or pnpoly/RTX_Titan (repeatable)",
    )
    p.add_argument(
        "--strategies",
        required=True,
        help="comma-separated: Kernel Tuner built-ins (genetic_algorithm, pso:popsize=10), "
        "files (path/x.py, path/x.py:ClassName), llm_guided[:batch=10], and hybrids "
        "llm_guided+STRATEGY (the LLM's first round seeds STRATEGY)",
    )
    p.add_argument("--repeats", type=int, default=50, help="runs per strategy and task (default 50)")
    p.add_argument("--seed", type=int, default=0, help="base seed; each repeat gets its own (default 0)")
    p.add_argument("--workers", type=int, default=None, help="worker processes (default: CPU count)")
    p.add_argument("--max-fevals", type=int, default=None, help="also stop runs after N unique evaluations")
    p.add_argument(
        "--protocol",
        default=None,
        metavar="FILE",
        help="a generalisation protocol (TOML, `sealed = [families]`): its sealed test families are "
        "left out, so that no table looks at them before the final choice",
    )
    p.add_argument(
        "--open-sealed",
        action="store_true",
        help="with --protocol: run only the sealed families (the one look at the test set, at the end)",
    )
    p.add_argument("--json", dest="json_out", default=None, metavar="OUT.json", help="write the results as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--se",
        action="store_true",
        help="show each P as 'P ± standard error' (std of single-repeat P / sqrt(repeats); the mean's "
        "combines the tasks'), to tell a difference from noise",
    )
    p.add_argument(
        "--model",
        default=None,
        help="litellm model of llm_guided (default synth/components, the "
        "offline synthesizer; replay/DIR replays a --record directory)",
    )
    p.add_argument(
        "--seed-with",
        metavar="llm_guided[:k=v]",
        default=None,
        help="start every other strategy from llm_guided's first round(s): X becomes llm_guided+X",
    )
    p.add_argument(
        "--record",
        metavar="DIR",
        default=None,
        help="record llm_guided's LLM exchanges in DIR (a run directory that --model replay/DIR reads)",
    )


def _cmd_bench(args) -> int:
    from generator.bench.command import bench, select_tasks
    from generator.bench.results import BenchRecord, check_writable, table
    from generator.bench.runner import parse_strategy
    from generator.scoring.degenerate import warn_degenerate
    from generator.tasks.entries import load_tasks

    texts = [s.strip() for s in args.strategies.split(",") if s.strip()]
    if args.seed_with:
        texts = [t if t.startswith("llm_guided") else f"{args.seed_with}+{t}" for t in texts]
    specs = [parse_strategy(s) for s in texts]
    if any(s.kind == "llm_guided" or s.seeder is not None for s in specs):
        from generator.guided.run import prepare_specs

        specs = prepare_specs(specs, model=args.model, record=args.record, seed=args.seed)
    if args.json_out:  # before the tasks load, and long before the benchmark runs
        check_writable(args.json_out)
    tasks = select_tasks(load_tasks(args.tasks), args.only)
    if args.protocol or args.open_sealed:
        from generator.bench.crossval import split_sealed

        tasks = split_sealed(tasks, args.protocol, args.open_sealed)
    warn_degenerate(tasks)
    record = BenchRecord(
        args.json_out, [s.label for s in specs], repeats=args.repeats, seed=args.seed, tasks=[t.name for t in tasks]
    )
    try:
        bench(
            tasks,
            specs,
            repeats=args.repeats,
            seed=args.seed,
            workers=args.workers,
            progress=not args.no_progress,
            max_fevals=args.max_fevals,
            on_result=record.add,
        )
    finally:  # Ctrl-C or a crash too: show and save what finished
        if record.results:
            print(table(record.results, se=args.se), flush=True)
            for line in _score_notes(tasks):
                print(line, flush=True)
        record.save(complete=len(record.results) == len(specs))
    if args.record:
        from generator.guided.run import usage_line

        print(usage_line(args.record))
    failed = [r.label for r in record.results if r.failed]
    if failed:
        print(f"tunesmith: {', '.join(failed)} failed on some tasks (errors above)", file=sys.stderr)
    return 1 if failed else 0


def _score_notes(tasks) -> list[str]:
    """A line for each task the table scores otherwise than by P (as `evaluate` says too)."""
    from generator.evaluation.evaluate import not_p_line
    from generator.live.evaluate import scored_against_random

    return [not_p_line(t.name) for t in tasks if scored_against_random(t)]


def _setup_crossval(p) -> None:
    p.add_argument("results", nargs="+", metavar="RESULTS.json", help="tunesmith bench --json files (merged)")
    p.add_argument(
        "--protocol",
        default=None,
        metavar="FILE",
        help="a TOML file whose `sealed = [...]` names the test set's kernel families; they are left out",
    )
    p.add_argument(
        "--tasks",
        action="append",
        default=[],
        metavar="DIR_OR_FILE",
        help="the benched tasks (as bench's --tasks), to learn a portfolio rule from their spaces",
    )
    p.add_argument(
        "--members",
        default=None,
        help="comma-separated strategies a portfolio may run (default: the .py files in the table)",
    )
    p.add_argument(
        "--drop",
        action="append",
        default=[],
        metavar="STRATEGY",
        help="leave this strategy's row out (repeatable), e.g. a 20-repeat row that a rerun of the same "
        "optimizer under another label replaces",
    )
    p.add_argument("--json", dest="json_out", metavar="OUT.json", default=None, help="write the table as JSON")
    p.add_argument("--md", dest="md_out", metavar="OUT.md", default=None, help="write the table as Markdown")


def _cmd_crossval(args) -> int:
    from generator.bench.crossval_report import crossval_report

    print(
        crossval_report(
            args.results, args.protocol, args.tasks, args.members, args.json_out, args.md_out, drop=args.drop
        )
    )
    return 0


COMMANDS: dict[str, tuple] = {
    "evaluate": (_setup_evaluate, _cmd_evaluate, "score one optimizer file in the sandbox (P per task)"),
    "bench": (_setup_bench, _cmd_bench, "score Kernel Tuner strategies and strategy files on tasks (P)"),
    "crossval": (
        _setup_crossval,
        _cmd_crossval,
        "rank benched strategies by cross-validation over kernel families (and learn a portfolio rule)",
    ),
}
