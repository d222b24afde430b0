"""`tunesmith run`, `resume`, `status`, `stats` and `prompt`: the campaign engine's commands."""

from __future__ import annotations

import argparse

# name -> (add_arguments(parser), handler(args) -> exit code, one-line help), in the order `--help` lists them
COMMANDS: dict[str, tuple] = {}


def _add_running_options(p: argparse.ArgumentParser) -> None:
    """Where and how a campaign runs: the options `run` and `resume` share."""
    p.add_argument(
        "--executor",
        metavar="URL",
        help="where evaluations run: local, dask-local or dask://HOST:PORT (default: the config's)",
    )
    p.add_argument(
        "--worker-wait",
        type=float,
        metavar="SECONDS",
        help="Dask: how long to wait for a worker before stopping, resumable (default: [evaluation] worker_wait, 300)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def _setup_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="campaign file, e.g. campaigns/quickstart.toml")
    p.add_argument("--run-dir", help="override output.run_dir (an existing run there is continued)")
    p.add_argument("--budget", type=int, help="override evolution.budget (candidates)")
    _add_running_options(p)


def _cmd_run(args) -> int:
    from generator.campaign.printing import format_summary
    from generator.campaign.run import run_campaign
    from generator.record import recording

    with recording(config=args.config, run_dir=args.run_dir):  # [record]: MLflow, when the campaign asks for it
        summary = run_campaign(
            args.config,
            run_dir=args.run_dir,
            budget=args.budget,
            progress=not args.no_progress,
            executor=args.executor,
            worker_wait=args.worker_wait,
        )
    print(format_summary(summary))
    return 0 if summary.state == "finished" else 3


def _setup_resume(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", help="run directory of an interrupted or finished campaign")
    p.add_argument("--budget", type=int, help="new total budget in candidates (to extend a finished run)")
    _add_running_options(p)


def _cmd_resume(args) -> int:
    from generator.campaign.printing import format_summary
    from generator.campaign.run import resume
    from generator.record import recording

    with recording(run_dir=args.run_dir):  # the same MLflow run as before the stop (RUN_DIR/mlflow.json)
        summary = resume(
            args.run_dir,
            budget=args.budget,
            progress=not args.no_progress,
            executor=args.executor,
            worker_wait=args.worker_wait,
        )
    print(format_summary(summary))
    return 0 if summary.state == "finished" else 3


def _setup_status(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", help="a campaign's run directory")
    p.add_argument("-k", type=int, default=10, help="leaderboard length (default 10)")


def _cmd_status(args) -> int:
    from generator.campaign.printing import format_status
    from generator.kernels.status import format_kernel_status, is_kernel_run

    # a kernel campaign's templates are scored by speed-up: no budget, no P, no repeats
    print((format_kernel_status if is_kernel_run(args.run_dir) else format_status)(args.run_dir, args.k))
    return 0


def _setup_stats(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", help="'hub:APP/GPU', 'problem:NAME/GPU', a cache file or a hub directory")


def _cmd_stats(args) -> int:
    from generator.config import TasksConfig
    from generator.scoring.degenerate import warn_degenerate
    from generator.scoring.statistics import space_statistics
    from generator.tasks.entries import load_task_set

    tasks = load_task_set([args.task], TasksConfig(train=[args.task]))
    warn_degenerate(tasks)
    for task in tasks:
        print(f"## {task.name}")
        for key, value in space_statistics(task).lines().items():
            print(f"- {key}: {value}")
    return 0


def _setup_prompt(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="campaign file")
    p.add_argument(
        "--operator",
        default="new",
        choices=["new", "refine", "simplify", "fix", "crossover"],
        help="which operator's prompt to render (parents are placeholders)",
    )


def _cmd_prompt(args) -> int:
    from generator.campaign.run import render_prompt

    for message in render_prompt(args.config, args.operator):
        print(f"===== {message['role']} =====")
        print(message["content"])
    return 0


COMMANDS["run"] = (_setup_run, _cmd_run, "run (or continue) a generation campaign from a TOML file")
COMMANDS["resume"] = (_setup_resume, _cmd_resume, "continue an interrupted campaign from its run directory")
COMMANDS["status"] = (_setup_status, _cmd_status, "print a run's leaderboard and the budget used")
COMMANDS["stats"] = (_setup_stats, _cmd_stats, "print the search-space statistics of a task")
COMMANDS["prompt"] = (_setup_prompt, _cmd_prompt, "print a rendered generation prompt of a campaign")
