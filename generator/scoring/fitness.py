"""What evaluating a candidate yields: a Fitness (scores per task) or a CandidateError (why not)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from generator.errors import capped, printable

ERROR_KINDS = ("syntax", "interface", "exception", "timeout", "memory", "killed")


MAX_MESSAGE, MAX_LINE, MAX_TRACEBACK = 1000, 300, 4000  # characters kept of each field


@dataclass(frozen=True)
class CandidateError:
    """Why a candidate failed, in a form fit to show an LLM."""

    kind: str  # one of ERROR_KINDS
    message: str
    traceback: str = ""  # trimmed to the candidate's own frames
    line: str | None = None  # the offending line of the candidate's source, stripped
    lineno: int | None = None
    task: str | None = None  # the task (and repeat) it failed on, when it failed at run time
    repeat: int | None = None

    def __post_init__(self):
        if self.kind not in ERROR_KINDS:
            raise ValueError(f"CandidateError kind {self.kind!r} is not one of {ERROR_KINDS}")
        # Every field can hold what a candidate sent: capped and escaped before anything records,
        # prints or prompts with it (a 900,000-character line, escapes that forge a terminal line).
        fix = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        fix("message", capped(printable(self.message, newlines=False), MAX_MESSAGE))
        fix("traceback", capped(printable(self.traceback or ""), MAX_TRACEBACK, keep="tail"))
        for name in ("line", "task"):
            if getattr(self, name) is not None:
                fix(name, capped(printable(getattr(self, name), newlines=False), MAX_LINE))
        if not (isinstance(self.lineno, int) and 0 < self.lineno < 10**7):
            fix("lineno", None)
        if not (isinstance(self.repeat, int) and 0 <= self.repeat < 10**7):
            fix("repeat", None)

    def __str__(self) -> str:
        where = f" (line {self.lineno}: {self.line})" if self.lineno and self.line else ""
        return f"{self.kind}: {self.message}{where}"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> CandidateError:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass(frozen=True)
class TaskFitness:
    """P of a candidate on one task: score over all repeats, spread, and what the runs used."""

    score: float
    std: float  # standard deviation of P over repeats
    fevals: float  # mean calls to func per run (revisits and invalid configurations included)
    unique: float = 0.0  # mean unique valid configurations evaluated per run
    per_repeat: tuple[float, ...] = ()
    wall_s: float = 0.0  # real seconds the runs of this task took in the sandbox
    runs: int = 0  # sandbox runs scored on this task (the repeats; racing gives some candidates more)
    se: float | None = None  # standard error of P over those runs (None below two)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["per_repeat"] = list(self.per_repeat)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TaskFitness:
        names = cls.__dataclass_fields__
        d = {k: v for k, v in d.items() if k in names}
        d["per_repeat"] = tuple(d.get("per_repeat", ()))
        return cls(**d)


@dataclass
class Fitness:
    """The result of evaluating one candidate on tasks x repeats (score None when it failed)."""

    score: float | None  # mean P over tasks
    per_task: dict[str, TaskFitness] = field(default_factory=dict)
    wall_s: float = 0.0
    error: CandidateError | None = None
    metadata: dict = field(default_factory=dict)  # seed, repeats, runs, se, limits, protections that held

    @property
    def ok(self) -> bool:
        return self.error is None and self.score is not None

    def to_dict(self) -> dict:
        return {
            "score": self.score,
            "per_task": {k: v.to_dict() for k, v in self.per_task.items()},
            "wall_s": self.wall_s,
            "error": self.error.to_dict() if self.error else None,
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Fitness:
        return cls(
            score=d.get("score"),
            per_task={k: TaskFitness.from_dict(v) for k, v in (d.get("per_task") or {}).items()},
            wall_s=float(d.get("wall_s", 0.0)),
            error=CandidateError.from_dict(d["error"]) if d.get("error") else None,
            metadata=dict(d.get("metadata") or {}),
        )
