"""`tunesmith llm install|list|remove`: the pinned local code models."""

from __future__ import annotations

import argparse

# name -> (add_arguments(parser), handler(args) -> exit code, one-line help), in the order `--help` lists them
COMMANDS: dict[str, tuple] = {}


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
