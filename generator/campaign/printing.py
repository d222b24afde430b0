"""What a campaign prints: the end-of-campaign summary and `tunesmith status` (state, budget, leaderboard).

The state comes from the run lock first (is a process at work on the run now?), then from
status.json, so a run killed by -9 never reads as running and a run that just started never as
unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from generator.archive import Archive, Candidate
from generator.errors import clipped, printable
from generator.llm.records import Usage


@dataclass
class Summary:
    """How a campaign ended."""

    run_dir: Path
    state: str  # finished | stopped
    reason: str
    candidates: int
    budget: int
    usage: dict
    leaderboard: list[Candidate] = field(default_factory=list)
    best_file: Path | None = None
    model: str = ""
    validation: object = None  # final_choice.FinalChoice when the run has validation tasks
    sealed_test: object = None  # sealed_test.SealedTest once the run's test set was opened


def _leaderboard_lines(board: list[Candidate], k: int = 10) -> list[str]:
    if not board:
        return ["  (no working candidate yet)"]
    tasks = list(board[0].per_task)
    lines = [
        f"  {'rank':>4} {'id':6} {'score':>7} {'± SE':>6} {'runs':>5}  "
        + "  ".join(f"{t[:22]:>22}" for t in tasks)
        + "  operator  description"
    ]
    for rank, c in enumerate(board[:k], 1):
        per = "  ".join(
            f"{(c.per_task.get(t) if c.per_task.get(t) is not None else float('nan')):>22.3f}" for t in tasks
        )
        se = f"± {c.se:.3f}" if c.se is not None else "±   ?"  # '?': one repeat, or a run made before SE was kept
        lines.append(
            f"  {rank:>4} {c.id:6} {c.score:>7.3f} {se:>7} {c.runs:>5}  {per}  {c.operator:8}  "
            f"{clipped(printable(c.description, newlines=False), 60)}"
        )
    return lines


def _usage_line(usage: dict, model: str) -> str:
    # the offline synthesizer answers through the LLM path but is no LLM, and the report says so
    who = "offline synthesizer (no LLM)" if model.startswith("synth/") else f"LLM {model}"
    return (
        f"{who}: {usage.get('calls', 0)} calls, {usage.get('tokens', 0)} tokens "
        f"({usage.get('prompt_tokens', 0)} prompt + {usage.get('completion_tokens', 0)} completion), "
        f"{usage.get('cost_usd', 0.0):.4f} USD"
        + (
            f"; {usage['estimated_prompt_tokens']} of the prompt tokens are estimated (requests that timed out "
            "may still be billed)"
            if usage.get("estimated_prompt_tokens")
            else ""
        )
    )


P_REMINDER = (
    "P (the auto-tuning methodology's score, per task): 1 = finds the optimum at once, 0 = no better "
    "than random search, below 0 = worse; averaged over the task's time budget"
)


def format_summary(s: Summary) -> str:
    """The end-of-campaign report: state, leaderboard, best file, cost and tokens."""
    lines = [
        f"campaign {s.state}: {printable(s.reason, newlines=False)}",
        f"run directory: {s.run_dir}",
        f"candidates: {s.candidates} of {s.budget}",
        "leaderboard (mean P over training tasks):",
    ]
    lines += _leaderboard_lines(s.leaderboard)
    best = s.leaderboard[0] if s.leaderboard else None
    lines += _choice_lines(s.validation)
    winner = getattr(s.validation, "winner", None)
    if winner is not None:  # chosen on the validation tasks, not by the training leaderboard
        best = next((c for c in s.leaderboard if c.id == winner), None) or best
    from generator.campaign.sealed_test import format_test

    # the record comes with the summary: run_dir is the directory to show, which need not be the one read
    lines += format_test(s.sealed_test, best.id if best is not None else None)
    if best is None:
        lines.append("best candidate: none")
    else:  # its raw code is no Kernel Tuner strategy yet: `export` wraps it (tune(), provenance)
        se = f" ± {best.se:.3f}" if best.se is not None else ""
        lines.append(
            f"best candidate: {best.id}, P {best.score:.3f}{se} (its code: {s.best_file}; not yet a Kernel Tuner "
            "strategy, `tunesmith export` makes one)"
        )
    lines.append(_usage_line(s.usage, s.model))
    if s.state != "finished":
        lines.append(f"to continue: tunesmith resume {s.run_dir}")
    if best is not None:
        hpo = f"tunesmith hpo {s.run_dir} --id {best.id} --trials 30"
        export = f"tunesmith export {s.run_dir} --name my_optimizer --id {best.id}"
        width = max(len(hpo), len(export))
        lines += [
            "next:",
            f"  {hpo:{width}}  # tune its hyperparameters (Optuna)",
            f"  {export:{width}}  # -> generated_algorithms/my_optimizer.py, a Kernel Tuner strategy",
        ]
    lines.append(P_REMINDER)
    return "\n".join(lines)


def format_status(run_dir, k: int = 10) -> str:
    """`tunesmith status`: state, budget used, failures, leaderboard, LLM usage of a run directory."""
    archive = Archive.open(run_dir)
    cands = archive.candidates()
    status = archive.status()
    budget = status.get("budget") or archive.config.get("evolution", {}).get("budget")
    failed = [c for c in cands if c.error]
    kinds: dict[str, int] = {}
    for c in failed:
        kinds[c.error.get("kind", "?")] = kinds.get(c.error.get("kind", "?"), 0) + 1
    dupes = sum(1 for c in cands if c.duplicate_of)
    usage = Usage()
    for ex in archive.exchanges():
        usage.add(ex)
    lines = [
        f"run: {archive.run_dir} ({archive.config.get('name', '')})",
        _state_line(archive.run_dir, status),
        f"candidates: {len(cands)} {_of_budget(len(cands), budget)} generated, {len(failed)} failed"
        + (f" ({', '.join(f'{k}: {n}' for k, n in sorted(kinds.items()))})" if kinds else "")
        + f", {dupes} duplicates, {len(archive.generations())} generations done",
        _usage_line(usage.to_dict(), archive.config.get("llm", {}).get("model", "")),
        "leaderboard (mean P over training tasks):",
    ]
    lines += edit_lines(cands)
    board = archive.best(k)
    lines += _leaderboard_lines(board, k)
    from generator.campaign.final_choice import load_choice

    choice = load_choice(archive.run_dir) if archive.config.get("tasks", {}).get("validation") else None
    lines += _choice_lines(choice)
    from generator.campaign.sealed_test import format_test, load_test

    winner = choice.winner if choice is not None and choice.winner is not None else (board[0].id if board else None)
    lines += format_test(load_test(archive.run_dir), winner)
    if choice is not None and choice.winner is not None:
        lines.append(f"best candidate (validation winner): {archive.code_file(archive.candidate(choice.winner))}")
    elif board:
        lines.append(f"best candidate: {archive.code_file(board[0])}")
    from generator.campaign.diversity import format_diversity, run_diversity

    lines += format_diversity(run_diversity(archive.run_dir, cands, lambda c: _code_or_none(archive, c)))
    lines += search_lines(archive.generations())
    return "\n".join(lines)


def search_lines(generations: list[dict]) -> list[str]:
    """The niches and the bandit of the last generation record; none when they are off."""
    from generator.campaign.bandit import bandit_lines
    from generator.campaign.niches import niche_lines

    last = generations[-1] if generations else None
    return niche_lines(last) + bandit_lines(last)


def edit_lines(cands: list[Candidate]) -> list[str]:
    """'diff edits: ...' ([evolution] edit = "diff"): how many applied, fell back to full code, came in full."""
    asked = [c.edit for c in cands if c.edit and c.edit.get("mode") == "diff"]
    if not asked:
        return []
    from generator.llm.edits import ASKED_AGAIN, edit_outcome

    outcomes = [edit_outcome(e) for e in asked]
    applied = outcomes.count("applied")
    failed = sum(1 for o in outcomes if o in ASKED_AGAIN)
    return [
        f"diff edits: {len(asked)} asked, {applied} applied, {failed} did not apply and were asked again for full "
        f"code, {len(asked) - applied - failed} answered with full code"
    ]


def _of_budget(made: int, budget) -> str:
    """'of 100'; a run extended by an earlier version past a smaller budget never reads '100 of 50'."""
    return f"of {budget}" if budget is None or made <= int(budget) else f"(more than the budget of {budget})"


def _state_line(run_dir, status: dict) -> str:
    """'state: ...' from the run lock first (is a process at work on the run now?), then status.json."""
    from generator.run_lock import holder

    held = holder(run_dir)
    state, reason = status.get("state"), status.get("reason")
    reason = printable(reason, newlines=False) if reason else reason  # it may quote what a candidate wrote
    if held is not None and state in (None, "running"):
        return f"state: running -- {held}"
    if held is not None:  # e.g. `hpo` tuning a finished run
        return f"state: {state}" + (f" -- {reason}" if reason else "") + f"; now in use by {held}"
    if state in (None, "running"):  # the process that was at work ended without a word (kill -9, power loss)
        return f"state: stopped -- no process holds the run (killed?); to continue: tunesmith resume {run_dir}"
    resumable = f"; to continue: tunesmith resume {run_dir}" if state == "stopped" else ""
    return f"state: {state}" + (f" -- {reason}" if reason else "") + resumable


def _code_or_none(archive: Archive, cand: Candidate) -> str | None:
    try:
        return archive.code(cand)
    except OSError:  # a code file lost (copied run directory): the candidate simply has no shape
        return None


def _choice_lines(choice) -> list[str]:
    from generator.campaign.final_choice import format_choice

    return format_choice(choice)
