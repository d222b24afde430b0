"""Extension points by name: task sources, executors and LLM backends, loaded on first use.

Each kind is a table of names to `"module:attribute"` targets, as Kernel Tuner's strategy table
(`kernel_tuner/interface.py`): listing the names imports nothing, and a target's module is imported
only when an entry that needs it is resolved. Nothing registers itself by being imported; a user's own
source, executor or backend is added by an explicit call:

    from generator import register
    register("task_source", "mine", "mypackage.tasks:SOURCE")   # tasks: ["mine:..."]

- `task_source`: the prefix before ':' in a task entry (`hub:APP/GPU`, `problem:NAME`, `live:NAME`);
  the target satisfies `generator.tasks.sources.TaskSource`. Paths (hub folders, cache files) are the
  resolver's built-in fallback, not entries here.
- `executor`: an `[evaluation] executor` URL: a bare name (`local`, `dask-local`) or a scheme written
  with its `://` (`dask://HOST:PORT`); the target satisfies `generator.evaluation.executors.ExecutorFactory`.
- `llm_backend`: the prefix before '/' in `llm.model` (`synth/components`, `replay/RUN`, `local/NAME`);
  any other prefix is a litellm provider, served by the `litellm` entry. The target is an instance of
  `generator.llm.backend.LLMBackend`.

This module imports nothing of the package but its errors, so every room may use it.
"""

from __future__ import annotations

import importlib
import threading

from generator.errors import TunesmithError

TABLES: dict[str, dict[str, str]] = {
    "task_source": {
        "hub": "generator.tasks.entries:HUB_SOURCE",
        "problem": "generator.tasks.entries:PROBLEM_SOURCE",
        "live": "generator.live.tasks:SOURCE",
    },
    "executor": {
        "local": "generator.evaluation.executors:LOCAL",
        "dask-local": "generator.evaluation.dask_executor:LOCAL_CLUSTER",
        "dask://": "generator.evaluation.dask_executor:SCHEDULER",
        "tcp://": "generator.evaluation.dask_executor:SCHEDULER",
        "tls://": "generator.evaluation.dask_executor:SCHEDULER",
    },
    "llm_backend": {
        "litellm": "generator.llm.backend:LITELLM",
        "synth": "generator.llm.synth.backend:BACKEND",
        "replay": "generator.llm.replay:BACKEND",
        "local": "generator.llm.local_backend:BACKEND",
    },
}
_LOADED: dict[tuple[str, str], object] = {}
_LOCK = threading.Lock()


class RegistryError(TunesmithError):
    """A name no table holds, or a target that cannot be loaded."""


def _table(kind: str) -> dict[str, str]:
    if kind not in TABLES:
        raise RegistryError(f"unknown registry kind {kind!r}; choose one of: {', '.join(sorted(TABLES))}")
    return TABLES[kind]


def names(kind: str) -> list[str]:
    """The names of one kind, sorted (for validation and help text); imports nothing."""
    return sorted(_table(kind))


def table(kind: str) -> list[str]:
    """The names of one kind in the order the table lists them (the default first); imports nothing."""
    return list(_table(kind))


def load(kind: str, name: str):
    """The object `name` stands for, its module imported on first use; an unknown name is a one-line error
    naming the choices."""
    table = _table(kind)
    if name not in table:
        raise RegistryError(f"unknown {kind.replace('_', ' ')} {name!r}; choose one of: {', '.join(sorted(table))}")
    with _LOCK:
        key = (kind, name)
        if key not in _LOADED:
            module, _, attribute = table[name].partition(":")
            try:
                _LOADED[key] = getattr(importlib.import_module(module), attribute)
            except (ImportError, AttributeError) as exc:
                raise RegistryError(f"{kind} {name!r}: cannot load {table[name]} ({exc}); check the target") from exc
        return _LOADED[key]


def register(kind: str, name: str, target: str) -> None:
    """Add (or replace) `name` in the `kind` table; `target` is "module:attribute", loaded on first use."""
    module, sep, attribute = target.partition(":")
    if not sep or not module or not attribute:
        raise RegistryError(f"register({kind!r}, {name!r}, {target!r}): give the target as 'module:attribute'")
    table = _table(kind)
    with _LOCK:
        table[name] = target
        _LOADED.pop((kind, name), None)
