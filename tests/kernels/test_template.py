"""`tunesmith template`: hand-written (labelled) replies replayed through the LLM client, the whole pipeline
on a naive C matmul (check in the walls, fix feedback, problem written, space measured, tuned), and bad input."""

import json
import os

import numpy as np
import pytest
from support.paths import ROOT

from generator.cli import main
from generator.kernels.template import TemplateError, load_kernel_spec, parse_template, sample_configs
from generator.live.kernel import cpu_name, device_label
from generator.llm.records import read_exchanges
from generator.tasks.problems import ProblemError, load_problem, load_problem_tasks

CPU = device_label(cpu_name())  # this machine's processor as a cache label, e.g. CPU_Intel_Xeon_Processor

KERNEL = ROOT / "tests" / "data" / "byok" / "kernels" / "matmul_naive_c"
HAND = ROOT / "tests" / "data" / "byok" / "replies" / "hand_matmul_naive_c"
needs_gpp = pytest.mark.skipif(not os.path.exists("/usr/bin/g++"), reason="needs g++")


def _reply(n: int) -> str:
    return (HAND / f"a{n}.md").read_text()


def test_hand_written_recording_says_so():
    meta = json.loads((HAND / "config.json").read_text())
    assert meta["written_by"] == "hand"
    assert {ex.model for ex in read_exchanges(HAND)} == {"hand-written"}


def test_reply_parses_into_a_space_with_restrictions():
    t = parse_template(_reply(2), load_kernel_spec(KERNEL))
    assert list(t.tune_params) == ["tile_i", "tile_j", "loop_order", "unroll_k"]
    assert t.size == 20 and all(c[0] * c[1] <= 256 for c in t.configs)  # tile_i=32 x tile_j=16 restricted away
    picks = sample_configs(t, 6)
    assert picks[0] == t.configs[0] and picks[1] == t.configs[-1] and len(set(picks)) == 6


@pytest.mark.parametrize(
    "edit, says",
    [
        (lambda r: r.replace("```toml", "```text"), "```toml block"),
        (
            lambda r: r.replace(
                'restrictions = ["tile_i * tile_j <= 256"]', "restrictions = [\"__import__('os').system('x') or 1\"]"
            ),
            "Call",
        ),
        (
            lambda r: r.replace('restrictions = ["tile_i * tile_j <= 256"]', 'restrictions = ["tile_k < 4"]'),
            "not a parameter",
        ),
        (lambda r: r.replace("unroll_k = [1, 4]", "unroll_k = [1.5, 4]"), "distinct integers"),
        (lambda r: r.replace("tile_i = [8, 16, 32]", '"bad name" = [1]'), "not a C identifier"),
        (
            lambda r: r.replace("unroll_k = [1, 4]", f"unroll_k = {list(range(1, 33))}\nmore = {list(range(1, 30))}"),
            "at most",
        ),
        (lambda r: r.replace("matmul_naive(", "other("), "keep its name"),
    ],
)
def test_a_bad_reply_is_refused_with_words_the_llm_can_act_on(edit, says):
    with pytest.raises(TemplateError, match=says.replace("(", r"\(").replace("`", ".")):
        parse_template(edit(_reply(2)), load_kernel_spec(KERNEL))


def test_a_spec_that_is_already_tunable_is_refused(capsys, tmp_path):
    code = main(["template", str(ROOT / "problems" / "matmul_c"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code != 0 and "already has [tune_params]" in err and "cache build" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_a_spec_without_reference_is_refused(tmp_path):
    spec = tmp_path / "k"
    spec.mkdir()
    (spec / "matmul.cpp").write_text((KERNEL / "matmul.cpp").read_text())
    (spec / "problem.toml").write_text(
        (KERNEL / "problem.toml").read_text().replace('reference = "reference:matmul"\n', "")
    )
    with pytest.raises(ProblemError, match="no 'reference'"):
        load_kernel_spec(spec)


@needs_gpp
def test_whole_pipeline_on_a_naive_c_matmul(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["template", str(KERNEL), "--out", str(out), "--model", f"replay/{HAND}", "--fevals", "6"])
    printed = capsys.readouterr().out
    assert code == 0
    run = json.loads((out / "template_run.json").read_text())
    # labelled wherever the replies show: the run record, every attempt line printed
    assert run["replies"] == "hand-written (not an LLM)"
    assert printed.count("replies: hand-written (not an LLM)") == 2
    first, second = run["attempts"]
    # attempt 1 drops k iterations when unroll_k=5 does not divide N=96: the extreme configuration catches it
    assert (
        not first["accepted"]
        and "unroll_k=5" in first["feedback"]
        and "differs from the reference" in first["feedback"]
    )
    assert second["operator"] == "fix" and second["accepted"]
    # the fix prompt carried the check's feedback to the model
    exchanges = read_exchanges(out)
    assert len(exchanges) == 2 and first["feedback"] in exchanges[1].messages[1]["content"]
    # a problem every command takes as is: it loads, and its measured cache is a cached task
    problem = load_problem(run["problem"])
    task = load_problem_tasks(problem.path, gpus=[CPU])[0]
    assert task.name == f"matmul_naive_c_template/{CPU}" and len(task.space.valid) == 20
    values = task.key.values[~task.key.failed]
    assert values.size == 20 and (values > 0).all()
    tuning = run["tuning"]
    assert tuning["optimizer"] == "recommended" and tuning["fevals"] == 6
    assert tuning["best_ms"] >= np.nanmin(task.key.values)  # found inside the measured space
    # the speed-up comes from alternate timings of the original and the tuned configuration on the same input
    assert set(tuning["best_config"]) == {"tile_i", "tile_j", "loop_order", "unroll_k"}
    assert tuning["speedup"] == pytest.approx(run["original_ms"] / tuning["tuned_config_ms"])
    assert run["original_ms"] > 0 and tuning["tuned_config_ms"] > 0
    assert run["protections"]["held"]["syscall_filter"]


@needs_gpp
def test_space_measurement_stores_wrong_configurations_as_failed_checking_a_probe(tmp_path, monkeypatch):
    import generator.kernels.check as check

    monkeypatch.setattr(check, "PROBE", 500)  # 96x96 outputs: probe 500 of 9,216 elements, as for a large output
    spec = load_kernel_spec(KERNEL)
    template = parse_template(_reply(1), spec)  # unroll_k=5 skips the last k of 96
    doc, device = check.measure_space(spec, template, tmp_path / "caches")
    failed = {k for k, e in doc["cache"].items() if e.get("verification") == "failed"}
    assert device == CPU and (tmp_path / "caches" / f"{CPU}.json.gz").is_file()
    assert failed == {",".join(map(str, c)) for c in template.configs if c[2] == 5} and len(failed) == 5
    assert doc["tunesmith"]["verification_failures"] == 5 and doc["tunesmith"]["walled"]


@needs_gpp
def test_a_template_that_under_reports_its_time_is_rejected():
    from generator.kernels.check import check_template

    spec = load_kernel_spec(KERNEL)
    # correct output, but it claims a thousandth of the time it took
    reply = _reply(2).replace(
        "return std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();",
        "for (volatile int w = 0; w < 3000000; w++) {}\n    return 0.001f * std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();",
    )
    check = check_template(spec, parse_template(reply, spec), sample=2)
    assert not check.ok and "returns" in check.feedback and "as its time but the call took" in check.feedback


def test_template_without_out_says_what_to_add(capsys):
    code = main(["template", str(KERNEL)])
    err = capsys.readouterr().err
    assert code != 0 and "needs --out DIR" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "model, says",
    [
        (
            "synth/components",
            "--model synth/components: the offline synthesizer writes optimizers, not kernel templates",
        ),
        ("local/qwen2.5-coder-1.5b", "is not installed"),
        ("openai/gpt-4o-mini", "OPENAI_API_KEY is not set"),
        (None, "needs --model MODEL"),
    ],
)
def test_a_model_that_cannot_write_templates_is_refused_in_one_line_writing_nothing(
    model, says, tmp_path, capsys, monkeypatch
):
    """Issue 40, item 5: a model not installed or a missing key once left OUT/config.json and exchanges.jsonl
    behind, and the synthesizer (then the default) burnt three attempts before exiting 1."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("TUNESMITH_MODEL_DIR", str(tmp_path / "no-models"))
    out = tmp_path / "o"
    code = main(["template", str(KERNEL), "--out", str(out)] + (["--model", model] if model else []))
    err = capsys.readouterr().err.strip()
    assert code == 2 and says in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def test_the_rejection_asks_for_the_block_the_prompt_asks_for():
    """Issue 40, item 5: the prompts ask for a ```cpp block, the rejection asked for a ```c block."""
    from generator.kernels.templating import messages_for

    prompt = messages_for(load_kernel_spec(KERNEL), "new")[1]["content"]
    with pytest.raises(TemplateError) as refused:
        parse_template("no code here", load_kernel_spec(KERNEL))
    assert "```cpp block" in prompt and "```cpp block" in str(refused.value)


def test_a_machine_without_the_compiler_is_told_before_any_template(tmp_path, capsys, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: None)  # as on a machine without g++
    code = main(["template", str(KERNEL), "--out", str(tmp_path / "o"), "--model", f"replay/{HAND}"])
    err = capsys.readouterr().err
    assert code != 0 and "needs g++" in err and not (tmp_path / "o").exists()


@needs_gpp
def test_a_run_replays_its_own_recording_and_keeps_the_hand_written_label(tmp_path, capsys):
    first, second = tmp_path / "first", tmp_path / "second"
    assert main(["template", str(KERNEL), "--out", str(first), "--model", f"replay/{HAND}", "--attempts", "1"]) == 1
    assert json.loads((first / "config.json").read_text())["written_by"] == "hand"
    assert main(["template", str(KERNEL), "--out", str(second), "--model", f"replay/{first}", "--attempts", "1"]) == 1
    runs = [json.loads((d / "template_run.json").read_text()) for d in (first, second)]
    assert runs[0]["attempts"][0]["feedback"] == runs[1]["attempts"][0]["feedback"] != ""
    assert runs[1]["replies"] == "hand-written (not an LLM)"  # a recording of a recording is still hand-written
    assert "no template passed" in capsys.readouterr().err


@pytest.mark.parametrize(
    "kernel, replies, n",
    [("matmul_naive_cuda", "hand_matmul_naive_cuda", 243), ("transpose_naive_cuda", "hand_transpose_naive_cuda", 132)],
)
def test_cuda_kernels_for_the_gpu_machine_parse_and_write_problems(kernel, replies, n, tmp_path):
    from generator.kernels.template import ORIGINAL_PARAM, write_problem

    spec = load_kernel_spec(ROOT / "tests" / "data" / "byok" / "kernels" / kernel)
    assert spec.problem.lang == "cupy" and ORIGINAL_PARAM not in spec.problem.tune_params  # its launch as it is
    recording = ROOT / "tests" / "data" / "byok" / "replies" / replies
    assert json.loads((recording / "config.json").read_text())["written_by"] == "hand"
    template = parse_template(read_exchanges(recording)[0].reply, spec)
    assert template.size == n
    problem = load_problem(write_problem(spec, template, tmp_path / kernel, f"{kernel}_template"))
    assert problem.lang == "cupy" and problem.grid_div["grid_div_y"] == template.grid_div["grid_div_y"]
    assert problem.tune_params == template.tune_params and problem.caches_dir == tmp_path / kernel / "caches"


def test_a_real_local_models_template_replays_through_the_whole_pipeline(tmp_path, capsys):
    """qwen2.5-coder-1.5b's real reply (recorded 2026-11-25): it kept the kernel and copied the prompt's example
    parameters; the checks accept it (every configuration computes the right answer), and tuning runs."""
    recording = ROOT / "tests" / "data" / "byok" / "replies" / "local_qwen15_matmul_naive_c"
    assert json.loads((recording / "config.json").read_text())["written_by"] == "llm"
    out = tmp_path / "out"
    assert main(["template", str(KERNEL), "--out", str(out), "--model", f"replay/{recording}", "--attempts", "1"]) == 0
    run = json.loads((out / "template_run.json").read_text())
    assert run["replies"] == "replayed from local/qwen2.5-coder-1.5b" and run["attempts"][0]["accepted"]
    problem = load_problem(out / "matmul_naive_c_template" / "problem.toml")
    assert set(problem.tune_params) == {"tile_i", "unroll_taps"}  # the example's names, copied
    assert "speed-up" in capsys.readouterr().out
