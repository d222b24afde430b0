"""The `tunesmith` command: parse arguments, call the library, print. No logic lives here.

Each subcommand is one `_cmd_<name>` function with its argument setup, in the module of its concern
(review, run, tuning, kernels, scoring, llm), listed in that module's COMMANDS; COMMANDS here joins them in
the order `tunesmith --help` shows. `python -m generator.cli` runs `main` (`__main__.py`), as the
`tunesmith` console script (`generator.cli:main`) does.
"""

from __future__ import annotations

import argparse
import sys

from generator.cli import kernels, llm, review, run, scoring, tuning
from generator.compare import command as compare  # issue 42: its own room, as serve's
from generator.errors import TunesmithError
from generator.serve import command as serve

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


# name -> (add_arguments(parser), handler(args) -> exit code, one-line help), each group from its module
COMMANDS: dict[str, tuple] = {
    **review.COMMANDS,
    **serve.COMMANDS,
    **compare.COMMANDS,
    **run.COMMANDS,
    **tuning.COMMANDS,
    **kernels.COMMANDS,
    **scoring.COMMANDS,
    **llm.COMMANDS,
}


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
