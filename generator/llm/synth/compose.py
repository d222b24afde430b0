"""A composition (which component fills which slot, plus hyperparameter defaults) -> optimizer source.

The composition travels inside the source as one comment line, `# tunesmith-synth: {json}`, so a
later prompt that shows this code as a parent can be read back (`read_composition`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from generator.llm.synth import components as C
from generator.llm.synth import moves as M
from generator.llm.synth import screening as S
from generator.llm.synth import small_spaces as SS
from generator.llm.synth import variation as V

MARKER = "# tunesmith-synth:"
FORMAT_VERSION = 1

# slot -> options, per scheme; the order is the order of the generated methods.
SLOT_OPTIONS: dict[str, dict] = {
    "init": {**C.INITS, **SS.INITS},
    "neighbourhood": M.NEIGHBOURHOODS,
    "screening": {**S.SCREENINGS, **SS.SCREENINGS},
    "acceptance": M.ACCEPTANCES,
    "memory": M.MEMORIES,
    "jump": {**M.JUMPS, **SS.JUMPS},
    "restart": {**M.RESTARTS, **SS.RESTARTS},
    "step": V.STEPS,
    "crossover": V.CROSSOVERS,
    "replacement": V.REPLACEMENTS,
    "local_search": V.LOCAL_SEARCHES,
    "brood": V.BROODS,
}
TRAJECTORY_SLOTS = ("init", "neighbourhood", "screening", "acceptance", "memory", "jump", "restart")
POPULATION_SLOTS = ("init", "step", "crossover", "brood", "replacement", "restart", "local_search")
LOCAL_SEARCH_SLOTS = ("neighbourhood", "screening", "acceptance")  # used by memetic populations
# What fills a slot that becomes active without a choice (e.g. after a refinement changed the scheme).
PLAIN = {
    "init": "spread",
    "neighbourhood": "Hamming",
    "screening": "none",
    "acceptance": "greedy",
    "memory": "visited",
    "jump": "none",
    "restart": "random",
    "step": "fixed",
    "crossover": "uniform",
    "replacement": "plus",
    "local_search": "none",
    "brood": "single",
}


@dataclass
class Composition:
    """Which component fills each slot, and the defaults of the declared hyperparameters."""

    scheme: str  # "trajectory" | "population"
    slots: dict[str, str]
    hp: dict[str, float | int] = field(default_factory=dict)

    def active_slots(self) -> tuple[str, ...]:
        """The slots that matter for this scheme and these choices, in a fixed order."""
        if self.scheme == "trajectory":
            extra = ("step",) if self.slots.get("neighbourhood") == "index-step" else ()
            return TRAJECTORY_SLOTS + extra
        extra = LOCAL_SEARCH_SLOTS if self.slots.get("local_search") == "memetic" else ()
        if self.slots.get("brood") == "screened" and not extra:
            extra = ("screening",)  # the brood's model lives in the screening slot
        return POPULATION_SLOTS + extra

    def locked(self) -> set[str]:
        """Slots whose option another choice dictates (they cannot change on their own)."""
        return {"screening"} if self.scheme == "population" and self.slots.get("brood") == "screened" else set()

    def components(self) -> list[C.Component]:
        """The chosen component of every active slot, scheme first."""
        return [C.SCHEMES[self.scheme]] + [SLOT_OPTIONS[s][self.slots[s]] for s in self.active_slots()]

    def hyperparameter_names(self) -> list[str]:
        """Declared hyperparameters, in component order, without repeats."""
        return list(dict.fromkeys(h for comp in self.components() for h in comp.hyperparameters))

    def normalised(self) -> Composition:
        """Only active slots, every hyperparameter present and inside its range."""
        slots = {s: self.slots.get(s, PLAIN[s]) for s in self.active_slots()}
        if slots.get("brood") == "screened":
            if slots.get("screening") not in ("knn", "additive", "lcb"):
                slots["screening"] = "knn"  # screening a brood at random would only waste breeding
        if slots.get("init") == "screened" and "screening" not in slots:
            slots["init"] = "design"  # no model to screen the global samples with: a budget-sized design instead
        if slots.get("restart") == "screened" and "screening" not in slots:
            slots["restart"] = "random"  # no model to screen the restarts with: plain random restarts
        comp = Composition(self.scheme, slots, {})
        comp.hp = {h: clamp_hp(h, self.hp.get(h, DEFAULT_HP[h])) for h in comp.hyperparameter_names()}
        return comp

    def key(self) -> str:
        """Identity of the structure (not the defaults): equal keys = the same algorithm family."""
        return self.scheme + ":" + ",".join(f"{s}={self.slots[s]}" for s in self.active_slots())

    def to_json(self) -> str:
        return json.dumps(
            {"v": FORMAT_VERSION, "scheme": self.scheme, "slots": self.slots, "hp": self.hp},
            sort_keys=True,
            separators=(",", ":"),
        )

    @staticmethod
    def from_dict(doc: dict) -> Composition:
        """Rebuild from the JSON of a marker line; KeyError/ValueError when it is not one of ours."""
        scheme = doc["scheme"]
        if scheme not in C.SCHEMES:
            raise ValueError(f"unknown scheme {scheme!r}")
        slots = {str(k): str(v) for k, v in doc["slots"].items()}
        comp = Composition(scheme, slots, dict(doc.get("hp", {})))
        for s in comp.active_slots():
            if slots.get(s) not in SLOT_OPTIONS[s]:
                raise ValueError(f"slot {s!r} has unknown option {slots.get(s)!r}")
        return comp.normalised()


# Neutral defaults; operators overwrite them from the search-space statistics.
DEFAULT_HP = {
    "init_size": 8,
    "pop_size": 10,
    "tournament_size": 3,
    "mutation_rate": 0.2,
    "crossover_rate": 0.8,
    "elite_count": 2,
    "max_step": 2,
    "step_size": 1.5,
    "pool_size": 8,
    "knn_k": 3,
    "explore_rate": 0.1,
    "start_temperature": 0.05,
    "threshold": 0.05,
    "history_length": 10,
    "tabu_tenure": 7,
    "patience": 30,
    "restart_sample": 4,
    "kick_size": 2,
    "jump_rate": 0.05,
    "ls_steps": 8,
    "brood_size": 4,
    "ridge": 1.0,
    "init_share": 0.1,
    "explore_weight": 0.5,
    "global_share": 0.2,
    "global_pool": 8,
}


def clamp_hp(name: str, value) -> float | int:
    """A value of the right type inside the declared range of hyperparameter `name`."""
    spec = C.HP_SPECS[name]
    value = min(spec["high"], max(spec["low"], value))
    return int(round(value)) if spec["type"] == "int" else round(float(value), 4)


def read_composition(code: str) -> Composition | None:
    """The composition recorded in synthesized code, or None for code the synthesizer did not write."""
    match = re.search(re.escape(MARKER) + r"\s*(\{.*\})", code or "")
    if not match:
        return None
    try:
        return Composition.from_dict(json.loads(match.group(1)))
    except (KeyError, ValueError, TypeError, AttributeError):
        return None


# ---------------------------------------------------------------------------------------------
# Names and descriptions.
_WORDS = {
    ("init", "spread"): "Spread",
    ("neighbourhood", "Hamming"): "Hamming",
    ("neighbourhood", "adjacent"): "Adjacent",
    ("neighbourhood", "strictly-adjacent"): "StrictAdjacent",
    ("neighbourhood", "mixed"): "VariableNeighbourhood",
    ("neighbourhood", "index-step"): "IndexStep",
    ("screening", "knn"): "Knn",
    ("screening", "additive"): "Additive",
    ("acceptance", "greedy"): "Greedy",
    ("acceptance", "annealing"): "Annealing",
    ("acceptance", "threshold"): "Threshold",
    ("acceptance", "late"): "LateAcceptance",
    ("memory", "tabu"): "Tabu",
    ("jump", "random"): "Jumping",
    ("restart", "random"): "Restart",
    ("restart", "perturb"): "Iterated",
    ("step", "adaptive"): "Adaptive",
    ("crossover", "uniform"): "Uniform",
    ("crossover", "one-point"): "OnePoint",
    ("crossover", "leaders"): "Pack",
    ("replacement", "elitist"): "Elitist",
    ("local_search", "memetic"): "Memetic",
    ("brood", "screened"): "Brood",
    ("init", "design"): "Designed",
    ("screening", "lcb"): "Bounded",
    ("jump", "adaptive"): "Switching",
    ("init", "screened"): "Screened",
    ("restart", "screened"): "Rescreening",
}


def class_name(comp: Composition) -> str:
    """A descriptive CamelCase name that differs between structures."""
    words = [_WORDS[(s, comp.slots[s])] for s in comp.active_slots() if (s, comp.slots[s]) in _WORDS]
    tail = "Search" if comp.scheme == "trajectory" else "Evolution"
    return "".join(words) + tail


def describe(comp: Composition) -> str:
    """One line: what the optimizer does, component by component."""
    options = [SLOT_OPTIONS[s][comp.slots[s]] for s in comp.active_slots()]
    parts = [o.summary for o in options if o.name not in ("none", "visited")]
    return C.SCHEMES[comp.scheme].summary + " with " + ", ".join(parts)


# ---------------------------------------------------------------------------------------------
# Source generation.
def _indent(code: str, prefix: str = "    ") -> str:
    return "".join(prefix + line if line.strip() else line for line in code.strip("\n").splitlines(True)) + "\n"


def _scheme_code(comp: Composition) -> str:
    """The scheme's main loop with only the optional lines whose component is present."""
    tags = {c.tag for c in comp.components() if c.tag}
    lines = []
    for line in C.SCHEMES[comp.scheme].code.splitlines():
        match = re.match(r"^(\s*)#@(\w+): ?(.*)$", line)
        if match is None:
            lines.append(line)
        elif match.group(2) in tags:
            lines.append(match.group(1) + match.group(3))
    return "\n".join(lines) + "\n"


def _method_blocks(comp: Composition) -> list[str]:
    blocks = [_scheme_code(comp)]
    if comp.scheme == "population":
        blocks.append(V.SELECT)
    for c in comp.components()[1:]:
        if c.code:
            blocks.append(c.code)
    population_restarts = {**V.POPULATION_RESTARTS, **SS.POPULATION_RESTARTS}
    if comp.scheme == "population" and comp.slots["restart"] in population_restarts:
        blocks.append(population_restarts[comp.slots["restart"]])
    helpers = dict.fromkeys(h for c in comp.components() for h in c.needs)  # once, however many need it
    blocks.extend(C.HELPERS[h] for h in helpers)
    return blocks


def _hp_literal(comp: Composition) -> str:
    if not comp.hp:
        return "    hyperparameters = {}\n"
    rows = []
    for name, default in comp.hp.items():
        rows.append(f"        {name!r}: {dict(C.HP_SPECS[name], default=default)!r},\n")
    return "    hyperparameters = {\n" + "".join(rows) + "    }\n"


def _init_code(comp: Composition) -> str:
    args = "".join(f", {n}={v!r}" for n, v in comp.hp.items())
    body = ["        self.budget = int(budget)  # most unique evaluations, as in Kernel Tuner's custom strategies\n"]
    for name in comp.hp:
        cast = "int" if C.HP_SPECS[name]["type"] == "int" else "float"
        body.append(f"        self.{name} = {cast}({name})\n")
    return f"    def __init__(self, budget=5000{args}):\n" + "".join(body)


def _safe(text: str) -> str:
    """Text that cannot end or escape the module docstring it goes into."""
    return " ".join(str(text).replace("\\", "/").replace('"' * 3, "'" * 3).split())


def render(
    comp: Composition, rationale: list[str] | None = None, notes: list[str] | None = None
) -> tuple[str, str, str]:
    """(class name, one-line description, complete source) of a composition."""
    comp = comp.normalised()
    name, description = class_name(comp), describe(comp)
    imports = sorted({"math", *[i for c in comp.components() for i in c.imports]})
    state = "".join(c.state for c in comp.components())
    why = "".join(f"    - {_safe(r)}\n" for r in (rationale or []))
    header = (
        f"{MARKER} {comp.to_json()}\n"
        f'"""{name}: {description}.\n\n'
        "Written by Tunesmith's offline synthesizer (a component composer, not an LLM).\n"
        + (f"Why these components:\n{why}" if why else "")
        + "".join(f"Note: {_safe(n)}\n" for n in (notes or []))
        + '"""\n\n'
    )
    source = (
        header + "".join(f"import {i}\n" for i in imports) + "\nimport numpy as np\n\n\n"
        f"class {name}:\n"
        f'    """{description[0].upper() + description[1:]}."""\n\n'
        + _hp_literal(comp)
        + "\n"
        + _init_code(comp)
        + "\n"
        + _indent(C.CORE.replace("{state}", _indent(state, "    ") if state else ""))
        + "".join("\n" + _indent(b) for b in _method_blocks(comp))
    )
    return name, description, source
