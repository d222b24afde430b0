"""Lineage queries over a run directory: ancestry, best path, diffs, operator statistics, usage.

Everything reads through `generator.archive.Archive`, so a run that is still going or was cut
short reads fine: torn last lines are skipped by the archive, and a candidate whose code file or
exchange is missing reads as having none. The terminal views (`lineage_views.py`) and the HTML
report (`report.py`) are built on the `Lineage` object here.
"""

from __future__ import annotations

import difflib
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from generator.archive import Archive, ArchiveError, Candidate


@dataclass(frozen=True)
class ExchangeView:
    """What one LLM call was asked and answered, with its tokens and cost."""

    id: str
    model: str
    prompt: str  # the messages rendered as text, one "[role]" header each
    reply: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_s: float | None
    error: str | None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class OperatorStats:
    """How one operator fared: how often its children worked and beat their parents."""

    operator: str
    candidates: int
    succeeded: int  # evaluated without error (a duplicate is not evaluated: it is counted in `duplicates`)
    with_parent: int  # candidates that had at least one parent to compare with
    improved: int  # scored above the best of their parents (a failed parent counts as beaten)
    new_best: int  # set a new best score of the run when they appeared
    mean_delta: float | None  # mean score change against the best parent, over comparable pairs
    duplicates: int = 0  # copies of an archived candidate, recorded with its score but never run


@dataclass(frozen=True)
class ConvergencePoint:
    """The run after its index-th candidate: best score so far and LLM spending so far."""

    index: int  # 1-based position in generation order
    id: str
    score: float | None
    best: float | None
    cost_usd: float
    tokens: int


def _as_dict(record) -> dict:
    if isinstance(record, dict):
        return record
    if hasattr(record, "to_dict"):
        return record.to_dict()
    return dict(vars(record))


def _render_messages(messages) -> str:
    """Chat messages as readable text: a [role] line, then the content."""
    if isinstance(messages, str):
        return messages
    parts = []
    for m in messages or []:
        content = m.get("content", "") if isinstance(m, dict) else str(m)
        if isinstance(content, list):  # multi-part content: keep the text parts
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(f"[{m.get('role', '?') if isinstance(m, dict) else '?'}]\n{content}")
    return "\n\n".join(parts)


def exchange_view(record) -> ExchangeView:
    """Read one recorded exchange (generator.llm.client.Exchange or its dict) tolerantly."""
    d = _as_dict(record)
    usage = d.get("usage") if isinstance(d.get("usage"), dict) else {}
    prompt = d.get("messages", d.get("prompt", ""))
    reply = d.get("reply", d.get("response", d.get("content", ""))) or ""
    cost = d.get("cost_usd", d.get("cost", usage.get("cost_usd", 0.0)))
    return ExchangeView(
        id=str(d.get("id", "")),
        model=str(d.get("model", "")),
        prompt=_render_messages(prompt),
        reply=reply if isinstance(reply, str) else str(reply),
        prompt_tokens=int(d.get("prompt_tokens", usage.get("prompt_tokens", 0)) or 0),
        completion_tokens=int(d.get("completion_tokens", usage.get("completion_tokens", 0)) or 0),
        cost_usd=float(cost or 0.0),
        latency_s=d.get("latency_s", d.get("seconds")),
        error=(str(d["error"]) if d.get("error") else None),
    )


class Lineage:
    """The candidates of one run as a family tree, with the questions a reviewer asks of it."""

    def __init__(self, archive: Archive):
        self.archive = archive
        self.run_dir = archive.run_dir
        self.candidates: dict[str, Candidate] = {c.id: c for c in archive.candidates()}
        self._exchanges = self._load_exchanges()
        self._children: dict[str, list[str]] = defaultdict(list)
        for c in self.candidates.values():
            for p in c.parent_ids:
                self._children[p].append(c.id)

    @classmethod
    def load(cls, run_dir) -> Lineage:
        """Open a run directory (finished, running or interrupted)."""
        return cls(Archive.open(Path(run_dir)))

    def _load_exchanges(self) -> list[ExchangeView]:
        try:
            records = self.archive.exchanges()
        except (ImportError, ArchiveError, OSError, ValueError, TypeError):
            return []  # a run written by another version: the lineage still reads without them
        return [exchange_view(r) for r in records]

    # -- single candidates -----------------------------------------------------------------
    def get(self, cid: str) -> Candidate:
        """The candidate with this id; a one-line error naming the run when absent."""
        if cid not in self.candidates:
            near = ", ".join(list(self.candidates)[:3]) or "none yet"
            raise ArchiveError(
                f"{self.run_dir}: no candidate {cid!r} (ids look like {near}); "
                f"`tunesmith lineage {self.run_dir}` lists them"
            )
        return self.candidates[cid]

    def code(self, cid: str) -> str | None:
        """The candidate's source, or None when it had none (or its file is not written yet)."""
        c = self.get(cid)
        path = self.archive.code_file(c)
        try:
            return path.read_text(encoding="utf-8", errors="replace") if path else None
        except OSError:
            return None

    def exchange(self, cid: str) -> ExchangeView | None:
        """The LLM exchange that produced the candidate, when recorded."""
        xid = self.get(cid).exchange_id
        return next((x for x in self._exchanges if x.id == xid), None) if xid else None

    @property
    def exchanges(self) -> list[ExchangeView]:
        return list(self._exchanges)

    def parents(self, cid: str) -> list[str]:
        """Parent ids that exist in the run, in the order the candidate lists them."""
        return [p for p in self.get(cid).parent_ids if p in self.candidates]

    def children(self, cid: str) -> list[str]:
        return list(self._children.get(cid, []))

    def diff(self, cid: str, parent_id: str) -> str:
        """Unified diff from a parent's code to the candidate's code."""
        old = (self.code(parent_id) or "").splitlines(keepends=True)
        new = (self.code(cid) or "").splitlines(keepends=True)
        return "".join(difflib.unified_diff(old, new, f"{parent_id}.py", f"{cid}.py"))

    def parent_best(self, cid: str) -> float | None:
        """The best score among the candidate's parents (None when none scored)."""
        scores = [self.candidates[p].score for p in self.parents(cid)]
        scores = [s for s in scores if s is not None]
        return max(scores) if scores else None

    def delta(self, cid: str) -> float | None:
        """Score change against the best parent; None when either side has no score."""
        c, pb = self.get(cid), self.parent_best(cid)
        return None if c.score is None or pb is None else c.score - pb

    def improved(self, cid: str) -> bool:
        """Did the candidate beat its parents? A working fix of a failed parent counts."""
        c = self.get(cid)
        if c.score is None or c.duplicate_of or not self.parents(cid):
            return False
        pb = self.parent_best(cid)
        return pb is None or c.score > pb

    # -- the family tree -------------------------------------------------------------------
    def roots(self) -> list[str]:
        """Candidates with no parent in the run (written from scratch)."""
        return [cid for cid in self.candidates if not self.parents(cid)]

    def ancestors(self, cid: str) -> list[str]:
        """All ancestors of a candidate, in generation order."""
        seen: set[str] = set()
        stack = list(self.parents(cid))
        while stack:
            p = stack.pop()
            if p not in seen:
                seen.add(p)
                stack.extend(self.parents(p))
        return [c for c in self.candidates if c in seen]

    def best(self) -> str | None:
        """Id of the best successful, non-duplicate candidate (the archive's own ranking)."""
        ok = [c for c in self.candidates.values() if c.ok and not c.duplicate_of]
        return max(ok, key=lambda c: c.score).id if ok else None

    def best_path(self, cid: str | None = None) -> list[str]:
        """Root-to-candidate chain (default: the best) that follows the best-scoring parent."""
        cid = cid or self.best()
        if cid is None:
            return []
        path = [cid]
        while parents := [p for p in self.parents(path[-1]) if p not in path]:
            path.append(
                max(parents, key=lambda p: (self.candidates[p].score is not None, self.candidates[p].score or 0.0))
            )
        return path[::-1]

    # -- run-wide statistics ---------------------------------------------------------------
    def operator_stats(self) -> list[OperatorStats]:
        """Per operator: candidates, successes, improvements over parents, new bests."""
        best_so_far: float | None = None
        new_best: Counter = Counter()
        for c in self.candidates.values():
            if c.score is not None and not c.duplicate_of and (best_so_far is None or c.score > best_so_far):
                new_best[c.operator] += 1
                best_so_far = c.score
        groups: dict[str, list[Candidate]] = defaultdict(list)
        for c in self.candidates.values():
            groups[c.operator].append(c)
        stats = []
        for op, cs in groups.items():
            deltas = [d for d in (self.delta(c.id) for c in cs) if d is not None]
            stats.append(
                OperatorStats(
                    operator=op,
                    candidates=len(cs),
                    succeeded=sum(c.ok and not c.duplicate_of for c in cs),
                    with_parent=sum(bool(self.parents(c.id)) for c in cs),
                    improved=sum(self.improved(c.id) for c in cs),
                    new_best=new_best[op],
                    mean_delta=sum(deltas) / len(deltas) if deltas else None,
                    duplicates=sum(bool(c.duplicate_of) for c in cs),
                )
            )
        order = {"new": 0, "refine": 1, "simplify": 2, "fix": 3}
        return sorted(stats, key=lambda s: (order.get(s.operator, 9), s.operator))

    def convergence(self) -> list[ConvergencePoint]:
        """Best score so far after each candidate, with cumulative LLM cost and tokens."""
        position = {x.id: i for i, x in enumerate(self._exchanges)}
        cum_cost, cum_tokens, c_acc, t_acc = [], [], 0.0, 0
        for x in self._exchanges:
            c_acc, t_acc = c_acc + x.cost_usd, t_acc + x.tokens
            cum_cost.append(c_acc)
            cum_tokens.append(t_acc)
        points, best, last = [], None, -1
        for i, c in enumerate(self.candidates.values(), start=1):
            # spending up to this candidate's own call, retries and failed calls before it included
            last = max(last, position.get(c.exchange_id, -1))
            if c.score is not None and not c.duplicate_of:
                best = c.score if best is None else max(best, c.score)
            points.append(
                ConvergencePoint(
                    index=i,
                    id=c.id,
                    score=c.score,
                    best=best,
                    cost_usd=cum_cost[last] if last >= 0 else 0.0,
                    tokens=cum_tokens[last] if last >= 0 else 0,
                )
            )
        return points

    def error_kinds(self) -> dict[int, Counter]:
        """Per generation: how many candidates failed with each error kind."""
        out: dict[int, Counter] = defaultdict(Counter)
        for c in self.candidates.values():
            out[c.generation]  # every generation appears, also one without errors
            if c.error:
                out[c.generation][str(c.error.get("kind") or "unknown")] += 1
        return dict(sorted(out.items()))

    def usage(self) -> dict:
        """LLM calls, tokens and cost: from the exchanges, else from status.json."""
        if self._exchanges:
            return {
                "calls": len(self._exchanges),
                "prompt_tokens": sum(x.prompt_tokens for x in self._exchanges),
                "completion_tokens": sum(x.completion_tokens for x in self._exchanges),
                "cost_usd": sum(x.cost_usd for x in self._exchanges),
                "failed_calls": sum(bool(x.error) for x in self._exchanges),
            }
        u = dict(self.archive.status().get("usage") or {})
        return {
            "calls": u.get("calls", 0),
            "prompt_tokens": u.get("prompt_tokens", 0),
            "completion_tokens": u.get("completion_tokens", 0),
            "cost_usd": u.get("cost_usd", 0.0),
            "failed_calls": 0,
        }

    def status(self) -> dict:
        """The run's status.json (state, budget, best), empty while none is written."""
        try:
            return self.archive.status()
        except (OSError, ValueError):
            return {}  # being rewritten right now, or torn: the report goes on without it

    def hpo_results(self) -> dict[str, dict]:
        """Optuna results per candidate (RUN/hpo/<id>.json), when the HPO room wrote any."""
        import json

        out = {}
        for path in sorted((self.run_dir / "hpo").glob("*.json")):
            try:
                out[path.stem] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # written right now; the next report picks it up
        return out
