"""Prompts from jinja2 templates (prompts/*.j2), and extraction of code from the reply.

The user message is Markdown whose headings follow the prompt <-> synthesizer contract
(`## Task`, `## Search-space statistics`, `## Interface`, `## Parent N (id: .., score: ..)`,
`## Error feedback`, `## Existing algorithms`, `## Instruction (operator: ..)`), so the offline
synthesizer reads it as an LLM would. Users may override any template with [prompts] template_dir.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from generator import parsing
from generator.errors import TunesmithError
from generator.resources import PROMPTS_DIR
from generator.scoring.fitness import CandidateError

# the checkout's prompts/, or the wheel's copy (generator/resources.py)
BUILTIN_TEMPLATES = PROMPTS_DIR
OPERATORS = ("new", "refine", "simplify", "fix", "crossover")
# operators that may be answered as SEARCH/REPLACE blocks on Parent 1's code ([evolution] edit = "diff")
DIFF_OPERATORS = ("refine", "simplify", "fix")
PARTS = (
    ("role", "task", "statistics", "interface", "parents", "error", "existing", "nearcopy", "edit_diff", "edit_failed")
    + tuple(f"op_{o}" for o in OPERATORS)
    + tuple(f"op_{o}_diff" for o in DIFF_OPERATORS)
)


@dataclass
class ParentView:
    """What a prompt shows of a parent candidate."""

    id: str
    score: float | None
    code: str
    description: str = ""
    per_task: dict[str, float | None] = field(default_factory=dict)


@dataclass
class Reply:
    """What was extracted from a reply: a one-line description and the code (None if there was none)."""

    description: str
    code: str | None
    truncated: bool = False  # the reply stopped at the token limit (the fix prompt asks for shorter code)


def _application_lines(info: dict) -> list[str]:
    """The kernel specification (T1 `KernelSpecification`) as short `key: value` lines."""
    app = info.get("application") or {}
    if not isinstance(app, dict):
        return [str(app)[:400]]
    lines = []
    for key, value in app.items():
        if value in (None, "", [], {}):
            continue
        if key == "Arguments" and isinstance(value, list):
            value = "; ".join(
                f"{a.get('Name')} ({a.get('Type')}, {a.get('AccessType')}, size {a.get('Size')})"
                for a in value
                if isinstance(a, dict)
            )
        text = value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "))
        lines.append(f"{key}: {text[:400]}")
    return lines


def template_environment(template_dir: str | None) -> jinja2.Environment:
    """A jinja2 environment over `template_dir` (if given) in front of the built-in prompts/."""
    if template_dir and not Path(template_dir).is_dir():
        raise TunesmithError(
            f"prompts.template_dir = {template_dir!r} is not a directory; "
            "give a folder with *.j2 files or remove the key"
        )
    dirs = [str(Path(template_dir))] if template_dir else []
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(dirs + [str(BUILTIN_TEMPLATES)]),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        undefined=jinja2.StrictUndefined,
    )


def render_part(env: jinja2.Environment, part: str, **ctx) -> str:
    """Render `<part>.j2`; a missing or broken template is a one-line TunesmithError."""
    try:
        return env.get_template(f"{part}.j2").render(**ctx).strip()
    except jinja2.TemplateNotFound:
        raise TunesmithError(
            f"prompt template {part}.j2 not found in {env.loader.searchpath}; restore it or fix prompts.template_dir"
        ) from None
    except jinja2.TemplateError as exc:
        raise TunesmithError(f"prompt template {part}.j2: {exc}; fix the template") from None


class PromptBuilder:
    """Renders the messages of one generation prompt for the campaign's training tasks."""

    def __init__(self, tasks, prompts_cfg, statistics: dict | None = None):
        self.tasks = tasks
        self.cfg = prompts_cfg
        self.env = template_environment(prompts_cfg.template_dir)
        self._stats = statistics
        self._fixed: dict[str, str] | None = None

    def _render(self, part: str, **ctx) -> str:
        return render_part(self.env, part, **ctx)

    def statistics(self) -> dict[str, dict[str, str]]:
        """Per task name, the `key -> value` statistics lines (computed once)."""
        if self._stats is None:
            from generator.scoring.statistics import space_statistics

            self._stats = {t.name: space_statistics(t).lines() for t in self.tasks}
        return self._stats

    def _task_views(self) -> list[dict]:
        stats = self.statistics()
        views = []
        for t in self.tasks:
            s = stats.get(t.name, {})
            views.append(
                {
                    "name": t.name,
                    "kernel": t.info.get("kernel_name") or t.name,
                    "device": t.info.get("device_name"),
                    "objective": t.objective.name,
                    "higher_is_better": t.objective.higher_is_better,
                    "budget_fevals": s.get("budget_fevals", "?"),
                    "budget_seconds": float(s.get("budget_seconds", 0) or 0),
                    "params": t.space.tune_params,
                    "restrictions": list(t.space.restrictions),
                    "application": _application_lines(t.info) if self.cfg.include_application_info else [],
                    "stats": s,
                }
            )
        return views

    def _fixed_parts(self) -> dict[str, str]:
        """The parts that are the same in every prompt of the campaign."""
        if self._fixed is None:
            views = self._task_views()
            self._fixed = {
                "role": self._render("role"),
                "task": self._render("task", tasks=views),
                "statistics": self._render("statistics", tasks=views) if self.cfg.include_statistics else "",
                "interface": self._render("interface"),
            }
        return self._fixed

    def messages(
        self,
        operator: str,
        parents: list[ParentView] = (),
        error: dict | None = None,
        existing: list[ParentView] = (),
        copied: ParentView | None = None,
        similarity: float = 0.0,
        edit: str = "full",
        edit_error: str | None = None,
    ) -> list[dict]:
        """System and user messages for one operator application; `copied`: the archived candidate
        that the previous answer to this request nearly copied (asked once more, saying so);
        `edit = "diff"` asks for SEARCH/REPLACE blocks, `edit_error` for full code after blocks that
        did not apply (saying why)."""
        if operator not in OPERATORS:
            raise ValueError(f"unknown operator {operator!r}; use one of {OPERATORS}")
        fixed = self._fixed_parts()
        parts = [fixed["task"], fixed["statistics"], fixed["interface"]]
        if parents:
            parts.append(self._render("parents", parents=list(parents)))
        if error:
            parts.append(self._render("error", error=quoted_error(error)))
        if operator == "new" and existing:
            parts.append(self._render("existing", existing=list(existing)[: self.cfg.max_existing]))
        if copied is not None:  # its code is shown unless it is a parent, whose code is shown already
            parts.append(
                self._render(
                    "nearcopy",
                    copied=copied,
                    similarity=similarity,
                    show_code=bool(copied.code) and copied.id not in {p.id for p in parents},
                )
            )
        if edit_error is not None:
            parts.append(self._render("edit_failed", reason=edit_error))
        diff = edit == "diff" and operator in DIFF_OPERATORS and edit_error is None
        parts.append(self._render(f"op_{operator}_diff" if diff else f"op_{operator}", existing=bool(existing)))
        user = "\n\n".join(p for p in parts if p)
        return [{"role": "system", "content": fixed["role"]}, {"role": "user", "content": user + "\n"}]


def quoted_error(error: dict) -> dict:
    """A recorded error as the fix prompt quotes it: every field the run could write capped and escaped
    (also in records from before the caps), the traceback in a fence that its own text cannot close."""
    e = CandidateError(
        "exception",
        str(error.get("message", "")),
        _tail(str(error.get("traceback") or ""), 25),
        error.get("line"),
        error.get("lineno"),
        error.get("task"),
    )
    kind = str(error.get("kind", "error"))
    longest = max((len(run) for run in re.findall(r"`+", e.traceback)), default=0)
    return {
        "kind": kind if re.fullmatch(r"\w{1,20}", kind) else "error",
        "message": e.message,
        "line": e.line,
        "lineno": e.lineno,
        "task": e.task,
        "traceback": e.traceback,
        "fence": "`" * max(3, longest + 1),
    }


def _tail(text: str, n: int) -> str:
    lines = text.rstrip().splitlines()
    return "\n".join(lines[-n:])


# ---------------------------------------------------------------- reply extraction


def extract_reply(text: str | None, finish_reason: str | None = None) -> Reply:
    """Description and code of a reply; robust to the shapes real replies take (generator.llm.reply_code)."""
    from generator.llm.reply_code import description, find_code

    found = find_code(text, finish_reason)
    return Reply(description(text or "", found), found.code, found.truncated)


def normalise_code(code: str) -> str:
    """Code with comments, docstrings and layout removed, for spotting duplicates."""
    plain = "\n".join(line.split("#", 1)[0].rstrip() for line in code.splitlines() if line.strip())
    try:
        tree = parsing.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # RecursionError: nested too deeply
        return plain
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(getattr(body[0], "value", None), ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    try:
        return ast.unparse(parsing.printable_constants(tree))
    except RecursionError:  # parses, but too deep for ast.unparse
        return plain
