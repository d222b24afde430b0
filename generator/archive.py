"""Crash-safe store of one campaign: candidates, their code, lineage and every LLM exchange.

Run directory layout (other rooms -- report, HPO, export -- read it through `Archive.open`):

```
RUN_DIR/
  campaign.toml        the campaign file as given (copied once, at creation)
  config.json          the validated configuration, paths resolved (resume reads this)
  run.json             {"created", "tunesmith_version", "campaign"} written once at creation
  status.json          {"state": running|finished|stopped, "reason", "candidates", "budget",
                        "usage": {calls, prompt_tokens, completion_tokens, cost_usd}, "best": id,
                        "updated"}; rewritten atomically (tmp + rename) after every candidate
  exchanges.jsonl      one JSON object per LLM call (see generator.llm.client.Exchange), append-only
  candidates.jsonl     one JSON object per generated candidate (see Candidate), append-only
  generations.jsonl    one JSON object per finished generation: {"generation", "population": [ids]}, plus
                       "niches" (generator.campaign.niches) and "bandit" when they are on
  races.jsonl          racing only: one JSON object per extension of a candidate's runs, {"id", "to",
                       "fitness"} (its Fitness with all runs so far) or {"id", "to", "error"}
  code/<id>.py         the source of each candidate that had code
  .lock                the run's lock (generator.run_lock): one campaign at a time, `hpo` shared
  diversity.json       a cache: each candidate's part of the code diversity, written by `status` and the
                       report (generator.campaign.diversity); rebuilt when missing or damaged
  hpo/, report/, export/   reserved for the rooms that build on a run
```

Why it survives `kill -9`: every record is one line, appended, flushed and fsync'ed before the
next step starts; a line cut short by a crash is ignored when reading. Code files are written to a
temporary name and renamed, before the candidate line that points at them. Order per candidate:
exchange line -> code file -> candidate line. A crash between them loses only that candidate's
evaluation; on resume the recorded exchange is reused, so the LLM is not asked again.

Candidate ids are `c0001`, `c0002`, ... in generation order; exchange ids are `x0001`, ...
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from generator.errors import TunesmithError
from generator.jsonl import read_lines, repair_tail

CANDIDATES = "candidates.jsonl"
EXCHANGES = "exchanges.jsonl"
GENERATIONS = "generations.jsonl"
RACES = "races.jsonl"
STATUS = "status.json"
CONFIG = "config.json"


class ArchiveError(TunesmithError):
    """A run directory that cannot be read or written."""


@dataclass
class Candidate:
    """One generated optimizer: where it came from, its code and how well it did."""

    id: str
    generation: int
    operator: str  # new | refine | simplify | fix | crossover
    parent_ids: list[str] = field(default_factory=list)
    description: str = ""
    code_path: str | None = None  # relative to the run directory
    code_hash: str | None = None  # hash of the normalised code (duplicate detection)
    fitness: dict | None = None  # Fitness.to_dict(): score, per_task {name: {score, std, fevals}}, wall_s, error
    error: dict | None = None  # {kind, message, traceback, line}: llm, no_code, syntax, interface, runtime, timeout...
    exchange_id: str | None = None
    duplicate_of: str | None = None  # id of the earlier candidate with the same normalised code
    timings: dict = field(default_factory=dict)  # llm_s, eval_s
    created: float = 0.0
    # nearest earlier code {"nearest": id, "similarity": 0..1}, and "reasked": the same for the first
    # reply plus its "exchange_id" when that reply nearly copied it (generator.campaign.novelty)
    novelty: dict | None = None
    # [evolution] edit = "diff": {"mode": "diff", "blocks": n, "applied": bool} and, when the blocks did
    # not apply and full code was asked for instead, "reason" and "diff_exchange_id" (generator.llm.edits)
    edit: dict | None = None
    model: str | None = None  # which of [llm] models wrote it (None: [llm] model)

    @property
    def score(self) -> float | None:
        """Mean score P over the training tasks; None when the candidate failed."""
        if self.error or not self.fitness:
            return None
        return self.fitness.get("score")

    @property
    def per_task(self) -> dict[str, float | None]:
        """Score P per training task."""
        per = (self.fitness or {}).get("per_task") or {}
        return {name: (v.get("score") if isinstance(v, dict) else v) for name, v in per.items()}

    @property
    def ok(self) -> bool:
        return self.score is not None

    @property
    def se(self) -> float | None:
        """Standard error of the mean P (over its repeats, tasks aggregated per repeat); None if unknown."""
        return ((self.fitness or {}).get("metadata") or {}).get("se") if self.ok else None

    @property
    def runs(self) -> int:
        """Sandbox runs (task x repeat) its score rests on."""
        per = (self.fitness or {}).get("per_task") or {}
        return sum(len(v.get("per_repeat") or ()) for v in per.values() if isinstance(v, dict))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Candidate:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def apply_race(candidate: Candidate, record: dict) -> None:
    """Give a candidate the runs a race record added (or, for a failed extension, mark its race over)."""
    if record.get("fitness") is not None:
        candidate.fitness = record["fitness"]
    elif candidate.fitness is not None:  # runs that failed where the first ones did not: no more runs
        meta = {**(candidate.fitness.get("metadata") or {}), "race_stopped": record.get("error") or "error"}
        candidate.fitness = {**candidate.fitness, "metadata": meta}


def _append_line(path: Path, record: dict) -> None:
    """Append one JSON line and make it durable before returning."""
    line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def write_atomic(path: Path, text: str) -> None:
    """Replace a file whole or not at all (a crash leaves the old one), durable before returning."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class Archive:
    """A campaign's run directory: append candidates and exchanges, read them back."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)

    # -- creating and opening -------------------------------------------------------------
    @classmethod
    def create(cls, run_dir, config: dict, campaign_text: str = "", campaign_name: str = "") -> Archive:
        """Make a new run directory holding the configuration."""
        from generator import __version__

        run_dir = Path(run_dir)
        if (run_dir / CONFIG).exists():
            raise ArchiveError(f"{run_dir}: already holds a run; resume it or choose another output.run_dir")
        (run_dir / "code").mkdir(parents=True, exist_ok=True)
        if campaign_text:
            write_atomic(run_dir / "campaign.toml", campaign_text)
        write_atomic(
            run_dir / "run.json",
            json.dumps({"created": time.time(), "tunesmith_version": __version__, "campaign": campaign_name}, indent=1),
        )
        # config.json last: its presence marks a complete run directory
        write_atomic(run_dir / CONFIG, json.dumps(config, indent=1, default=str))
        return cls(run_dir)

    @classmethod
    def open(cls, run_dir) -> Archive:
        """Open an existing run directory (to read it, or to continue appending)."""
        run_dir = Path(run_dir)
        if not (run_dir / CONFIG).exists():
            raise ArchiveError(
                f"{run_dir}: not a Tunesmith run directory (no {CONFIG}); give the output.run_dir of a campaign"
            )
        return cls(run_dir)

    @staticmethod
    def exists(run_dir) -> bool:
        return (Path(run_dir) / CONFIG).exists()

    def prepare_append(self) -> None:
        """Make the append-only files safe to extend after a crash."""
        for name in (CANDIDATES, EXCHANGES, GENERATIONS, RACES):
            repair_tail(self.run_dir / name)
        (self.run_dir / "code").mkdir(exist_ok=True)

    # -- reading ------------------------------------------------------------------------------
    @property
    def config(self) -> dict:
        """The validated campaign configuration as a plain dict (see generator.config)."""
        return json.loads((self.run_dir / CONFIG).read_text())

    def candidates(self, raced: bool = True) -> list[Candidate]:
        """All candidates in the order they were generated (with the runs racing added, unless not `raced`)."""
        cands = read_lines(self.run_dir / CANDIDATES, Candidate.from_dict)
        if raced:
            by_id = {c.id: c for c in cands}
            for record in self.races():
                if record.get("id") in by_id:
                    apply_race(by_id[record["id"]], record)
        return cands

    def races(self) -> list[dict]:
        """Racing's extensions of candidates' runs, in the order they were made."""
        return read_lines(self.run_dir / RACES)

    def candidate(self, cid: str) -> Candidate:
        for c in self.candidates():
            if c.id == cid:
                return c
        raise ArchiveError(f"{self.run_dir}: no candidate {cid!r}; see `tunesmith status {self.run_dir}` for ids")

    def code(self, candidate: Candidate | str) -> str | None:
        """Source code of a candidate (None when the reply held no code)."""
        c = self.candidate(candidate) if isinstance(candidate, str) else candidate
        return (self.run_dir / c.code_path).read_text() if c.code_path else None

    def code_file(self, candidate: Candidate) -> Path | None:
        return self.run_dir / candidate.code_path if candidate.code_path else None

    def exchanges(self) -> list:
        """All recorded LLM exchanges (generator.llm.client.Exchange), in call order."""
        from generator.llm.records import read_exchanges

        return read_exchanges(self.run_dir)

    def generations(self) -> list[dict]:
        return read_lines(self.run_dir / GENERATIONS)

    def status(self) -> dict:
        path = self.run_dir / STATUS
        return json.loads(path.read_text()) if path.exists() else {}

    def best(self, k: int = 1) -> list[Candidate]:
        """The k best successful, non-duplicate candidates, best first."""
        ok = [c for c in self.candidates() if c.ok and not c.duplicate_of]
        return sorted(ok, key=lambda c: -c.score)[:k]

    def dataframe(self):
        """One row per candidate: ids, lineage, score, per-task scores (score:<task>), error kind, timings."""
        import pandas as pd

        rows = []
        for c in self.candidates():
            row = {
                "id": c.id,
                "generation": c.generation,
                "operator": c.operator,
                "parent_ids": ",".join(c.parent_ids),
                "description": c.description,
                "score": c.score,
                "se": c.se,
                "runs": c.runs,
                "error_kind": (c.error or {}).get("kind"),
                "duplicate_of": c.duplicate_of,
                "code_path": c.code_path,
                "exchange_id": c.exchange_id,
            }
            row.update({f"score:{t}": s for t, s in c.per_task.items()})
            row.update({f"{k}": v for k, v in c.timings.items()})
            rows.append(row)
        return pd.DataFrame(rows)

    # -- writing ------------------------------------------------------------------------------
    def write_code(self, cid: str, source: str) -> str:
        """Store a candidate's source; returns its path relative to the run directory."""
        rel = f"code/{cid}.py"
        write_atomic(self.run_dir / rel, source)
        return rel

    def append_candidate(self, candidate: Candidate) -> None:
        _append_line(self.run_dir / CANDIDATES, candidate.to_dict())

    def append_exchange(self, exchange) -> None:
        _append_line(self.run_dir / EXCHANGES, exchange.to_dict())

    def append_race(self, record: dict) -> None:
        _append_line(self.run_dir / RACES, record)

    def append_generation(self, generation: int, population: list[str], extra: dict | None = None) -> None:
        """Record a finished generation; `extra`: e.g. its "niches" and "bandit" state."""
        _append_line(self.run_dir / GENERATIONS, {"generation": generation, "population": population, **(extra or {})})

    def write_status(self, status: dict) -> None:
        write_atomic(self.run_dir / STATUS, json.dumps({**status, "updated": time.time()}, indent=1))
