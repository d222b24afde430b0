"""Progress bars (issue 40, item 13): a resumed campaign's bar starts at the candidates already recorded, the
'continuing' line comes before the bars, and bars are drawn only on a terminal (a log file got one
carriage-return update per candidate); the bench bar shows the start of a strategy's name."""

from __future__ import annotations

import io
import sys

import pytest
from support.campaign_fakes import fake_evaluate

from generator.campaign.progress import CampaignProgress
from generator.campaign.run import resume, run_campaign


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _campaign(path, run_dir, budget: int):
    path.write_text(f'''name = "progress"
[llm]
model = "synth/components"
seed = 1
[evolution]
n_parents = 2
n_offspring = 2
budget = {budget}
seed = 1
[tasks]
train = ["problem:gemm/H200"]
[evaluation]
repeats = 1
[output]
run_dir = "{run_dir}"
''')
    return path


def test_resumed_bar_starts_at_the_recorded_candidates_after_the_continuing_line(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run_campaign(_campaign(tmp_path / "c.toml", run, 4), progress=False, evaluate=fake_evaluate)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    bars = []
    real = CampaignProgress.__init__

    def watched(self, enabled, budget, recorded=()):
        bars.append(terminal.getvalue())  # what was written before the bars were drawn
        real(self, enabled, budget, recorded)
        bars.append(self)

    monkeypatch.setattr(CampaignProgress, "__init__", watched)
    resume(run, budget=6, progress=True, evaluate=fake_evaluate)
    before, progress = bars
    assert f"continuing {run}: 4 candidates recorded" in before
    assert progress.candidates.initial == 4 and progress.candidates.n == 6  # 2 made now, not 6
    assert "candidates:  67%" in terminal.getvalue()  # from 4 of 6 on, never 0 of 6


def test_bars_only_on_a_terminal(monkeypatch):
    log = io.StringIO()  # `tunesmith run ... 2> run.log`
    monkeypatch.setattr(sys, "stderr", log)
    bars = CampaignProgress(True, 10)
    bars.recorded_one("c0001", 0.5)
    bars.close()
    assert log.getvalue() == ""
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    bars = CampaignProgress(True, 10)
    bars.recorded_one("c0001", 0.5)
    bars.close()
    assert "candidates" in terminal.getvalue() and "\r" in terminal.getvalue()
    monkeypatch.setattr(sys, "stderr", terminal := _Terminal())
    CampaignProgress(False, 10).close()  # --no-progress
    assert terminal.getvalue() == ""


@pytest.mark.parametrize(
    "label, shown",
    [
        ("generated_algorithms/lcb_wide_switching_nearest.py", "lcb_wide_switching_nearest.py"),
        ("kernel_tuner:simulated_annealing", "kernel_tuner:simulated_annealing"),
        (
            "/a/very/long/path/to/screened_memetic_late_acceptance_with_restarts.py",
            "screened_memetic_late_acceptance_with_r…",
        ),
    ],
)
def test_bench_bar_shows_the_start_of_a_strategy_name(label, shown):
    from generator.bench.command import bar_label

    assert bar_label(label) == shown
