"""Task sets of a campaign: `[tasks] train/test` entries resolved to paths and loaded as Tasks.

An entry is `hub:APP/GPU` (one benchmark-hub space), `hub:APP` (all GPUs of an app),
`problem:NAME` or `problem:NAME/GPU` (a problem Tunesmith ships, problems/NAME/problem.toml),
`live:PROBLEM[,fevals=N][,seconds=S]` (the kernel tuned for real: generator/live_tasks.py),
a Kernel Tuner cache file, a problem.toml, or a benchmark-hub directory (all its spaces).
Relative paths are tried against the current directory, then against the campaign file's folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from generator.config import CampaignConfig, ConfigError, TasksConfig
from generator.errors import TunesmithError
from generator.tasks import Task, load_cache_task, load_tasks, read_t1_restrictions

PROBLEMS_DIR = Path(__file__).resolve().parents[1] / "problems"
_LOADED: dict[tuple, list[Task]] = {}


def _find(path: str, base: Path) -> Path | None:
    for candidate in (Path(path), base / path):
        if candidate.exists():
            return candidate.resolve()
    return None


def _looked_in(path: str, base: Path) -> str:
    """Where `_find` looked, each place once and named: 'looked in X' or 'looked in the current folder (X) and ...'."""
    if Path(path).is_absolute():
        return f"looked for {path}"
    here, beside = Path.cwd().resolve(), Path(base).resolve()
    if here == beside:
        return f"looked in {here}"
    return f"looked in the current folder ({here}) and in the campaign file's folder ({beside})"


def resolve_paths(cfg: CampaignConfig, base: Path) -> tuple[CampaignConfig, dict]:
    """Absolute paths for task files, hub, templates and replay runs; returns the config and its dict."""
    cfg = cfg.model_copy(deep=True)
    hub = _find(str(cfg.tasks.hub_dir()), base)
    if hub is not None:
        cfg.tasks.hub = str(hub)
    for key in ("train", "test"):
        entries = []
        for i, entry in enumerate(getattr(cfg.tasks, key)):
            if entry.startswith("live:"):  # checked (syntax, problem, device) and made absolute before the run starts
                from generator.live_tasks import resolve_entry

                try:
                    entries.append(resolve_entry(entry, base, check_device=True))
                except TunesmithError as exc:
                    raise ConfigError(f"tasks.{key}[{i}]: {exc}") from None
                continue
            if entry.startswith(("hub:", "problem:")):
                entries.append(entry)
                continue
            found = _find(entry, base)
            if found is None:
                raise ConfigError(f"tasks.{key}[{i}]: {entry!r} not found ({_looked_in(entry, base)}); give a cache "
                                  "file, a hub directory, 'hub:APP/GPU', 'problem:NAME' or 'live:NAME,fevals=N'")
            entries.append(str(found))
        setattr(cfg.tasks, key, entries)
    if cfg.prompts.template_dir:
        found = _find(cfg.prompts.template_dir, base)
        if found is None:
            raise ConfigError(f"prompts.template_dir: {cfg.prompts.template_dir!r} not found; give a folder of *.j2 files")
        cfg.prompts.template_dir = str(found)
    if cfg.llm.model.startswith("replay/"):
        found = _find(cfg.llm.model.split("/", 1)[1], base)
        if found is None:
            raise ConfigError(f"llm.model: {cfg.llm.model!r}: run directory not found; give replay/<run dir of an earlier run>")
        cfg.llm.model = f"replay/{found}"
    return cfg, cfg.model_dump(mode="json")


def _hub_task(hub: Path, app: str, gpu: str) -> Task:
    t1 = hub / "kernels" / f"{app}.json"
    cache = next((p for p in (hub / "cachefiles" / app / f"{gpu}.json.gz", hub / "cachefiles" / app / f"{gpu}.json")
                  if p.exists()), None)
    if not t1.exists() or cache is None:
        raise ConfigError(f"tasks: hub:{app}/{gpu} not found in {hub} (need kernels/{app}.json and "
                          f"cachefiles/{app}/{gpu}.json.gz); check the name or set TUNESMITH_BENCHMARK_HUB")
    application = json.loads(t1.read_text()).get("KernelSpecification", {})
    return load_cache_task(cache, read_t1_restrictions(t1), name=f"{app}/{gpu}",
                           info={"application": application, "app": app, "gpu": gpu})


def _hub_entry(hub: Path, spec: str) -> list[Task]:
    if not (hub / "cachefiles").is_dir():
        raise ConfigError(f"tasks: 'hub:{spec}' needs the benchmark hub, not found at {hub}; "
                          "set TUNESMITH_BENCHMARK_HUB or tasks.hub")
    app, _, gpu = spec.partition("/")
    if gpu:
        return [_hub_task(hub, app, gpu)]
    gpus = sorted(p.name.split(".")[0] for p in (hub / "cachefiles" / app).glob("*.json*")
                  if not p.name.split(".")[0].endswith("_T4"))
    if not gpus:
        raise ConfigError(f"tasks: hub:{app} has no cache files in {hub / 'cachefiles' / app}; check the app name")
    return [_hub_task(hub, app, g) for g in gpus]


def _problem_entry(spec: str) -> list[Task]:
    from generator.problems import load_problem_tasks

    name, _, gpu = spec.partition("/")
    path = PROBLEMS_DIR / name / "problem.toml"
    if not path.exists():
        raise ConfigError(f"tasks: problem:{name} not found ({path}); use a folder name under problems/")
    return load_problem_tasks(path, [gpu] if gpu else None)


def _load_entry(entry: str, hub: Path) -> list[Task]:
    if entry.startswith("live:"):
        from generator.live_tasks import load_live_entry

        return load_live_entry(entry)
    if entry.startswith("hub:"):
        return _hub_entry(hub, entry[4:])
    if entry.startswith("problem:"):
        return _problem_entry(entry[8:])
    if entry.endswith(".toml"):
        from generator.problems import load_problem_tasks

        return load_problem_tasks(entry)
    return load_tasks(entry)


def load_task_set(entries: list[str], tasks_cfg: TasksConfig) -> list[Task]:
    """The Tasks of a list of entries (loaded once per process); task names must be unique."""
    hub = tasks_cfg.hub_dir()
    tasks: list[Task] = []
    for entry in entries:
        key = (entry, str(hub))
        if key not in _LOADED:
            _LOADED[key] = _load_entry(entry, hub)
        tasks += _LOADED[key]
    names = [t.name for t in tasks]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"tasks: {dupes} listed twice; list each task once")
    return tasks
