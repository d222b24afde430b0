"""The `tunesmith` command as a user meets it (issue 24, item 17): help, version, hints that fit the command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from generator import __version__
from generator.cli import main
from generator.errors import TunesmithError
from generator.run_lock import run_lock


def test_top_level_help_has_no_note_for_developers(capsys):
    """`tunesmith --help` describes the tool, not how cli.py is organised."""
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "No logic lives here" not in out and "parse arguments" not in out
    assert "optimiz" in out.lower() and "run" in out


def test_version_flag_prints_the_package_version():
    """`tunesmith --version` prints `tunesmith X.Y.Z` and exits 0 (as the console script)."""
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from generator.cli import main; sys.exit(main())", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"tunesmith {__version__}"


def test_evaluate_help_names_every_task_entry_kind(capsys):
    """`evaluate --help`: --tasks takes the same entries as a campaign's [tasks] train."""
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for kind in ("hub:APP/GPU", "problem:NAME", "live:NAME", "cache file", "problem.toml", "benchmark-hub directory"):
        assert kind in out, kind


@pytest.mark.parametrize("command", ["hpo", "resume"])
def test_unwritable_run_dir_hint_fits_the_command(tmp_path, command):
    """hpo and resume have no --run-dir: their refusal must not suggest it; run's may."""
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(TunesmithError) as err:
        with run_lock(blocker / "run", command, shared=command == "hpo"):
            pass
    assert "--run-dir" not in str(err.value) and "output.run_dir" not in str(err.value)
    assert f"tunesmith {command}" in str(err.value) and "is a file" in str(err.value)
    with pytest.raises(TunesmithError, match="--run-dir"):
        with run_lock(blocker / "run", "run"):
            pass


def test_every_subcommand_with_a_progress_bar_takes_no_progress():
    """`run`, `resume` and `bench` take --no-progress; `hpo` took only --quiet, so the flag a user
    had just used on `run` was refused there ('unrecognized arguments: --no-progress')."""
    from generator.cli import _build_parser

    parser = _build_parser()
    for argv in (["run", "c.toml"], ["resume", "RUN"], ["bench", "--tasks", "t", "--strategies", "s"], ["hpo", "RUN"]):
        args = parser.parse_args([*argv, "--no-progress"])
        assert getattr(args, "no_progress", None) or getattr(args, "quiet", None), argv
    assert parser.parse_args(["hpo", "RUN", "--quiet"]).quiet  # the older spelling still works
