"""Build-time pages of the docs: generated from the code and the benchmark JSON, never typed.

Sphinx calls `generate()` when the build starts (see `setup`); it writes Markdown fragments and PNG
figures into docs/_generated/ (git-ignored), which the pages pull in with MyST's `{include}`.
Sources of truth: the campaign schema (generator.config), the CLI's argparse parser
(generator.cli), the run-directory layout in generator/archive.py's docstring, litellm's price
table, and the JSON files the benchmark scripts write (benchmarks/results/).
"""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "_generated"


# ---------------------------------------------------------------- campaign file (pydantic schema)


def _type_name(annotation) -> str:
    """A field's type as a user writes it in TOML."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f'`"{a}"`' for a in args)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        names = [_type_name(a) for a in args if a is not type(None)]
        return " \\| ".join(names) + (" or none" if type(None) in args else "")
    if origin is list:
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict or annotation is dict:
        return "table"
    return {int: "integer", float: "number", str: "string", bool: "boolean"}.get(
        annotation, getattr(annotation, "__name__", str(annotation))
    )


def _default(field) -> str:
    from pydantic_core import PydanticUndefined

    if field.is_required():
        return "**required**"
    if field.default_factory is not None:
        value = field.default_factory()
        return "" if hasattr(value, "model_fields") else f"`{json.dumps(value)}`"
    if field.default is PydanticUndefined or field.default is None:
        return "none"
    return f"`{json.dumps(field.default)}`"


def _cell(text: str) -> str:
    """One table cell: one line, pipes escaped, 'quoted' values as code (so they copy without curly quotes)."""
    text = re.sub(r"'([^'\s]+)'", r"`\1`", " ".join(str(text).split()))
    return text.replace("|", "\\|")


def campaign_reference() -> str:
    """Every section and key of the campaign file: type, default, description (from generator.config)."""
    from pydantic import BaseModel

    from generator.config import RESUMABLE_CHANGES, CampaignConfig

    def on_resume(dotted: str) -> str:
        """`may change` where `tunesmith run`/`resume` accept a changed value for a run that exists."""
        parts = dotted.split(".")
        return "may change" if any(".".join(parts[:i]) in RESUMABLE_CHANGES for i in range(1, len(parts) + 1)) else ""

    sections: list[tuple[str, type]] = []

    def walk(model, prefix):
        sections.append((prefix, model))
        for name, field in model.model_fields.items():
            ann = field.annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                walk(ann, f"{prefix}.{name}" if prefix else name)

    walk(CampaignConfig, "")
    out = []
    for prefix, model in sections:
        keys = [
            (n, f)
            for n, f in model.model_fields.items()
            if not (isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel))
        ]
        if not keys:
            continue
        out.append(f"## `[{prefix}]`" if prefix else "## Top level")
        out.append("")
        out.append(_cell((model.__doc__ or "").strip()))
        out.append("")
        out.append("| key | type | default | on resume | meaning |")
        out.append("| --- | --- | --- | --- | --- |")
        for name, field in keys:
            dotted = f"{prefix}.{name}" if prefix else name
            out.append(
                f"| `{name}` | {_type_name(field.annotation)} | {_default(field)} | {on_resume(dotted)} "
                f"| {_cell(field.description or '')} |"
            )
        out.append("")
    return "\n".join(out)


def undescribed_keys() -> list[str]:
    """Keys of the campaign schema without a description (the docs test requires none)."""
    from pydantic import BaseModel

    from generator.config import CampaignConfig

    missing = []

    def walk(model, prefix):
        for name, field in model.model_fields.items():
            ann = field.annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                walk(ann, f"{prefix}{name}.")
            elif not field.description:
                missing.append(prefix + name)

    walk(CampaignConfig, "")
    return missing


# ---------------------------------------------------------------- CLI (argparse)


def _subparsers(parser):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def cli_reference() -> str:
    """`tunesmith --help` and every subcommand's help, as argparse prints it."""
    from generator.cli import _build_parser

    parser = _build_parser()
    out = ["## `tunesmith`", "", "```text", parser.format_help().rstrip(), "```", ""]

    def add(sub, prog):
        for name, p in sub.choices.items():
            out.extend([f"## `{prog} {name}`", "", "```text", p.format_help().rstrip(), "```", ""])
            inner = _subparsers(p)
            if inner:
                add(inner, f"{prog} {name}")

    add(_subparsers(parser), "tunesmith")
    return "\n".join(out).replace("usage: __main__.py", "usage: tunesmith")


# ---------------------------------------------------------------- run directory


def run_directory_layout() -> str:
    """The layout block of generator/archive.py's docstring, as the code documents it."""
    import generator.archive

    doc = generator.archive.__doc__ or ""
    block = re.search(r"```\n(RUN_DIR/.*?)```", doc, re.S)
    if not block:
        raise RuntimeError("generator/archive.py's docstring has no RUN_DIR/ layout block")
    rest = doc[block.end() :].strip()
    return "```text\n" + block.group(1).rstrip() + "\n```\n\n" + rest + "\n"


# ---------------------------------------------------------------- hosted-LLM cost from a recorded run

COST_MODELS = ("gpt-4o-mini", "gpt-4.1-mini", "gpt-4o", "claude-haiku-4-5", "claude-sonnet-4-5")


def token_usage() -> dict:
    """Prompt and completion tokens per 100 candidates of the quickstart, from its recorded JSON."""
    data = json.loads((ROOT / "benchmarks" / "results" / "quickstart_tokens.json").read_text())
    scale = 100 / data["candidates"]
    return {
        **data,
        "prompt_per_100": data["prompt_tokens"] * scale,
        "completion_per_100": data["completion_tokens"] * scale,
    }


def cost_table() -> str:
    """Expected tokens and USD per 100 candidates for a few hosted models (litellm's price table)."""
    import generator  # noqa: F401  (litellm's bundled price table, no network fetch)

    # isort: split
    import litellm

    use = token_usage()
    out = [
        f"Recorded: {use['candidates']} candidates, {use['calls']} calls, "
        f"{use['prompt_tokens']:,} prompt and {use['completion_tokens']:,} completion tokens "
        f"(`{use['command']}`, {use['date']}, {use['machine']}; `benchmarks/results/quickstart_tokens.json`).",
        "",
        "| model | prompt tokens / 100 candidates | completion tokens / 100 | USD / 100 candidates |",
        "| --- | ---: | ---: | ---: |",
    ]
    for model in COST_MODELS:
        price = litellm.model_cost.get(model)
        if not price:
            raise RuntimeError(f"litellm {_version('litellm')} has no price for {model!r}: pick another in COST_MODELS")
        usd = (
            use["prompt_per_100"] * price["input_cost_per_token"]
            + use["completion_per_100"] * price["output_cost_per_token"]
        )
        out.append(
            f"| `{price.get('litellm_provider', '')}/{model}` | {use['prompt_per_100']:,.0f} | "
            f"{use['completion_per_100']:,.0f} | {usd:.2f} |"
        )
    out.append("")
    out.append(f"Prices from litellm {_version('litellm')}'s `model_cost` table at build time.")
    return "\n".join(out)


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


def problems_table() -> str:
    """The shipped search spaces (problems/caches/NAME/GPU.json.gz), described from the caches themselves."""
    import numpy as np

    from generator.config import TasksConfig
    from generator.tasks.entries import load_task_set

    entries = sorted(
        f"problem:{c.parent.name}/{c.name.split('.')[0]}" for c in (ROOT / "problems" / "caches").glob("*/*.json.gz")
    )
    out = [
        "| task | parameters | Cartesian | valid | failed | optimum | median | median / optimum | within 5% | s per configuration |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for task in load_task_set(entries, TasksConfig(train=entries)):
        ok = ~task.key.failed & ~np.isnan(task.key.values)
        v = task.key.values[ok]
        best = v.max() if task.objective.higher_is_better else v.min()
        near = (v >= 0.95 * best) if task.objective.higher_is_better else (v <= 1.05 * best)
        cartesian = int(np.prod([len(vals) for vals in task.space.tune_params.values()]))
        out.append(
            f"| `problem:{task.name}` | {len(task.space.tune_params)} | {cartesian:,} | {len(task.space.valid):,} | "
            f"{int(task.key.failed.sum())} | {best:.4g} | {np.median(v):.4g} | {np.median(v) / best:.2f} | "
            f"{int(near.sum())} | {task.key.eval_seconds.mean():.3f} |"
        )
    out += [
        "",
        "Computed from the shipped cache files when these docs were built (objective: kernel time in ms; "
        "s per configuration: compile + verification + benchmark time as the cache records it).",
        "",
    ]
    return "\n".join(out)


def generate(out: Path = OUT) -> list[Path]:
    """Write every generated fragment and figure; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    pages = {
        "campaign-file.md": campaign_reference,
        "cli.md": cli_reference,
        "run-directory.md": run_directory_layout,
        "cost.md": cost_table,
        "problems.md": problems_table,
    }
    from results_pages import RESULTS

    pages.update(RESULTS)
    for name, make in pages.items():
        path = out / name
        path.write_text(make(), encoding="utf-8")
        written.append(path)
    from results_pages import figures

    written += figures(out)
    return written


def setup(app):
    """Sphinx extension: generate the fragments before any page is read."""
    app.connect("builder-inited", lambda app: generate())
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
