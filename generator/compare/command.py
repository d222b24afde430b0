"""`tunesmith compare RUN_DIR ...`: its arguments and handler, registered by generator.cli."""

from __future__ import annotations

import argparse
import shlex


def setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories, several seeds per arm")
    p.add_argument(
        "--label",
        action="append",
        dest="labels",
        metavar="LABEL",
        help="the arm of each RUN_DIR, once per RUN_DIR in the same order (default: arms by their settings)",
    )
    p.add_argument(
        "-o", "--out", default="compare", help="folder for compare.json and compare.html (default ./compare)"
    )


def handle(args) -> int:
    from generator.compare.page import compare, table_text, write

    command = "tunesmith " + shlex.join(getattr(args, "command_line", None) or ["compare", *args.run_dirs])
    data = compare(args.run_dirs, args.labels, command)
    json_path, html_path = write(data, args.out)
    print(table_text(data))
    print(f"json: {json_path}")
    print(f"html: {html_path}")
    return 0


COMMANDS = {"compare": (setup, handle, "compare runs grouped into arms: best P against candidates, tokens, cost")}
