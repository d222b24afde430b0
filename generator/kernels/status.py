"""`tunesmith status` of a kernel campaign's run directory, in a kernel campaign's terms.

Its candidates are templates scored by a speed-up over the original kernel, not optimizers scored by
P over training tasks: no budget in candidates (generations x offspring, plus fixes), no repeats or
standard error, and replies from whatever `[kernel_campaign.llm]` names (hand-written ones say so).
"""

from __future__ import annotations

from generator.archive import Archive, Candidate
from generator.config.kernel import KERNEL_RUN
from generator.errors import clipped, printable


def is_kernel_run(run_dir) -> bool:
    """Whether the run directory holds a kernel campaign (`tunesmith template CAMPAIGN.toml`)."""
    return Archive.open(run_dir).stored.kind == KERNEL_RUN


def format_kernel_status(run_dir, k: int = 10) -> str:
    """Kernel, state, candidates made and failed, replies and their usage, the speed-up leaderboard."""
    from generator.campaign.printing import _state_line

    archive = Archive.open(run_dir)
    record = archive.settings
    state_line = _state_line(archive.run_dir, archive.status())
    cands = archive.candidates()
    failed: dict[str, int] = {}
    for c in cands:
        if c.error:
            failed[c.error.get("kind", "?")] = failed.get(c.error.get("kind", "?"), 0) + 1
    usage = archive.status().get("usage") or {}
    board = archive.best(k)
    lines = [
        f"run: {archive.run_dir} (kernel campaign: templates of {record.kernel})",
        state_line,
        f"candidates: {len(cands)} templates made, {sum(failed.values())} failed"
        + (f" ({', '.join(f'{kind}: {n}' for kind, n in sorted(failed.items()))})" if failed else "")
        + f", {len(archive.generations())} generations done",
        f"replies: {record.replies or record.model}: "
        f"{usage.get('calls', 0)} calls, {usage.get('tokens', 0)} tokens, {usage.get('cost_usd', 0.0):.4f} USD",
        "leaderboard (speed-up over the original kernel: its time / the best time the tuner found):",
    ]
    lines += _board_lines(board) if board else ["  (no working template yet)"]
    if board:
        lines.append(f"best template: {archive.code_file(board[0])}")
    return "\n".join(lines)


def _board_lines(board: list[Candidate]) -> list[str]:
    lines = [
        f"  {'rank':>4} {'id':6} {'speed-up':>8} {'tuned ms':>9} {'orig. ms':>9} {'tuned with':>30}  operator  "
        "hypothesis"
    ]
    for rank, c in enumerate(board, 1):
        f = c.fitness or {}
        tuner = f"{f.get('optimizer', '?')}, {f.get('fevals', '?')} evals"
        lines.append(
            f"  {rank:>4} {c.id:6} {c.score:>7.2f}x {_ms(f.get('best_ms'))} {_ms(f.get('original_ms'))} "
            f"{tuner:>30}  {c.operator:8}  {clipped(printable(c.description, newlines=False), 60)}"
        )
    return lines


def _ms(value) -> str:
    return f"{value:>9.4f}" if isinstance(value, (int, float)) else f"{'?':>9}"
