"""Kernel campaigns: candidates are kernel templates (new, refine with a stated hypothesis, fix), fitness the
speed-up the best shipped optimizer finds with a fixed budget; archive, lineage, resume. Replies: hand-written
(labelled), replayed."""

import os
from pathlib import Path

import pytest
from support.paths import ROOT

from generator.archive import Archive
from generator.cli import main
from generator.config.kernel import KernelCampaignError
from generator.kernels.evolve import load_kernel_campaign

BYOK = ROOT / "tests" / "data" / "byok"


def _campaign(tmp_path: Path, generations: int) -> Path:
    text = (BYOK / "campaign_matmul_naive_c.toml").read_text()
    text = text.replace('kernel = "kernels/matmul_naive_c"', f'kernel = "{BYOK / "kernels" / "matmul_naive_c"}"')
    text = text.replace('run_dir = "../../results/kernel_campaign_matmul_naive_c"', f'run_dir = "{tmp_path / "run"}"')
    text = text.replace('"replay/replies/', f'"replay/{BYOK}/replies/').replace(
        "generations = 1", f"generations = {generations}"
    )
    path = tmp_path / "kc.toml"
    path.write_text(text)
    return path


@pytest.mark.skipif(not os.path.exists("/usr/bin/g++"), reason="needs g++")
def test_kernel_campaign_new_refine_fix_and_resume(tmp_path, capsys):
    assert main(["template", str(_campaign(tmp_path, 0))]) == 0  # generation 0 only: as if stopped there
    first = Archive.open(tmp_path / "run").candidates()
    assert [c.id for c in first] == ["c0001"] and first[0].ok
    assert main(["template", str(_campaign(tmp_path, 1))]) == 0  # resumed with one more generation
    archive = Archive.open(tmp_path / "run")
    cands = {c.id: c for c in archive.candidates()}
    assert list(cands) == ["c0001", "c0002", "c0003"]  # c0001 kept, not evaluated again
    assert cands["c0001"].fitness == first[0].fitness
    refine, fix = cands["c0002"], cands["c0003"]
    assert refine.operator == "refine" and refine.parent_ids == ["c0001"] and "vectorises" in refine.description
    assert refine.error["kind"] == "check" and "does not compile" in refine.error["message"]
    assert fix.operator == "fix" and fix.parent_ids == ["c0002"] and fix.ok
    assert fix.fitness["fevals"] == 4 and fix.fitness["optimizer"] == "recommended"
    assert fix.fitness["best_ms"] >= fix.fitness["optimum_ms"] > 0
    assert fix.score == pytest.approx(fix.fitness["original_ms"] / fix.fitness["best_ms"])
    assert (tmp_path / "run" / fix.code_path).read_text().startswith("#include <chrono>")
    status = archive.status()
    assert status["state"] == "finished" and status["replies"] == "hand-written (not an LLM)"
    assert status["best"] == max((c for c in cands.values() if c.ok), key=lambda c: c.score).id
    # the fix was asked with the compiler's message; exchanges are recorded once each, resume included
    exchanges = archive.exchanges()
    assert [x.ref for x in exchanges] == ["kernel/c0001", "kernel/c0002", "kernel/c0003"]
    assert "does not compile" in exchanges[2].messages[1]["content"]
    capsys.readouterr()
    assert main(["lineage", str(tmp_path / "run")]) == 0
    tree = capsys.readouterr().out
    assert "c0003" in tree and "failed:check" in tree


def test_a_bad_kernel_campaign_file_is_refused_in_one_line(tmp_path):
    path = tmp_path / "kc.toml"
    path.write_text('[kernel_campaign]\nkernel = "k"\nrun_dir = "r"\npopulation = 0\n')
    with pytest.raises(KernelCampaignError, match="population must be"):
        load_kernel_campaign(path)
    path.write_text('[kernel_campaign]\nkernel = "k"\nrun_dir = "r"\nmutation = 2\n')
    with pytest.raises(KernelCampaignError, match="unknown keys"):
        load_kernel_campaign(path)
