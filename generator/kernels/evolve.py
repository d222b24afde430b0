"""Kernel campaigns: an evolutionary loop whose candidates are kernel templates instead of optimizers.

A campaign file (TOML, a `[kernel_campaign]` table) names the kernel, the LLM, the population and
the tuning budget. Generation 0 asks for `population` new templates; each later generation asks
for `offspring` refinements of parents chosen from the archive (one hypothesis each, stated in the
reply). A proposal that fails its check gets one `fix`. Fitness: the best time that the best shipped
optimizer finds with `fevals` evaluations on the template's space, measured in the walls; its score
is the speed-up over the original kernel (higher is better), so the archive's `best`, `lineage` and
`show` read a kernel run as they read an optimizer run. Survivors: the best `population` (mu + lambda).

The run directory is a campaign's (`generator.archive`): candidates.jsonl, exchanges.jsonl,
generations.jsonl, status.json, code/<id>.cpp or .cu. Resume: run the same file again; candidates
already in the archive are kept, and recorded LLM answers are reused, never asked again. Replay:
`model = "replay/RUN_DIR"`. Caps: `[llm.caps]`, as in campaigns.
"""

from __future__ import annotations

import time
import tomllib
from pathlib import Path

from generator.archive import Archive, Candidate
from generator.config.kernel import KernelCampaignConfig, parse_kernel_campaign
from generator.kernels.check import cache_summary, check_template, measure_original, measure_space
from generator.kernels.template import (
    KernelSpec,
    Template,
    TemplateError,
    load_kernel_spec,
    parse_template,
    write_problem,
)
from generator.kernels.templating import check_template_model, headline, messages_for, replies_label
from generator.kernels.tuning import tune_problem
from generator.live.kernel import require_device
from generator.llm.client import CapReached, LLMClient, StopCampaign


def is_kernel_campaign(path) -> bool:
    """Whether a path is a kernel campaign file (a TOML file with a [kernel_campaign] table)."""
    path = Path(path)
    try:
        return path.is_file() and path.suffix == ".toml" and "kernel_campaign" in tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return False


def load_kernel_campaign(path) -> KernelCampaignConfig:
    """Read and check a kernel campaign file; its paths (kernel, run_dir, a replay recording) made absolute."""
    path = Path(path)
    campaign = parse_kernel_campaign(tomllib.loads(path.read_text()).get("kernel_campaign", {}), str(path))
    base = path.resolve().parent
    llm = campaign.llm
    if llm.model.startswith("replay/") and not Path(llm.model[7:]).is_absolute():  # a recording beside the file
        llm = llm.model_copy(update={"model": f"replay/{base / llm.model[7:]}"})
    return campaign.model_copy(
        update={"kernel": str(base / campaign.kernel), "run_dir": str(base / campaign.run_dir), "llm": llm}
    )


def refine_messages(spec: KernelSpec, parent: Candidate, source: str) -> list[dict]:
    """The refine prompt: the parent template, what it measured, one hypothesis to test."""
    f = parent.fitness or {}
    previous = (
        f"```\n{source}\n```\n\nIts parameters: {f.get('tune_params')}; restrictions: {f.get('restrictions')}.\n"
        f"Its hypothesis: {parent.description}\nMeasured: the original kernel {f.get('original_ms', 0):.4g} ms; "
        f"this template's best configuration {f.get('optimum_ms', 0):.4g} ms "
        f"({f.get('best_config')}); tuned with {f.get('fevals')} evaluations: {f.get('best_ms', 0):.4g} ms."
    )
    return messages_for(spec, "refine", previous=previous)


class _Loop:
    """One kernel campaign run: proposals, checks, evaluations, the archive."""

    def __init__(self, campaign: KernelCampaignConfig, log):
        self.c, self.log = campaign, log
        self.spec = load_kernel_spec(campaign.kernel)
        require_device(self.spec.problem)
        check_template_model(campaign.llm, "[kernel_campaign.llm] model =")  # before the run directory is made
        if Archive.exists(campaign.run_dir):
            self.archive = Archive.open(campaign.run_dir)
            self.archive.prepare_append()
        else:
            self.archive = Archive.create(
                campaign.run_dir,
                {
                    "kind": "kernel_campaign",
                    "kernel": str(campaign.kernel),
                    "model": campaign.llm.model,
                    "replies": replies_label(campaign.llm.model),
                },
            )
        self.done = {c.id: c for c in self.archive.candidates()}
        recorded = self.archive.exchanges()
        self.client = LLMClient(
            campaign.llm, on_exchange=self.archive.append_exchange, recorded=recorded, first_id=len(recorded) + 1
        )
        self.replies = replies_label(campaign.llm.model)
        self.next_id = 1
        self.original_ms: float | None = None

    def new_id(self) -> str:
        cid = f"c{self.next_id:04d}"
        self.next_id += 1
        return cid

    def propose(self, generation: int, operator: str, parents: list[Candidate], messages: list[dict]) -> Candidate:
        """Ask, check, and on failure ask once for a fix; the candidate as archived (evaluated when it passed)."""
        cid = self.new_id()
        if cid in self.done:  # resumed: kept as it was
            return self.done[cid]
        t0 = time.monotonic()
        ex = self.client.complete(messages, purpose=f"kernel:{operator}", ref=f"kernel/{cid}")
        cand = Candidate(cid, generation, operator, [p.id for p in parents], exchange_id=ex.id, created=time.time())
        try:
            template = parse_template(ex.reply, self.spec)
            cand.description = template.hypothesis
            check = check_template(self.spec, template, self.c.sample)
            if not check.ok:
                cand.error = {"kind": "check", "message": check.feedback}
            else:
                cand.fitness = self.evaluate(cid, template)
            cand.code_path = self._write_code(cid, template.source)
        except TemplateError as exc:
            cand.error = {"kind": "template", "message": str(exc)}
        cand.timings = {"total_s": round(time.monotonic() - t0, 2)}
        self.archive.append_candidate(cand)
        self.done[cid] = cand
        verdict = f"speed-up {cand.score:.2f}x" if cand.ok else f"failed: {headline(cand.error['message'])}"
        self.log(f"{cid} gen {generation} {operator} {cand.parent_ids or ''} (replies: {self.replies}): {verdict}")
        return cand

    def _write_code(self, cid: str, source: str) -> str:
        rel = f"code/{cid}{self.spec.problem.kernel_file.suffix}"
        (self.archive.run_dir / rel).write_text(source)
        return rel

    def evaluate(self, cid: str, template: Template) -> dict:
        """Fitness: the template's space measured in the walls, tuned with a fixed budget by the best shipped optimizer."""
        if self.original_ms is None:
            self.original_ms = measure_original(self.spec)
        problem = write_problem(
            self.spec, template, self.archive.run_dir / "problems" / cid, f"{self.spec.problem.name}_{cid}"
        )
        doc, device = measure_space(self.spec, template, problem.parent / "caches")
        tuned = tune_problem(problem, self.original_ms, fevals=self.c.fevals, seed=self.c.seed, device=device)
        return {
            "score": tuned["speedup"],
            "best_ms": tuned["best_ms"],
            "best_config": tuned["best_config"],
            "optimum_ms": cache_summary(doc)["best_ms"],
            "original_ms": self.original_ms,
            "fevals": tuned["fevals"],
            "optimizer": tuned["optimizer"],
            "space": tuned["space"],
            "device": device,
            "problem": str(problem),
            "tune_params": template.tune_params,
            "restrictions": list(template.restrictions),
        }

    def with_fix(self, generation: int, cand: Candidate) -> Candidate:
        """A candidate that failed its check gets one fix, its parent being the failed one."""
        if cand.ok or cand.error is None or cand.code_path is None:
            return cand
        previous = (self.archive.run_dir / cand.code_path).read_text()
        return self.propose(
            generation, "fix", [cand], messages_for(self.spec, "fix", previous=previous, feedback=cand.error["message"])
        )

    def run(self) -> Archive:
        population: list[Candidate] = []
        state, reason = "finished", ""
        try:
            for g in range(self.c.generations + 1):
                born = []
                for _ in range(self.c.population if g == 0 else self.c.offspring):
                    if g == 0:
                        cand = self.propose(0, "new", [], messages_for(self.spec, "new"))
                    else:
                        parent = population[len(born) % len(population)]  # the best first, then the next
                        cand = self.propose(
                            g,
                            "refine",
                            [parent],
                            refine_messages(self.spec, parent, (self.archive.run_dir / parent.code_path).read_text()),
                        )
                    born.append(self.with_fix(g, cand))
                population = sorted([c for c in population + born if c.ok], key=lambda c: -c.score)[: self.c.population]
                self.archive.append_generation(g, [c.id for c in population])
                self._status("running", population)
                if not population:
                    state, reason = "stopped", "no template passed its checks"
                    break
        except (CapReached, StopCampaign) as exc:
            state, reason = "stopped", str(exc)
        self._status(state, population, reason)
        return self.archive

    def _status(self, state: str, population: list[Candidate], reason: str = "") -> None:
        u = self.client.usage
        self.archive.write_status(
            {
                "state": state,
                "reason": reason,
                "candidates": len(self.done),
                "usage": u.to_dict(),
                "best": population[0].id if population else None,
                "replies": self.replies,
            }
        )


def run_kernel_campaign(path, log=print) -> Archive:
    """Run (or resume) a kernel campaign file; returns its archive."""
    return _Loop(load_kernel_campaign(path), log).run()
