"""`tunesmith hpo`, `export` and `upstream`: tuning a run's winners and writing them out as strategies."""

from __future__ import annotations

import argparse

# name -> (add_arguments(parser), handler(args) -> exit code, one-line help), in the order `--help` lists them
COMMANDS: dict[str, tuple] = {}


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
    from generator.tuning.hpo import run_hpo
    from generator.tuning.results import format_result
    from generator.tuning.settings import settings_from_config

    settings = settings_from_config(
        Archive.open(args.run_dir).stored.campaign,
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
