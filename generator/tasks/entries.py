"""Task entries -> Tasks: the one resolver every command and campaign goes through.

An entry is one of
- `hub:APP/GPU` (one benchmark-hub space) or `hub:APP` (all GPUs of an app);
- `problem:NAME` or `problem:NAME/GPU` (a problem Tunesmith ships, problems/NAME/problem.toml), or
  `problem:PATH/problem.toml` (any problem file, e.g. the one `tunesmith template` writes);
- `live:PROBLEM[,fevals=N][,seconds=S][,device=I][,gpu=L]` (the kernel tuned for real, by the live room);
- a path: a benchmark-hub directory (all its spaces), a problem.toml or problem folder, a folder
  of problems or of cache files, a T1 kernel file (kernels/APP.json: all caches of that app), or
  a Kernel Tuner cache file (inside a hub layout it gets its app's restrictions).
The prefixed kinds are task sources named in the registry (`generator.registry`, "task_source"; the
interface is `generator.tasks.sources.TaskSource`), loaded when an entry needs one; paths are the built-in
fallback. `load_entry` dispatches each kind to one small source function; a bad entry is reported by
`_no_source` alone. Relative paths in a campaign file are tried against the current directory,
then against the campaign file's folder (`resolve_paths`).
"""

from __future__ import annotations

from pathlib import Path

from generator import registry
from generator.config import CampaignConfig, ConfigError, TasksConfig, hub_dir
from generator.errors import TunesmithError
from generator.tasks.cache import Task, TaskError, _read_json, load_cache_task, read_t1_restrictions
from generator.tasks.problems import PROBLEMS_DIR, load_problem_tasks

ENTRY_KINDS = "a cache file, a hub directory, 'hub:APP/GPU', 'problem:NAME' or 'live:NAME,fevals=N'"
_LOADED: dict[tuple, list[Task]] = {}


def _source(entry: str):
    """The registered TaskSource of an entry `NAME:REST` (None: not a registered name; then it is a path)."""
    name = entry.split(":", 1)[0]
    return registry.load("task_source", name) if name in registry.names("task_source") else None


# ---------------------------------------------------------------------------- the resolver


def load_entry(entry, hub: Path | None = None, base: Path | None = None) -> list[Task]:
    """The Tasks one entry names (see the module docstring for the kinds of entry)."""
    if isinstance(entry, str) and ":" in entry.split("/", 1)[0]:
        source = _source(entry)
        if source is not None:
            return source.load(entry, hub, base)
    return _path_entry(Path(entry))


def load_tasks(paths) -> list[Task]:
    """The Tasks of one entry or a list of them; a task loaded twice from one file counts once."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    return _unique([t for p in paths for t in load_entry(p)])


def load_task_set(entries: list[str], tasks_cfg: TasksConfig) -> list[Task]:
    """The Tasks of a campaign's entries (loaded once per process); task names must be unique."""
    hub = tasks_cfg.hub_dir()
    tasks: list[Task] = []
    for entry in entries:
        key = (entry, str(hub))
        if key not in _LOADED:
            _LOADED[key] = load_entry(entry, hub)
        tasks += _LOADED[key]
    names = [t.name for t in tasks]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"tasks: {dupes} listed twice; list each task once")
    return tasks


def _no_source(path: Path, why: str) -> TaskError:
    """The one error for an entry that names nothing loadable."""
    return TaskError(f"{path}: {why}; give {ENTRY_KINDS}")


# ---------------------------------------------------------------------------- sources


def _path_entry(path: Path) -> list[Task]:
    if path.is_dir():
        return _directory(path)
    if not path.exists():
        raise _no_source(path, "no such file or directory")
    if path.suffix == ".toml":
        return load_problem_tasks(path)
    if path.suffix == ".json" and path.parent.name == "kernels" and (path.parents[1] / "cachefiles").is_dir():
        return _t1_entry(path)
    root = _hub_root_of(path)
    if root is not None:
        return [_hub_cache_task(root, path.parent.name, path)]
    return [load_cache_task(path)]


def _directory(path: Path) -> list[Task]:
    if (path / "kernels").is_dir():
        return load_hub_dir(path)
    if (path / "problem.toml").is_file():
        return load_problem_tasks(path / "problem.toml")
    specs = sorted(path.glob("*/problem.toml"))
    if specs:  # a folder of problems: those with measured caches (a problem may not have any yet)
        loaded, errors = [], []
        for spec in specs:
            try:
                loaded += load_problem_tasks(spec)
            except TunesmithError as exc:
                errors.append(exc)
        if not loaded:
            raise errors[0]
        return loaded
    caches = [p for p in sorted(path.glob("*.json*")) if p.name.endswith((".json", ".json.gz")) and not _is_t4(p)]
    if caches:
        return [t for c in caches for t in _path_entry(c)]
    raise _no_source(
        path,
        "neither a benchmark hub (kernels/, cachefiles/), a problem folder (problem.toml) nor a folder of cache files",
    )


def load_hub_dir(root) -> list[Task]:
    """Every cache of a benchmark-hub layout: kernels/<app>.json + cachefiles/<app>/<GPU>.json.gz."""
    root = Path(root)
    if not (root / "kernels").is_dir():
        raise TaskError(f"{root}: no kernels/ folder; give a benchmark-hub directory (kernels/, cachefiles/)")
    tasks = [
        _hub_cache_task(root, t1.stem, cache)
        for t1 in sorted((root / "kernels").glob("*.json"))
        for cache in _hub_caches(root, t1.stem)
    ]
    if not tasks:
        raise TaskError(f"{root}: no cache files under cachefiles/<app>/ for the apps in kernels/; check the directory")
    return tasks


def _t1_entry(t1: Path) -> list[Task]:
    """A T1 kernel file of a hub layout: the caches of its app on every GPU."""
    root = t1.parents[1]
    caches = _hub_caches(root, t1.stem)
    if not caches:
        raise _no_source(t1, f"no cache files under {root / 'cachefiles' / t1.stem}")
    return [_hub_cache_task(root, t1.stem, c) for c in caches]


def _hub_entry(hub: Path, spec: str) -> list[Task]:
    if not (hub / "cachefiles").is_dir():
        raise ConfigError(
            f"tasks: 'hub:{spec}' needs the benchmark hub, not found at {hub}; set TUNESMITH_BENCHMARK_HUB or tasks.hub"
        )
    app, _, gpu = spec.partition("/")
    if not gpu:
        gpus = [p.name.split(".")[0] for p in _hub_caches(hub, app)]
        if not gpus:
            raise ConfigError(f"tasks: hub:{app} has no cache files in {hub / 'cachefiles' / app}; check the app name")
        return [t for g in gpus for t in _hub_entry(hub, f"{app}/{g}")]
    t1 = hub / "kernels" / f"{app}.json"
    cache = next(
        (
            p
            for p in (hub / "cachefiles" / app / f"{gpu}.json.gz", hub / "cachefiles" / app / f"{gpu}.json")
            if p.exists()
        ),
        None,
    )
    if not t1.exists() or cache is None:
        raise ConfigError(
            f"tasks: hub:{app}/{gpu} not found in {hub} (need kernels/{app}.json and "
            f"cachefiles/{app}/{gpu}.json.gz); check the name or set TUNESMITH_BENCHMARK_HUB"
        )
    return [_hub_cache_task(hub, app, cache)]


def _problem_entry(spec: str) -> list[Task]:
    if spec.endswith(".toml"):  # problem:OUT/matmul_template/problem.toml: a problem file by its path
        path = Path(spec)
        if not path.is_file():
            raise ConfigError(
                f"tasks: problem:{spec} not found (no file {path}); give the path of a problem.toml, "
                "or a folder name under problems/"
            )
        return load_problem_tasks(path, None)
    name, _, gpu = spec.partition("/")
    path = PROBLEMS_DIR / name / "problem.toml"
    if not path.exists():
        raise ConfigError(f"tasks: problem:{name} not found ({path}); use a folder name under problems/")
    return load_problem_tasks(path, [gpu] if gpu else None)


class _HubSource:
    """`hub:APP/GPU` or `hub:APP`: spaces of the benchmark hub (the campaign's `tasks.hub`, or the default)."""

    def load(self, entry: str, hub: Path | None = None, base: Path | None = None) -> list[Task]:
        return _hub_entry(Path(hub) if hub is not None else hub_dir(), entry[4:])

    def resolve(self, entry: str, base: Path) -> str:
        return entry  # found in the hub when loaded; the hub itself is resolved with the campaign's paths


class _ProblemSource:
    """`problem:NAME[/GPU]` (a problem Tunesmith ships) or `problem:PATH/problem.toml` (any problem file)."""

    def load(self, entry: str, hub: Path | None = None, base: Path | None = None) -> list[Task]:
        return _problem_entry(entry[8:])

    def resolve(self, entry: str, base: Path) -> str:
        if not entry.endswith(".toml"):
            return entry
        found = _find(entry[8:], base)  # a problem file's path, found as paths are
        if found is None:
            raise TaskError(f"{entry!r} not found ({_looked_in(entry[8:], base)}); give the path of a problem.toml")
        return f"problem:{found}"


HUB_SOURCE = _HubSource()
PROBLEM_SOURCE = _ProblemSource()


def _is_t4(cache: Path) -> bool:
    # <GPU>_T4 files hold the same measurements in T4 format; the plain cache suffices
    return cache.name.split(".")[0].endswith("_T4")


def _hub_caches(root: Path, app: str) -> list[Path]:
    return [p for p in sorted((root / "cachefiles" / app).glob("*.json*")) if not _is_t4(p)]


def _hub_cache_task(root: Path, app: str, cache: Path) -> Task:
    t1 = root / "kernels" / f"{app}.json"
    application = _read_json(t1).get("KernelSpecification", {})
    gpu = cache.name.split(".")[0]
    return load_cache_task(
        cache, read_t1_restrictions(t1), name=f"{app}/{gpu}", info={"application": application, "app": app, "gpu": gpu}
    )


def _hub_root_of(cache: Path) -> Path | None:
    """The hub root if `cache` sits at <root>/cachefiles/<app>/<GPU>.json[.gz] with <root>/kernels/<app>.json."""
    parts = cache.resolve().parts
    if len(parts) >= 3 and parts[-3] == "cachefiles":
        root = cache.resolve().parents[2]
        if (root / "kernels" / f"{parts[-2]}.json").is_file():
            return root
    return None


def _unique(tasks: list[Task]) -> list[Task]:
    """Drop a task loaded twice from the same file; refuse two different tasks with one name."""
    seen: dict[str, Task] = {}
    out = []
    for t in tasks:
        other = seen.get(t.name)
        if other is None:
            seen[t.name] = t
            out.append(t)
        elif other.source is None or t.source is None or Path(other.source).resolve() != Path(t.source).resolve():
            raise TaskError(
                f"{t.source}: task name {t.name!r} is also used by {other.source}; "
                "give each task file a distinct name (or load it from its hub directory)"
            )
    return out


# ---------------------------------------------------------------------------- a campaign's paths


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
    for key in ("train", "test", "validation"):
        setattr(
            cfg.tasks,
            key,
            [_resolved(entry, f"tasks.{key}[{i}]", base) for i, entry in enumerate(getattr(cfg.tasks, key))],
        )
    if cfg.prompts.template_dir:
        found = _find(cfg.prompts.template_dir, base)
        if found is None:
            raise ConfigError(
                f"prompts.template_dir: {cfg.prompts.template_dir!r} not found; give a folder of *.j2 files"
            )
        cfg.prompts.template_dir = str(found)
    if cfg.llm.model.startswith("replay/"):
        found = _find(cfg.llm.model.split("/", 1)[1], base)
        if found is None:
            raise ConfigError(
                f"llm.model: {cfg.llm.model!r}: run directory not found; give replay/<run dir of an earlier run>"
            )
        cfg.llm.model = f"replay/{found}"
    return cfg, cfg.model_dump(mode="json")


def _resolved(entry: str, where: str, base: Path) -> str:
    """One campaign entry made absolute, and checked where checking is cheap (a live task's device)."""
    source = _source(entry) if ":" in entry.split("/", 1)[0] else None
    if source is not None:  # checked (syntax, problem, device) before the run starts
        try:
            return source.resolve(entry, base)
        except TunesmithError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    found = _find(entry, base)
    if found is None:
        raise ConfigError(f"{where}: {entry!r} not found ({_looked_in(entry, base)}); give {ENTRY_KINDS}")
    return str(found)
