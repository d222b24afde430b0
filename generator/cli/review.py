"""`tunesmith lineage`, `show` and `report`: reading a run's candidates and their family tree."""

from __future__ import annotations

import argparse
import sys

# name -> (add_arguments(parser), handler(args) -> exit code, one-line help), in the order `--help` lists them
COMMANDS: dict[str, tuple] = {}


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
