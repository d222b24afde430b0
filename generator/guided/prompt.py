"""The prompt of one llm_guided round, and reading the configurations out of the reply.

The prompt (prompts/guided_*.j2, overridable by [prompts] template_dir) follows the project's
heading contract so that the offline synthesizer reads it as an LLM would: `## Task` (kernel,
GPU, objective, budget, parameters, restrictions), `## Search-space statistics`, `## Results so
far` (best configurations with their measured results), `## Failed configurations`, `## Other
evaluated configurations`, `## Feedback on your last reply` (invalid proposals with the reason),
`## Instruction (operator: propose)`.

A reply is data, never code: `parse_reply` finds a JSON list of configurations in it (fenced or
not, with prose around it, Python-style literals tolerated) and `check_proposal` turns each item
into a configuration of the search space or says, in one line, why it is not one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import jinja2

from generator import parsing
from generator.errors import TunesmithError
from generator.llm.prompts import BUILTIN_TEMPLATES, _application_lines
from generator.tasks.restrictions import SAFE_BUILTINS

PARTS = ("guided_role", "guided_task", "statistics", "guided_results", "guided_instruction")


@dataclass
class Feedback:
    """What the last reply achieved: summary lines and the invalid proposals with their reason."""

    lines: list[str]
    invalid: list[dict]


class GuidedPromptBuilder:
    """Renders the messages of one round for one task."""

    def __init__(self, task, prompts_cfg=None):
        from generator.config import PromptsConfig
        from generator.scoring.statistics import space_statistics

        self.task = task
        self.cfg = prompts_cfg or PromptsConfig()
        dirs = [str(Path(self.cfg.template_dir))] if self.cfg.template_dir else []
        if self.cfg.template_dir and not Path(self.cfg.template_dir).is_dir():
            raise TunesmithError(
                f"prompts.template_dir = {self.cfg.template_dir!r} is not a directory; "
                "give a folder with *.j2 files or remove the key"
            )
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(dirs + [str(BUILTIN_TEMPLATES)]),
            trim_blocks=True,
            lstrip_blocks=True,
            undefined=jinja2.StrictUndefined,
        )
        # values in parameter order, never HTML-escaped (jinja's tojson sorts keys and escapes '<')
        self.env.filters["json"] = lambda v: json.dumps(v, default=_plain)
        self.stats = space_statistics(task).lines()
        self.names = list(task.space.tune_params)
        self._system = self._render("guided_role")

    def _render(self, part: str, **ctx) -> str:
        try:
            return self.env.get_template(f"{part}.j2").render(**ctx).strip()
        except jinja2.TemplateNotFound:
            raise TunesmithError(
                f"prompt template {part}.j2 not found in {self.env.loader.searchpath}; "
                "restore it or fix prompts.template_dir"
            ) from None
        except jinja2.TemplateError as exc:
            raise TunesmithError(f"prompt template {part}.j2: {exc}; fix the template") from None

    def _task_view(self, used_fevals: int, used_fraction: float) -> dict:
        t, s = self.task, self.stats
        return {
            "name": t.name,
            "kernel": t.info.get("kernel_name") or t.name,
            "device": t.info.get("device_name"),
            "objective": t.objective.name,
            "higher_is_better": t.objective.higher_is_better,
            "budget_fevals": s.get("budget_fevals", "?"),
            "budget_seconds": float(s.get("budget_seconds", 0) or 0),
            "used_fevals": used_fevals,
            "used_fraction": used_fraction,
            "params": {k: [_plain(v) for v in vals] for k, vals in t.space.tune_params.items()},
            "restrictions": list(t.space.restrictions),
            "application": _application_lines(t.info) if self.cfg.include_application_info else [],
            "stats": s,
        }

    def messages(
        self, results: dict, batch: int, used_fevals: int, used_fraction: float, feedback: Feedback | None
    ) -> list[dict]:
        """System and user messages of one round; `results` holds best, failed, others, counts."""
        view = self._task_view(used_fevals, used_fraction)
        example = {k: _plain(v[0]) for k, v in self.task.space.tune_params.items()}
        parts = [self._render("guided_task", t=view)]
        if self.cfg.include_statistics:
            parts.append(self._render("statistics", tasks=[view]))
        parts.append(
            self._render(
                "guided_results",
                names=self.names,
                feedback=feedback,
                objective=self.task.objective.name,
                higher_is_better=self.task.objective.higher_is_better,
                **results,
            )
        )
        parts.append(
            self._render(
                "guided_instruction", batch=batch, example=example, started=bool(results["best"] or results["failed"])
            )
        )
        return [
            {"role": "system", "content": self._system},
            {"role": "user", "content": "\n\n".join(p for p in parts if p) + "\n"},
        ]


def _plain(value):
    """numpy scalars -> Python numbers, so that json.dumps writes them."""
    item = getattr(value, "item", None)
    return item() if callable(item) else value


# ---------------------------------------------------------------- reading a reply

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
LIST_KEYS = ("configurations", "configs", "proposals", "candidates")


def _literal(text: str):
    """JSON, or a Python literal (single quotes, True/None, tuples, trailing commas); None if neither."""
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return parsing.literal_eval(
            re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", text)))
        )
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def _as_list(obj) -> list | None:
    """A list of proposals from a parsed value: a list, {"configurations": [...]}, or one object."""
    if isinstance(obj, (list, tuple)):
        if obj and all(isinstance(x, (int, float, str, bool)) for x in obj):
            return [list(obj)]  # one configuration written as a bare list of values
        return list(obj)
    if isinstance(obj, dict):
        for key in LIST_KEYS:
            if isinstance(obj.get(key), (list, tuple)):
                return list(obj[key])
        return [obj]
    return None


def _bracketed(text: str) -> list[str]:
    """Balanced [...] spans (outermost first, longest first), for JSON written without fences."""
    spans, depth, start = [], 0, None
    for i, ch in enumerate(text):
        if ch == "[":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return sorted(spans, key=len, reverse=True)


def _json_lines(text: str) -> list | None:
    """One object per line (JSON Lines), as some models answer."""
    items = [_literal(line) for line in text.splitlines() if line.strip().startswith("{")]
    items = [x for x in items if isinstance(x, dict)]
    return items or None


def parse_reply(text: str | None) -> tuple[list, str | None]:
    """The proposals in a reply and, when none could be read, why (for the next prompt's feedback)."""
    text = (text or "").replace("\r\n", "\n")
    if not text.strip():
        return [], "the reply was empty"
    blocks = [m.group(2) for m in _FENCE.finditer(text)]
    for chunk in blocks + [text] + _bracketed(text):
        found = _as_list(_literal(chunk))
        if found is None:
            found = _json_lines(chunk)
        if found:
            return found, None
    return [], "no JSON list of configurations was found in the reply"


# ---------------------------------------------------------------- checking a proposal


def _match_value(value, values: list):
    """The value of `values` that `value` stands for (1 == 1.0, "32" == 32), or raise KeyError."""
    for v in values:
        if isinstance(value, bool) == isinstance(v, bool) and value == v:
            return v
    if isinstance(value, str):
        for v in values:
            if str(v) == value.strip():
                return v
        parsed = _literal(value)
        if parsed is not None and not isinstance(parsed, str):
            return _match_value(parsed, values)
    raise KeyError(value)


def failed_restriction(task, config: tuple) -> str | None:
    """The first restriction a configuration breaks (None if all hold or none can be named)."""
    env = dict(zip(task.space.tune_params, config))
    for expr in task.space.restrictions:
        try:
            if not eval(expr, {"__builtins__": SAFE_BUILTINS}, dict(env)):  # noqa: S307 - the task's own restrictions
                return expr
        except Exception:  # noqa: BLE001 - a restriction that cannot be evaluated is reported as broken
            return expr
    return None


def check_proposal(item, task, space) -> tuple[tuple | None, str | None]:
    """(configuration, None) for a valid proposal, or (None, one-line reason) for an invalid one."""
    names = list(task.space.tune_params)
    params = task.space.tune_params
    if isinstance(item, (list, tuple)):
        if len(item) != len(names):
            return None, f"a list of {len(item)} values; give an object with the {len(names)} parameters by name"
        item = dict(zip(names, item))
    if not isinstance(item, dict):
        return None, f"not an object mapping parameter names to values ({type(item).__name__})"
    if isinstance(item.get("config"), dict):  # the results' own format, copied back
        item = item["config"]
    unknown = [k for k in item if k not in params]
    if unknown:
        return None, f"unknown parameter(s) {', '.join(map(str, unknown[:4]))}"
    config = []
    for name in names:
        if name not in item:
            if len(params[name]) == 1:  # a fixed parameter may be left out
                config.append(params[name][0])
                continue
            return None, f"parameter {name} is missing"
        try:
            config.append(_match_value(item[name], list(params[name])))
        except (KeyError, TypeError):
            return None, f"{name} = {item[name]!r} is not one of its values {list(map(_plain, params[name]))}"
    config = tuple(config)
    if space.row_of(config) is None:
        broken = failed_restriction(task, config)
        return None, f"breaks the restriction `{broken}`" if broken else "is not a valid configuration"
    return config, None
