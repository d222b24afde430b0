"""The `tunesmith` command: parse arguments, call the library, print. No logic lives here.

Each subcommand is one `_cmd_<name>` function registered in COMMANDS with its argument setup.
"""

from __future__ import annotations

import argparse
import sys

from generator.errors import TunesmithError


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tunesmith", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (setup, handler, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        setup(p)
        p.set_defaults(handler=handler)
    return parser


# name -> (add_arguments(parser), handler(args) -> exit code, one-line help). Rooms add theirs here.
COMMANDS: dict[str, tuple] = {}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    args = _build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except TunesmithError as exc:
        print(f"tunesmith: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("tunesmith: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
