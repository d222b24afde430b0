"""`tunesmith serve RUN_DIR ...`: its arguments and handler, registered by generator.cli."""

from __future__ import annotations

import argparse
import shlex


def setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories (running, finished or stopped)")
    p.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765; 0: any free port)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1, this machine only; the page shows every candidate's code)",
    )
    p.add_argument("--poll", type=float, default=2.0, help="seconds between the page's looks at the runs (default 2)")


def handle(args) -> int:
    from generator.archive import Archive
    from generator.errors import TunesmithError
    from generator.serve.server import make_server

    for run_dir in args.run_dirs:
        Archive.open(run_dir)  # a folder that holds no run is named now, not as an empty page
    if not 0 <= args.port < 65536:
        raise TunesmithError(f"--port {args.port}: out of range; give 1-65535, or 0 for any free port")
    if not args.poll > 0:
        raise TunesmithError(f"--poll {args.poll}: give a positive number of seconds, e.g. --poll 2")
    try:
        server = make_server(args.run_dirs, args.host, args.port, int(args.poll * 1000))
    except OSError as exc:
        raise TunesmithError(
            f"cannot listen on {args.host}:{args.port} ({exc.strerror}); choose another --port (0: any free one)"
        ) from None
    host, port = server.server_address[:2]
    print(
        f"serving {len(args.run_dirs)} run{'s' if len(args.run_dirs) != 1 else ''} at http://{host}:{port}/", flush=True
    )
    print("stop with Ctrl-C; the run directories are only read", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the same command shows the runs again
        exc.resume_command = "tunesmith " + shlex.join(getattr(args, "command_line", None) or ["serve", *args.run_dirs])
        exc.saved = "the run directories were only read"
        raise
    finally:
        server.server_close()
    return 0


COMMANDS = {"serve": (setup, handle, "a live web page of running or finished runs (leaderboard, lineage, costs)")}
