"""Live task references: `live:PROBLEM[,fevals=N][,seconds=S][,device=I][,gpu=LABEL]` -> LiveTasks.

The same text works wherever tasks are named: `tunesmith evaluate --tasks`, `tunesmith bench
--tasks` and a campaign's `[tasks] train/test`. PROBLEM is a problem under problems/ by name
(`live:gemm`), a problem folder, or a problem.toml path. Options (comma-separated, any order):

- `fevals=N`   at most N unique configurations measured per run;
- `seconds=S`  at most S seconds of measured tuning time per run (compile + verification + benchmark,
               as Kernel Tuner times them: the clock the cached tasks simulate);
- `device=I`   the GPU index (default 0);
- `gpu=LABEL`  score against the shipped cache of this GPU (default: the label of the device found).

Without fevals/seconds a run gets the methodology's budget, derived from the problem's measured
cache for this device; a problem without one needs an explicit budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from generator.errors import TunesmithError
from generator.tasks.cache import Budget
from generator.tasks.problems import PROBLEMS_DIR

PREFIX = "live:"
EXAMPLE = "live:matmul_c,fevals=20"


class LiveEntryError(TunesmithError):
    """A `live:` task reference that cannot be used; the message names it and the fix."""


@dataclass(frozen=True)
class LiveEntry:
    """A parsed `live:` reference."""

    target: str  # problem name, folder or problem.toml, as written (or resolved)
    fevals: int | None = None
    seconds: float | None = None
    device: int = 0
    gpu: str | None = None

    def budget(self) -> Budget | None:
        """The run budget it names (None: the methodology's, from the measured cache)."""
        if self.fevals is None and self.seconds is None:
            return None
        return Budget(self.seconds if self.seconds is not None else math.inf, self.fevals)

    def text(self) -> str:
        """The reference written back (canonical order)."""
        opts = [
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in (("fevals", self.fevals), ("seconds", self.seconds), ("gpu", self.gpu))
            if v is not None
        ]
        if self.device:
            opts.append(f"device={self.device}")
        return PREFIX + ",".join([self.target, *opts])


def is_live_entry(text) -> bool:
    """True for a `live:` reference."""
    return isinstance(text, str) and text.startswith(PREFIX)


def parse_live_entry(text: str) -> LiveEntry:
    """Parse a `live:` reference (syntax only: nothing is loaded, no device is needed)."""
    if not is_live_entry(text):
        raise LiveEntryError(f"{text!r}: not a live task reference; write e.g. {EXAMPLE}")
    target, *options = [p.strip() for p in text[len(PREFIX) :].split(",")]
    if not target:
        raise LiveEntryError(
            f"{text!r}: no problem named; write e.g. {EXAMPLE} (a name under problems/ or a problem.toml path)"
        )
    values: dict = {}
    for opt in options:
        name, sep, raw = opt.partition("=")
        name = name.strip()
        if not sep or name not in ("fevals", "seconds", "device", "gpu"):
            raise LiveEntryError(
                f"{text!r}: unknown option {opt!r}; options are fevals=N, seconds=S, device=I, "
                f"gpu=LABEL, e.g. {EXAMPLE}"
            )
        values[name] = _option(text, name, raw.strip())
    return LiveEntry(target, **values)


def _option(text: str, name: str, raw: str):
    if name == "gpu":
        if not raw:
            raise LiveEntryError(f"{text!r}: gpu= needs a label such as H200; give one or leave the option out")
        return raw
    try:
        value = int(raw) if name in ("fevals", "device") else float(raw)
    except ValueError:
        value = None
    low = 0 if name == "device" else 1e-9
    if value is None or not math.isfinite(value) or value < low:
        kind = (
            "a non-negative integer"
            if name == "device"
            else ("a positive integer" if name == "fevals" else "a positive number of seconds")
        )
        raise LiveEntryError(f"{text!r}: {name} must be {kind}, got {raw!r}; e.g. {EXAMPLE}")
    return value


def problem_spec(target: str, base: Path | None = None) -> Path:
    """The problem.toml a target names: a name under problems/, a problem folder or a spec file."""
    tries = []
    looks_like_path = "/" in target or target.endswith(".toml") or target in (".", "..")
    for root in ([Path.cwd()] + ([base] if base is not None else [])) if looks_like_path else []:
        tries.append(root / target)
    if not looks_like_path:
        tries.append(PROBLEMS_DIR / target)
    for p in tries:
        if p.is_dir() and (p / "problem.toml").is_file():
            return (p / "problem.toml").resolve()
        if p.is_file():
            return p.resolve()
    names = sorted(d.name for d in PROBLEMS_DIR.glob("*") if (d / "problem.toml").is_file())
    raise LiveEntryError(
        f"live:{target}: no problem spec found (tried {', '.join(map(str, tries))}); "
        f"name one of {names} or give a problem.toml path"
    )
