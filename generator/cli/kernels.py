"""`tunesmith cache` and `template`: measured search spaces, and kernels made tunable (bring your own kernel)."""

from __future__ import annotations

import argparse
import sys

# name -> (add_arguments(parser), handler(args) -> exit code, one-line help), in the order `--help` lists them
COMMANDS: dict[str, tuple] = {}


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
