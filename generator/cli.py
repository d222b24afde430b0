"""The `tunesmith` command: parse arguments, call the library, print. No logic lives here.

Each subcommand is one `_cmd_<name>` function registered in COMMANDS with its argument setup.
"""

from __future__ import annotations

import argparse
import sys

from generator.errors import TunesmithError

# What `tunesmith --help` says (the module docstring above is for developers).
DESCRIPTION = (
    "Generate optimization algorithms for GPU auto-tuning with an LLM (or the offline synthesizer), "
    "score them on search spaces, tune them with Optuna and export them as Kernel Tuner strategies. "
    "Start with: tunesmith run campaigns/quickstart.toml"
)


class _Parser(argparse.ArgumentParser):
    """No abbreviated flags in any subcommand (subparsers take this class): `bench --task X` once meant --tasks X."""

    def __init__(self, *args, **kwargs):
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)


def _build_parser() -> argparse.ArgumentParser:
    from generator import __version__

    parser = _Parser(prog="tunesmith", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"tunesmith {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (setup, handler, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        setup(p)
        p.set_defaults(handler=handler, subparser=p)
    return parser


# name -> (add_arguments(parser), handler(args) -> exit code, one-line help). Rooms add theirs here.
COMMANDS: dict[str, tuple] = {}


# -- lineage review (issue 8): lineage, show, report -----------------------------------------
def _print_long(text: str) -> None:
    """Print a long view; a reader that stops early (`| head`) is not an error."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        from generator.interrupts import quiet_stdout

        quiet_stdout()  # so the exit flush stays quiet


def _setup_lineage(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", help="a campaign's run directory (finished, running or interrupted)")
    p.add_argument("--id", help="show only the ancestry of this candidate")


def _cmd_lineage(args) -> int:
    import shutil

    from generator.review.lineage import Lineage
    from generator.review.views import render_tree

    columns = shutil.get_terminal_size((120, 24)).columns
    _print_long(render_tree(Lineage.load(args.run_dir), args.id, color=sys.stdout.isatty(), columns=columns))
    return 0


def _setup_show(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", help="a campaign's run directory")
    p.add_argument("id", help="candidate id, e.g. c0007")
    p.add_argument("--diff", action="store_true", help="also print the unified diff against each parent")


def _cmd_show(args) -> int:
    from generator.review.lineage import Lineage
    from generator.review.views import render_show

    _print_long(render_show(Lineage.load(args.run_dir), args.id, diff=args.diff, color=sys.stdout.isatty()))
    return 0


def _setup_report(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", help="a campaign's run directory (finished, running or interrupted)")
    p.add_argument(
        "-o",
        "--output",
        help="HTML file to write (default RUN_DIR/report/report.html); PNGs go in NAME_files/ beside it",
    )


def _cmd_report(args) -> int:
    from generator.review.report import build_report

    result = build_report(args.run_dir, args.output)
    print(f"report: {result.html}")
    for png in result.pngs:
        print(f"plot:   {png}")
    return 0


COMMANDS["lineage"] = (_setup_lineage, _cmd_lineage, "print a run's family tree of candidates, best path marked")
COMMANDS["show"] = (_setup_show, _cmd_show, "print one candidate: code, scores, error, prompt and reply, diffs")
COMMANDS["report"] = (_setup_report, _cmd_report, "write a self-contained HTML report of a run, with PNG plots")


# -- campaign engine (issue 4): run, resume, status, stats, prompt ----------------------------
def _setup_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="campaign file, e.g. campaigns/quickstart.toml")
    p.add_argument("--run-dir", help="override output.run_dir (an existing run there is continued)")
    p.add_argument("--budget", type=int, help="override evolution.budget (candidates)")
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


def _cmd_run(args) -> int:
    from generator.campaign.loop import format_summary, run_campaign

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


def _cmd_resume(args) -> int:
    from generator.campaign.loop import format_summary, resume

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
    from generator.campaign.loop import format_status
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
    from generator.campaign.loop import render_prompt

    for message in render_prompt(args.config, args.operator):
        print(f"===== {message['role']} =====")
        print(message["content"])
    return 0


COMMANDS["run"] = (_setup_run, _cmd_run, "run (or continue) a generation campaign from a TOML file")
COMMANDS["resume"] = (_setup_resume, _cmd_resume, "continue an interrupted campaign from its run directory")
COMMANDS["status"] = (_setup_status, _cmd_status, "print a run's leaderboard and the budget used")
COMMANDS["stats"] = (_setup_stats, _cmd_stats, "print the search-space statistics of a task")
COMMANDS["prompt"] = (_setup_prompt, _cmd_prompt, "print a rendered generation prompt of a campaign")


# -- HPO and export (issue 7): hpo, export ---------------------------------------------------
def _setup_hpo(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", help="a campaign's run directory")
    p.add_argument("--top", type=int, dest="top_k", help="tune the K best candidates (default: [hpo] top_k or 1)")
    p.add_argument("--id", action="append", dest="ids", help="tune this candidate (repeatable) instead of the top K")
    p.add_argument("--trials", type=int, help="Optuna trials per candidate, shared by all processes on the storage")
    p.add_argument("--repeats", type=int, help="runs per task and trial (default: [hpo] repeats or 3)")
    p.add_argument(
        "--report-repeats",
        type=int,
        help="runs per task of the before/after scores on the training "
        "and validation tasks (default: max(10, 2 x repeats))",
    )
    p.add_argument("--storage", help="Optuna storage URL (default sqlite:///RUN_DIR/hpo.db; also journal:PATH)")
    p.add_argument("--seed", type=int, help="seed of the sampler and of every trial's evaluation")
    p.add_argument("--worker", type=int, help="index of this process when several run on one storage")
    # --no-progress as on run, resume, evaluate and bench; --quiet, its older name, still works
    p.add_argument("--no-progress", "--quiet", action="store_true", dest="quiet", help="no progress bar")


def _cmd_hpo(args) -> int:
    from generator.archive import Archive
    from generator.tuning.hpo import format_result, run_hpo, settings_from_config

    settings = settings_from_config(
        Archive.open(args.run_dir).config,
        top_k=args.top_k,
        ids=args.ids,
        trials=args.trials,
        repeats=args.repeats,
        storage=args.storage,
        seed=args.seed,
        worker=args.worker,
        report_repeats=args.report_repeats,
    )
    from pathlib import Path

    try:
        results = run_hpo(args.run_dir, settings, progress=not args.quiet)
    except KeyboardInterrupt as exc:  # finished trials are in the study; the same command goes on from them
        import shlex

        exc.resume_command, exc.saved = f"tunesmith {shlex.join(args.command_line)}", "the finished trials are saved"
        raise
    for result in results:
        print(format_result(result))
        print(f"results: {Path(args.run_dir) / 'hpo' / (result.candidate_id + '.json')}")
    return 0


def _setup_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", help="a campaign's run directory")
    p.add_argument("--name", required=True, help="module name: writes ./generated_algorithms/NAME.py")
    p.add_argument("--id", help="candidate to export (default: the best tuned one, else the best)")
    p.add_argument(
        "--out",
        help="folder to write NAME.py into, nothing else added there (default: ./generated_algorithms/, made a package)",
    )
    p.add_argument("--force", action="store_true", help="replace an existing module of that name (and its report)")


def _cmd_export(args) -> int:
    from generator.export.exporter import export_run, import_note

    exported = export_run(args.run_dir, args.name, args.id, args.out, overwrite=args.force)
    print(f"exported {exported.candidate_id} -> {exported.module}")
    note = import_note(exported.module)
    if note:  # a checkout here hides the installed package it went to
        print(note)
    print(f"report:  {exported.report}")
    print(
        f"tuned values: {exported.tuned_values or 'defaults kept'}"
        if exported.tuned
        else f"not tuned (no HPO result; `tunesmith hpo {args.run_dir} --id {exported.candidate_id}` tunes it)"
    )
    return 0


def _setup_upstream(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "module",
        help="a module written by `tunesmith export`, e.g. generated_algorithms/archive/knn_late_acceptance.py",
    )
    p.add_argument("--out", help="file to write (default: gen_MODULE.py in the current folder)")
    p.add_argument("--force", action="store_true", help="replace an existing file")


def _cmd_upstream(args) -> int:
    from pathlib import Path

    from generator.export.exporter import refuse_existing
    from generator.export.output import check_output_file
    from generator.export.upstream import upstream_source

    out = Path(args.out or f"gen_{Path(args.module).stem}.py")
    check_output_file(out, "choose another file with --out", example=out.name)
    refuse_existing(out, args.force, "choose another file with --out")
    source = upstream_source(args.module)
    out.parent.mkdir(parents=True, exist_ok=True)  # --out may name a folder that does not exist yet
    out.write_text(source)
    print(
        f"wrote {out}: Kernel Tuner's strategy format (copy it into kernel_tuner/strategies/, or pass the "
        "module as strategy=)"
    )
    return 0


COMMANDS["hpo"] = (_setup_hpo, _cmd_hpo, "tune the hyperparameters of a run's best candidates with Optuna")
COMMANDS["export"] = (_setup_export, _cmd_export, "write a candidate as a Kernel Tuner strategy module")
COMMANDS["upstream"] = (
    _setup_upstream,
    _cmd_upstream,
    "write an exported optimizer as a file in Kernel Tuner's own strategy format",
)


# --- cache (problems, live) ---------------------------------------------------------------
def _setup_cache(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="cache_command", required=True)
    b = sub.add_parser("build", help="brute-force a problem's search space on this machine's GPU (resumable)")
    b.add_argument("problem", help="problem spec, e.g. problems/gemm/problem.toml")
    b.add_argument("--out", default=None, help="output folder (default: problems/caches/<problem>)")
    b.add_argument("--time-limit", type=float, default=None, help="stop after this many seconds; rerun to resume")
    b.add_argument("--sample", type=int, default=None, help="measure only N random configurations (a quick check)")


def _cmd_cache(args) -> int:
    from generator.live.cache_build import build_cache

    build = build_cache(args.problem, args.out, time_limit=args.time_limit, sample=args.sample)
    print(build.summary())
    return 0


COMMANDS["cache"] = (_setup_cache, _cmd_cache, "build measured search spaces of problems (cache build PROBLEM)")


# --- template (bring your own kernel, issue 31) ----------------------------------------------
def _setup_template(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "kernel",
        help="a kernel spec: problem.toml without [tune_params] (its folder holds kernel and "
        "reference), or a kernel campaign file (a TOML file with a [kernel_campaign] table)",
    )
    p.add_argument("--out", default=None, help="output folder: the recording, the written problem, template_run.json")
    p.add_argument(
        "--model",
        default=None,
        help="LLM model string (local/..., replay/DIR, openai/...); the "
        "offline synthesizer writes optimizers, not templates",
    )
    p.add_argument("--attempts", type=int, default=3, help="proposals at most (the first new, then fixes)")
    p.add_argument(
        "--fevals", type=int, default=None, help="tuning budget in evaluations (default: a quarter of the space)"
    )


def _cmd_template(args) -> int:
    from generator.errors import TunesmithError
    from generator.kernels.campaign import is_kernel_campaign, run_kernel_campaign
    from generator.kernels.templating import template_kernel

    if is_kernel_campaign(args.kernel):  # its run_dir, model and budget are in the file
        status = run_kernel_campaign(args.kernel, log=lambda line: print(line, flush=True)).status()
        print(
            f"kernel campaign {status['state']}{': ' + status['reason'] if status.get('reason') else ''}; "
            f"best: {status.get('best')} (replies: {status.get('replies')})"
        )
        return 0 if status.get("best") else 1
    if args.out is None:
        raise TunesmithError("tunesmith template KERNEL needs --out DIR (where the template and its problem go)")
    run = template_kernel(args.kernel, args.out, model=args.model, attempts=args.attempts, fevals=args.fevals)
    if not run.accepted:
        print(
            f"tunesmith: no template passed the checks in {len(run.attempts)} attempts (replies: {run.replies}); "
            f"see {args.out}/template_run.json",
            file=sys.stderr,
        )
        return 1
    return 0


COMMANDS["template"] = (
    _setup_template,
    _cmd_template,
    "make a kernel tunable with an LLM, check it, measure and tune it",
)


# -- evaluate and bench: generator/cli_scoring.py ---------------------------------------------
from generator.cli_scoring import COMMANDS as _SCORING  # noqa: E402

COMMANDS.update(_SCORING)


# --- llm (local models) ---------------------------------------------------------------------
def _setup_llm(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="llm_command", required=True)
    i = sub.add_parser("install", help="download a pinned local code model and assemble it (hashes checked)")
    i.add_argument("model", help="e.g. local/qwen2.5-coder-1.5b (`tunesmith llm list` names them)")
    sub.add_parser("list", help="the local models Tunesmith can install, and which are installed")
    r = sub.add_parser("remove", help="delete an installed local model")
    r.add_argument("model")


def _cmd_llm(args) -> int:
    from generator.llm import local_models as lm

    if args.llm_command == "install":
        lm.install(args.model, log=lambda line: print(line, flush=True))
        print(f'use it with: [llm] model = "{args.model}" (needs the engine: pip install -e ".[local]")')
    elif args.llm_command == "list":
        for model in lm.known_models().values():
            state = "installed" if model.path.is_file() else "not installed"
            print(f"{model.id:28} {model.size / 1e6:6.0f} MB  {state:13}  {model.upstream}; {model.licence}")
        print(f"models live in {lm.model_dir()} (set {lm.CACHE_ENV} to move them)")
    else:
        print(f"{args.model}: {'removed' if lm.remove(args.model) else 'was not installed'}")
    return 0


COMMANDS["llm"] = (_setup_llm, _cmd_llm, "local code models: llm install|list|remove local/NAME")


def _one_line_task_warnings() -> None:
    """Show warnings about tasks as one line each (the code line that raised them means nothing to a user)."""
    import warnings

    from generator.tasks.cache_sanity import TaskWarning

    plain = warnings.formatwarning
    if getattr(plain, "tunesmith", False):
        return

    def format_warning(message, category, *args, **kwargs):
        if issubclass(category, TaskWarning):
            return f"tunesmith: warning: {message}\n"
        return plain(message, category, *args, **kwargs)

    format_warning.tunesmith = True
    warnings.formatwarning = format_warning


def _parse(argv: list[str] | None) -> argparse.Namespace:
    """The arguments; a flag the subcommand does not know is refused with the subcommand's usage, not the
    top-level one (`tunesmith status RUN --kk 3` shows how `status` is called)."""
    args, unknown = _build_parser().parse_known_args(argv)
    if unknown:
        args.subparser.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    from generator.interrupts import says_how_to_continue, sigterm_as_interrupt, stop_within_seconds

    if argv is None:  # the command itself, not a caller in Python (a test): a stop ends it within seconds
        stop_within_seconds()
    try:
        with sigterm_as_interrupt():  # `kill PID` stops a command as Ctrl-C does, from its first second on
            args = _parse(argv)
            args.command_line = list(sys.argv[1:] if argv is None else argv)  # to say how to continue after Ctrl-C
            _one_line_task_warnings()
            with says_how_to_continue(
                f"tunesmith resume {getattr(args, 'run_dir', '')}", lambda: args.command == "resume"
            ):  # also while it starts up
                import generator.live  # noqa: F401  (registers the live: task source; takes a second to import)

                code = int(args.handler(args) or 0)
        sys.stdout.flush()  # a reader that stopped early (`| head -1`) shows here, not at exit
        return code
    except BrokenPipeError:  # `tunesmith status RUN | head -1`: the reader has what it wanted
        from generator.interrupts import quiet_stdout

        quiet_stdout()
        return 141  # 128 + SIGPIPE, as a shell reports a writer whose reader went away
    except TunesmithError as exc:  # with the resume line when a campaign was stopped by its infrastructure
        from generator.interrupts import resume_hint

        print(f"tunesmith: error: {exc}{resume_hint(exc)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM during a campaign (generator.interrupts)
        from generator.interrupts import exit_code, exit_now, reason, resume_hint, stop_reported

        stop_reported()
        print(f"tunesmith: {reason(exc)}{resume_hint(exc)}", file=sys.stderr, flush=True)
        if argv is None:  # the command itself, not a caller in Python: end now, not when every thread is done
            exit_now(exit_code(exc))
        return exit_code(exc)
    except Exception as exc:  # after a stop: its KeyboardInterrupt, turned into a library's own error
        from generator.interrupts import exit_code, exit_now, reason, resume_hint, stop_reported, stop_signalled

        stop = stop_signalled()
        if stop is None:
            raise
        stop_reported()
        print(f"tunesmith: {reason(stop)}{resume_hint(exc)}", file=sys.stderr, flush=True)
        exit_now(exit_code(stop))


if __name__ == "__main__":
    sys.exit(main())
