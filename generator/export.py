"""Winners become modules: `generated_algorithms/<name>.py`, importable by Kernel Tuner as a strategy.

The exported module holds the candidate's code with the tuned defaults written into it (edited
through the syntax tree, so comments and layout survive), a Kernel Tuner `tune()` entry point that
does what `kernel_tuner.strategies.wrapper.OptAlgWrapper` does, and its provenance in the docstring.
It needs only the standard library and numpy (plus Kernel Tuner when `tune()` is called).

Candidate code is untrusted until it is exported; nothing here runs it, it is only parsed.
"""

from __future__ import annotations

import ast
import datetime as _dt
import json
import keyword
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from generator.errors import TunesmithError

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "generated_algorithms"
ALLOWED_IMPORTS = {"numpy", "kernel_tuner"}  # besides the standard library


class ExportError(TunesmithError):
    """A candidate that cannot be exported as it is."""


@dataclass
class OptimizerCode:
    """What the syntax tree says about a candidate's optimizer class."""

    class_name: str
    hyperparameters: dict  # name -> {"type", "low", "high", "log", "choices", "default"}
    description: str = ""


def parse_optimizer(source: str, origin: str = "candidate") -> OptimizerCode:
    """Find the optimizer class (the last class with `__call__`) and its declared hyperparameters."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ExportError(f"{origin}: code does not parse (line {exc.lineno}: {exc.msg}); export a candidate that ran") from None
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)
               and any(isinstance(b, ast.FunctionDef) and b.name == "__call__" for b in n.body)]
    if not classes:
        raise ExportError(f"{origin}: no class with __call__(self, func, searchspace); it is not an optimizer")
    cls = classes[-1]
    hp_node = _hyperparameters_node(cls)
    hyperparameters = {}
    if hp_node is not None:
        try:
            hyperparameters = ast.literal_eval(hp_node)
        except ValueError:
            raise ExportError(f"{origin}: {cls.name}.hyperparameters is not a literal dict; write it as plain data") from None
    return OptimizerCode(cls.name, hyperparameters, ast.get_docstring(cls) or "")


def _hyperparameters_node(cls: ast.ClassDef) -> ast.expr | None:
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "hyperparameters"
                                                for t in stmt.targets):
            return stmt.value
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) \
                and stmt.target.id == "hyperparameters" and stmt.value is not None:
            return stmt.value
    return None


def _offsets(source: str) -> list[int]:
    starts, pos = [], 0
    for line in source.splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    return starts + [pos]


def with_defaults(source: str, values: dict) -> str:
    """The source with new defaults for the given hyperparameters, in the dict and in `__init__`."""
    if not values:
        return source
    tree = ast.parse(source)
    info = parse_optimizer(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == info.class_name
               and any(isinstance(b, ast.FunctionDef) and b.name == "__call__" for b in n.body))
    edits = []  # (node, new literal)
    hp = _hyperparameters_node(cls)
    if isinstance(hp, ast.Dict):
        for key, spec in zip(hp.keys, hp.values):
            name = key.value if isinstance(key, ast.Constant) else None
            if name in values and isinstance(spec, ast.Dict):
                for k, v in zip(spec.keys, spec.values):
                    if isinstance(k, ast.Constant) and k.value == "default":
                        edits.append((v, values[name]))
    init = next((b for b in cls.body if isinstance(b, ast.FunctionDef) and b.name == "__init__"), None)
    if init is not None:
        args = init.args.posonlyargs + init.args.args
        for arg, default in zip(args[len(args) - len(init.args.defaults):], init.args.defaults):
            if arg.arg in values:
                edits.append((default, values[arg.arg]))
        for arg, default in zip(init.args.kwonlyargs, init.args.kw_defaults):
            if default is not None and arg.arg in values:
                edits.append((default, values[arg.arg]))
    starts = _offsets(source)
    text = source
    for node, value in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        # ast offsets count UTF-8 bytes; code is ASCII in practice, and a mismatch is caught below
        a = starts[node.lineno - 1] + node.col_offset
        b = starts[node.end_lineno - 1] + node.end_col_offset
        text = text[:a] + _literal(_plain(value)) + text[b:]
    check = parse_optimizer(text)
    for name, value in values.items():
        if name in check.hyperparameters and check.hyperparameters[name].get("default") != _plain(value):
            raise ExportError(f"could not set the default of {name!r}; edit the candidate's hyperparameters by hand")
    return text


def _literal(value) -> str:
    """Python source for a value; strings in double quotes like the rest of the code base."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _plain(value):
    """numpy scalars as Python literals, so that repr() round-trips through the parser."""
    return value.item() if hasattr(value, "item") else value


def check_imports(source: str, origin: str = "candidate") -> None:
    """Exported modules use only the standard library, numpy and Kernel Tuner."""
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in ALLOWED_IMPORTS:
                raise ExportError(f"{origin}: imports {name!r}; exported modules may use only the standard "
                                  "library and numpy; remove that import from the candidate")


@dataclass
class Provenance:
    """Where an exported optimizer came from and how well it did."""

    campaign: str
    candidate_id: str
    ancestors: list[str]
    generator: str  # the model string, or "offline synthesizer (synth/...)"
    run_dir: str = ""
    description: str = ""
    scores: dict = field(default_factory=dict)  # {"train": {...}, "test": {...}} before/after HPO
    hpo: dict = field(default_factory=dict)  # {"trials", "best_params", "study", "storage"}
    date: str = field(default_factory=lambda: _dt.date.today().isoformat())


def _fmt(score) -> str:
    return "failed" if score is None else f"{score:.3f}"


def _indented(text: str, width: int = 100) -> list[str]:
    """Text indented by four spaces, long lines wrapped at their own indentation."""
    out = []
    for line in text.strip().splitlines():
        indent = "    " + line[:len(line) - len(line.lstrip())]
        out += textwrap.wrap(line.strip(), width, initial_indent=indent, subsequent_indent=indent) or [""]
    return out


def _short(values: dict) -> str:
    """Tuned values for reading (the code holds them exactly)."""
    return json.dumps({k: (float(f"{v:.4g}") if isinstance(v, float) else v) for k, v in sorted(values.items())})


def _docstring(name: str, info: OptimizerCode, prov: Provenance, values: dict, about: str = "") -> str:
    summary = (prov.description or info.description or info.class_name).strip().splitlines()[0].rstrip(".")
    if len(summary) > 90:  # the first sentence is enough here; the full text follows below
        summary = summary.split(": ")[0] if ": " in summary[:60] else summary[:87] + "..."
    lines = [f"{name}: {summary} (generated by Tunesmith).", "",
             "Use it as a Kernel Tuner strategy:", "",
             f"    import generated_algorithms.{name} as strategy",
             "    kernel_tuner.tune_kernel(..., strategy=strategy, strategy_options={\"max_fevals\": 200})", "",
             "Provenance:",
             f"- campaign: {prov.campaign}" + (f" (run {prov.run_dir})" if prov.run_dir else ""),
             f"- candidate: {prov.candidate_id}; ancestors: {', '.join(prov.ancestors) or 'none'}",
             f"- written by: {prov.generator}",
             f"- exported: {prov.date}"]
    for split in ("train", "test"):
        s = prov.scores.get(split)
        if s:
            tasks = ", ".join(s.get("tasks", []))
            label = "tuned" if prov.hpo.get("accepted", True) else "best trial's values (not kept)"
            reps = f"; {prov.hpo['report_repeats']} repeats per task" if prov.hpo.get("report_repeats") else ""
            lines.append(f"- score P on {split} tasks ({tasks}{reps}): default {_fmt(s.get('before'))}, "
                         f"{label} {_fmt(s.get('after'))}")
    if prov.hpo:
        kept = "defaults kept" if prov.hpo.get("accepted", True) else \
            "defaults kept (the best trial did not beat them on fresh seeds)"
        lines.append(f"- Optuna: {prov.hpo.get('trials', 0)} trials ({prov.hpo.get('sampler', 'TPE')}), "
                     f"tuned values: {_short(values) if values else kept}")
    if about.strip():
        lines += ["", "About the algorithm (from its generator):", ""] + _indented(about)
    text = "\n".join(lines)
    return text.replace("\\", "\\\\").replace('"""', "'''")


TUNE_TEMPLATE = '''

# --- Kernel Tuner entry point (written by `tunesmith export`) ---------------------------------

OPTIMIZER = {cls}
HYPERPARAMETERS = {cls}.hyperparameters if hasattr({cls}, "hyperparameters") else {{}}
PROVENANCE = {provenance}

# Kernel Tuner's convention for documenting strategy options: name -> (description, default).
_options = {{name: (str(spec.get("type", "")), spec.get("default")) for name, spec in HYPERPARAMETERS.items()}}
_options["budget"] = ("evaluations the optimizer plans for (its own stop; max_fevals still applies)", None)
_options["seed"] = ("seed for numpy's and random's global generators (None: leave them alone)", None)


def tune(searchspace, runner, tuning_options):
    """Kernel Tuner strategy entry point: `strategy=<this module>`; hyperparameters via strategy_options."""
    from kernel_tuner.strategies.common import CostFunc
    from kernel_tuner.util import StopCriterionReached

    options = dict(tuning_options.strategy_options or {{}})
    kwargs = {{k: options[k] for k in HYPERPARAMETERS if k in options}}
    if options.get("budget") is not None:
        kwargs["budget"] = int(options["budget"])
    if options.get("seed") is not None and "seed" not in HYPERPARAMETERS:
        import random

        import numpy

        random.seed(options["seed"])
        numpy.random.seed(options["seed"])
    optimizer = OPTIMIZER(**kwargs)
    # As OptAlgWrapper: configurations are passed as they are, no scaling and no snapping.
    costfunc_kwargs = getattr(optimizer, "costfunc_kwargs", {{"scaling": False, "snap": False}})
    cost_func = CostFunc(searchspace, tuning_options, runner, **costfunc_kwargs)
    if costfunc_kwargs.get("scaling"):
        cost_func.get_bounds_x0_eps()
    try:
        optimizer(cost_func, searchspace)
    except StopCriterionReached as exc:
        if tuning_options.verbose:
            print(exc)
    return cost_func.results
'''


def module_source(name: str, source: str, prov: Provenance, values: dict | None = None) -> str:
    """The text of `generated_algorithms/<name>.py` for a candidate's source and tuned values."""
    values = values or {}
    info = parse_optimizer(source, f"candidate {prov.candidate_id}")
    check_imports(source, f"candidate {prov.candidate_id}")
    unknown = sorted(set(values) - set(info.hyperparameters))
    if unknown:
        raise ExportError(f"tuned values {unknown} are not hyperparameters of {info.class_name}; "
                          "re-run `tunesmith hpo` for this candidate")
    code, about = _split_docstring(with_defaults(source, values))
    prov_dict = {k: v for k, v in prov.__dict__.items()}
    prov_dict["tuned_values"] = values
    text = (f'"""{_docstring(name, info, prov, values, about)}\n"""\n\n{code}\n'
            + TUNE_TEMPLATE.format(cls=info.class_name, provenance=_pyliteral(prov_dict)))
    compile(text, f"{name}.py", "exec")  # fail here, not when a user imports it
    return text


def _split_docstring(source: str) -> tuple[str, str]:
    """The source without its module docstring, and that docstring (it moves into the module's own)."""
    tree = ast.parse(source)
    first = tree.body[0] if tree.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return source.strip("\n"), ""
    lines = source.splitlines(keepends=True)
    rest = lines[:first.lineno - 1] + lines[first.end_lineno:]
    return "".join(rest).strip("\n"), first.value.value


def _pyliteral(data) -> str:
    """A Python literal for JSON-like data (json's true/null are not Python)."""
    import pprint

    return pprint.pformat(json.loads(json.dumps(data, default=str)), width=100, sort_dicts=False)


def valid_module_name(name: str) -> str:
    """NAME must be importable: a lower-case identifier that is not a keyword."""
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_") or name != name.lower():
        raise ExportError(f"--name {name!r} is not a module name; use lower-case letters, digits and underscores, "
                          "e.g. --name hybrid_descent")
    return name


def write_module(name: str, text: str, out_dir: Path | None = None, overwrite: bool = True) -> Path:
    """Write the module into the generated_algorithms package (or `out_dir`)."""
    out_dir = Path(out_dir or PACKAGE_DIR)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not (out_dir / "__init__.py").exists():
        (out_dir / "__init__.py").write_text('"""Optimizers generated by Tunesmith."""\n')
    path = out_dir / f"{valid_module_name(name)}.py"
    if path.exists() and not overwrite:
        raise ExportError(f"{path} exists; pick another --name or pass --force")
    path.write_text(text)
    return path


# -- from a run directory ----------------------------------------------------------------------

def generator_label(model: str | None) -> str:
    """Who wrote the code, in words: the offline synthesizer is not an LLM and is never called one."""
    if not model:
        return "unknown"
    if model.startswith("synth/"):
        return f"offline synthesizer ({model}), no LLM"
    if model.startswith("replay/"):
        return f"replayed recorded exchanges ({model})"
    return f"LLM {model} (through litellm)"


def ancestors(archive, cid: str) -> list[str]:
    """Every ancestor of a candidate, nearest first."""
    by_id = {c.id: c for c in archive.candidates()}
    out, frontier = [], list(by_id[cid].parent_ids) if cid in by_id else []
    while frontier:
        pid = frontier.pop(0)
        if pid in out or pid not in by_id:
            continue
        out.append(pid)
        frontier += by_id[pid].parent_ids
    return out


def choose_candidate(archive, hpo_results: dict):
    """The tuned candidate with the best tuned training score, else the best candidate of the run."""
    tuned = [r for r in hpo_results.values() if r.train and r.train.after is not None]
    if tuned:
        return archive.candidate(max(tuned, key=lambda r: r.train.after).candidate_id)
    best = archive.best(1)
    if not best:
        raise ExportError(f"{archive.run_dir}: no successful candidate to export; run or resume the campaign first")
    return best[0]


def provenance_of(archive, candidate, result) -> Provenance:
    """Provenance of a candidate from its run directory and its HPO result (or None)."""
    config = archive.config
    run_info = archive.run_dir / "run.json"
    campaign = config.get("name") or (json.loads(run_info.read_text()).get("campaign") if run_info.exists() else "")
    scores, hpo = {}, {}
    if result is not None:
        for split in ("train", "test"):
            s = getattr(result, split)
            if s is not None:
                scores[split] = {"tasks": s.tasks, "before": s.before, "after": s.after,
                                 "per_task_after": s.per_task_after}
        hpo = {"trials": result.trials.get("complete", 0) + result.trials.get("pruned", 0), "sampler": "TPE",
               "study": result.study_name, "repeats": result.repeats, "best_params": result.best_params,
               "accepted": result.accepted, "report_repeats": result.report_repeats,
               "pruned": result.trials.get("pruned", 0)}
    elif candidate.score is not None:
        train = list(candidate.per_task)
        scores["train"] = {"tasks": train, "before": candidate.score, "after": None}
    desc = (candidate.description or "").lstrip("# ").strip()
    return Provenance(campaign or "unnamed", candidate.id, ancestors(archive, candidate.id),
                      generator_label((config.get("llm") or {}).get("model")), str(archive.run_dir),
                      desc, scores, hpo)


@dataclass
class Exported:
    """What `tunesmith export` wrote."""

    module: Path
    report: Path
    candidate_id: str
    tuned_values: dict


def export_run(run_dir, name: str, cid: str | None = None, out_dir: Path | None = None,
               overwrite: bool = True) -> Exported:
    """Export a run's candidate (default: the best tuned one) as generated_algorithms/<name>.py."""
    from generator.archive import Archive
    from generator.hpo import load_results

    valid_module_name(name)
    archive = Archive.open(run_dir)
    results = load_results(archive.run_dir)
    candidate = archive.candidate(cid) if cid else choose_candidate(archive, results)
    source = archive.code(candidate)
    if not source:
        raise ExportError(f"{run_dir}: candidate {candidate.id} has no code; choose another --id")
    result = results.get(candidate.id)
    values = {}
    if result is not None:
        values = {k: v for k, v in result.chosen_params.items() if result.defaults.get(k) != v}
    prov = provenance_of(archive, candidate, result)
    path = write_module(name, module_source(name, source, prov, values), out_dir, overwrite)
    report = write_report(path, name, prov, values)
    return Exported(path, report, candidate.id, values)


def write_report(module: Path, name: str, prov: Provenance, values: dict) -> Path:
    """A Markdown report beside the module: reports/<name>.md."""
    hpo = prov.hpo
    lines = [f"# {name}", "", prov.description or "", "",
             f"- campaign: {prov.campaign} (run `{prov.run_dir}`)",
             f"- candidate: {prov.candidate_id}; ancestors: {', '.join(prov.ancestors) or 'none'}",
             f"- written by: {prov.generator}", f"- exported: {prov.date}",
             f"- tuned values: `{_short(values) if values else 'defaults kept'}`"]
    if hpo:
        lines.append(f"- Optuna: {hpo.get('trials')} trials ({hpo.get('pruned', 0)} pruned), {hpo.get('repeats')} "
                     f"repeats per task each; study `{hpo.get('study')}`")
        if not hpo.get("accepted", True):
            changed = {k: v for k, v in hpo.get("best_params", {}).items()}
            lines.append(f"- best trial's values, not kept (no better than the defaults on fresh seeds): "
                         f"`{_short(changed)}`")
        lines.append(f"- scores below: mean P, {hpo.get('report_repeats') or '?'} repeats per task, seeds the "
                     "trials never saw")
    lines += ["", "| tasks | split | P default | P tuned |", "| --- | --- | --- | --- |"]
    if hpo and not hpo.get("accepted", True):
        lines[-2] = "| tasks | split | P default (exported) | P best trial's values (not kept) |"
    for split in ("train", "test"):
        s = prov.scores.get(split)
        if s:
            lines.append(f"| {', '.join(s.get('tasks', []))} | {split} | {_fmt(s.get('before'))} | "
                         f"{_fmt(s.get('after'))} |")
    path = module.parent / "reports" / f"{name}.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path
