"""`tunesmith template`: ask for a template, check it in the walls, feed failures back, write the problem, tune it.

The LLM is reached through the project's client (`generator.llm.client`), so caps, retries, local
models and record/replay work as in campaigns: every exchange is appended to OUT/exchanges.jsonl
beside a config.json, and `--model replay/OUT` serves them again. A recording whose config.json says
`"written_by": "hand"` holds replies a person wrote to show the pipeline; every output that shows
them says so.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from generator.config import ConfigError, LLMConfig
from generator.config.stored import StoredRun
from generator.errors import TunesmithError, clipped, printable
from generator.kernels.check import cache_summary, check_template, measure_original, measure_space, time_configuration
from generator.kernels.template import KernelSpec, TemplateError, load_kernel_spec, parse_template, write_problem
from generator.kernels.tuning import tune_problem
from generator.live.kernel import require_device
from generator.llm.client import LLMClient
from generator.llm.prompts import template_environment
from generator.llm.records import EXCHANGES_FILE
from generator.tasks.problems import load_problem


@dataclass
class Attempt:
    """One proposal: what the check said about it."""

    n: int
    operator: str  # new | fix
    accepted: bool
    feedback: str = ""
    hypothesis: str = ""
    configurations: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


@dataclass
class TemplateRun:
    """What `tunesmith template` did, for the terminal and for benchmarks/results."""

    kernel: str
    model: str
    replies: str  # who wrote the replies: the model, or "hand-written (not an LLM)"
    attempts: list[Attempt] = field(default_factory=list)
    problem: str | None = None  # the written problem.toml
    original_ms: float | None = None
    space: dict = field(default_factory=dict)
    tuning: dict = field(default_factory=dict)
    protections: dict = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return any(a.accepted for a in self.attempts)

    def to_dict(self) -> dict:
        return {**asdict(self), "accepted": self.accepted}


def replies_label(model: str) -> str:
    """Who wrote the replies a model string serves: a recording made by hand says so in its config.json."""
    if model.startswith("replay/"):
        try:
            stored = StoredRun.open(model.split("/", 1)[1])
            record = stored.config
        except ConfigError:  # no recording there (yet), or one this Tunesmith cannot read: say no more
            return "replayed from a recording"
        if getattr(record, "written_by", None) == "hand":
            return "hand-written (not an LLM)"
        # a campaign's run directory names its model in [llm]; a recording or kernel run names it itself
        return f"replayed from {(stored.kind != 'campaign' and record.model) or 'a recording'}"
    return model


def messages_for(
    spec: KernelSpec, operator: str, previous: str = "", feedback: str = "", template_dir: str | None = None
) -> list[dict]:
    """The prompt of one proposal (jinja2: prompts/template_*.j2)."""
    env = template_environment(template_dir)
    p = spec.problem
    context = dict(
        kernel=spec.source,
        name=p.kernel_name,
        description=p.description,
        size=list(p.problem_size),
        defines=p.defines,
        arguments=[a.name for a in p.arguments],
        outputs=[p.arguments[i].name for i in spec.outputs],
        previous=previous,
        feedback=feedback,
    )
    return [
        {"role": "system", "content": env.get_template("template_role.j2").render(**context)},
        {"role": "user", "content": env.get_template(f"template_{operator}.j2").render(**context)},
    ]


def propose_and_check(spec: KernelSpec, client: LLMClient, run: TemplateRun, attempts: int, sample: int, log=print):
    """Ask for a template, check it, feed failures back, until one passes or the attempts are spent."""
    previous, feedback = "", ""
    for n in range(1, attempts + 1):
        operator = "fix" if feedback else "new"
        t0 = time.monotonic()
        ex = client.complete(
            messages_for(spec, operator, previous, feedback),
            purpose=f"template:{operator}",
            ref=f"template/{spec.problem.name}/a{n}",
        )
        att = Attempt(n, operator, False, prompt_tokens=ex.prompt_tokens, completion_tokens=ex.completion_tokens)
        run.attempts.append(att)
        try:
            template = parse_template(ex.reply, spec)
            att.hypothesis, att.configurations = template.hypothesis, template.size
            check = check_template(spec, template, sample)
            run.protections = check.protections or run.protections
            att.accepted, att.feedback = check.ok, check.feedback
        except TemplateError as exc:
            template, att.feedback = None, str(exc)
        att.seconds = round(time.monotonic() - t0, 2)
        verdict = "accepted" if att.accepted else "rejected: " + headline(att.feedback)
        log(f"attempt {n} ({operator}, replies: {run.replies}): {att.configurations} configurations; {verdict}")
        if att.accepted:
            return template
        previous, feedback = ex.reply or "", att.feedback
    return None


MODELS = "local/NAME (`tunesmith llm list`), replay/DIR or a litellm model string such as openai/gpt-4o-mini"


def check_template_model(settings: LLMConfig, what: str = "--model") -> None:
    """Refuse, before anything is written, a model that cannot write templates: the offline synthesizer
    (it writes optimizers only), a local model not installed, a hosted model without its key."""
    from generator.llm.client import check_model

    if settings.model.startswith("synth/"):
        raise TunesmithError(
            f"{what} {settings.model}: the offline synthesizer writes optimizers, not kernel templates; give {MODELS}"
        )
    try:
        check_model(settings)
    except TunesmithError as exc:
        raise TunesmithError(
            f"{what} {settings.model}: {str(exc).removeprefix(f'llm.model = {settings.model!r}: ')}"
        ) from None


def headline(feedback: str, width: int = 240) -> str:
    """The feedback's first sentence for the terminal, whole; a first line that ends in a colon (the
    compiler's message follows) takes the first error line after it, cut at a word if need be."""
    lines = [line.strip() for line in printable(feedback).splitlines() if line.strip()]
    if not lines:
        return "(no reason given)"
    first = lines[0]
    if first.endswith(":") and len(lines) > 1:
        detail = next((line for line in lines[1:] if "error" in line.lower()), lines[1])
        return first + " " + clipped(detail, max(60, width - len(first)))
    return first


def template_kernel(
    spec_path,
    out_dir,
    model: str | None,
    attempts: int = 3,
    sample: int = 6,
    fevals: int | None = None,
    seed: int = 0,
    rounds: int = 3,
    log=print,
) -> TemplateRun:
    """The whole pipeline: template, check, write the problem, measure its space in the walls, tune, compare."""
    spec = load_kernel_spec(spec_path)
    require_device(spec.problem)  # no compiler or no GPU: say so now, not as a template's fault
    if not model:
        raise TunesmithError(f"tunesmith template KERNEL needs --model MODEL: {MODELS}")
    out = Path(out_dir)
    if model.startswith("replay/") and Path(model.split("/", 1)[1]).resolve() == out.resolve():
        raise TunesmithError(f"--out {out} is the recording being replayed; give another output folder")
    settings = LLMConfig(model=model, temperature=0.2)
    check_template_model(settings)  # nothing is written before the model is known to answer
    exchanges = out / EXCHANGES_FILE

    def record(ex):
        with open(exchanges, "a") as fh:
            fh.write(json.dumps(ex.to_dict()) + "\n")

    client = LLMClient(settings, on_exchange=record)  # a replay reads its recording here, before out/ is touched
    out.mkdir(parents=True, exist_ok=True)
    run = TemplateRun(spec.problem.name, model, replies_label(model))
    (out / "config.json").write_text(
        json.dumps(
            {
                "kernel": str(spec.path),
                "model": model,
                "written_by": "hand" if run.replies.startswith("hand") else "llm",
                "replies": run.replies,
            },
            indent=1,
        )
    )
    exchanges.unlink(missing_ok=True)
    template = propose_and_check(spec, client, run, attempts, sample, log)
    if template is None:
        _save(run, out)
        return run
    name = f"{spec.problem.name}_template"
    problem = write_problem(spec, template, out / name, name)
    run.problem = str(problem)
    doc, device = measure_space(spec, template, problem.parent / "caches")
    run.space = {**cache_summary(doc), "device": device}
    first = measure_original(spec)
    run.tuning = tune_problem(problem, first, fevals=fevals, seed=seed, device=device)
    run.original_ms, tuned_ms = same_input_timings(spec, problem, run.tuning["best_config"], rounds)
    run.tuning.update(speedup=run.original_ms / tuned_ms, tuned_config_ms=tuned_ms)
    log(
        f"{name}: {run.space['configurations']} configurations measured in the walls, best {run.space['best_ms']:.4f} ms; "
        f"{run.tuning['optimizer']} with {run.tuning['fevals']} evaluations found {run.tuning['best_config']}; timed "
        f"{rounds} times each, alternately, on the same input (shortest): original {run.original_ms:.4f} ms, tuned "
        f"{tuned_ms:.4f} ms, speed-up {run.tuning['speedup']:.2f}x; problem: {problem}"
    )
    _save(run, out)
    return run


def same_input_timings(spec: KernelSpec, problem: Path, config: dict, rounds: int) -> tuple[float, float]:
    """Shortest times (ms) of the original kernel and of the template at `config`, timed alternately in the walls.

    On a busy machine a disturbed timing is several times the undisturbed one (2 shared cores: 5-15x), so
    the shortest of a few alternate rounds stands for each kernel, not one timing or a median."""
    p = load_problem(problem)
    grid_div = {k: v for k, v in p.grid_div.items() if v}
    original, tuned = [], []
    for _ in range(rounds):
        original.append(measure_original(spec, repeats=1))
        tuned.append(time_configuration(spec, p.kernel_source(), config, grid_div))
    return float(np.min(original)), float(np.min(tuned))


def _save(run: TemplateRun, out: Path) -> None:
    (out / "template_run.json").write_text(json.dumps(run.to_dict(), indent=1, default=str))
