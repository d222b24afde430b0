"""The operators on compositions: new, refine, simplify, fix, crossover.

Each takes the parsed Request and a seeded random generator and returns a Design: the
composition to write, the reasons for its choices (quoted from the statistics where they decided
something) and notes on what was done to the parent.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from generator.llm.synth.components import HP_SPECS
from generator.llm.synth.compose import SLOT_OPTIONS, Composition, clamp_hp, class_name
from generator.llm.synth.parse import Request
from generator.llm.synth.profile import Profile, profile_of

# Replacing a component by its plainer alternative: what `simplify` may do, slot by slot.
SIMPLER = {
    "screening": {"knn": "none", "additive": "none", "lcb": "knn"},
    "memory": {"tabu": "visited"},
    "jump": {"random": "none", "adaptive": "none"},
    "restart": {"random": "none", "perturb": "none", "screened": "random"},
    "step": {"adaptive": "fixed"},
    "crossover": {"uniform": "none", "one-point": "none", "leaders": "none"},
    "local_search": {"memetic": "none"},
    "acceptance": {"annealing": "greedy", "threshold": "greedy", "late": "greedy"},
    "neighbourhood": {"mixed": "Hamming", "index-step": "Hamming"},
    "init": {"spread": "random", "design": "spread", "screened": "spread"},
    "replacement": {"elitist": "plus"},
    "brood": {"screened": "single"},
}
# The composition `fix` falls back to: every part of it is the plainest, best-tested option.
SAFE = Composition(
    "trajectory",
    {
        "init": "spread",
        "neighbourhood": "Hamming",
        "screening": "none",
        "acceptance": "greedy",
        "memory": "visited",
        "jump": "none",
        "restart": "random",
    },
)


@dataclass
class Design:
    """What to write: a composition, why, and what was done to the parent."""

    composition: Composition
    rationale: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    source: str | None = None  # set when foreign code was patched in place instead of recomposed


def apply(req: Request, rng: random.Random, avoid: set[str] = frozenset()) -> Design:
    """Run the operator the prompt asks for; retry while the design is one of `avoid` (JSON), or has
    the structure the prompt says the previous answer nearly copied (`## Near-copy of ID`)."""
    copied = req.near_copy.normalised().key() if req.near_copy is not None else None
    design = _apply(req, rng)
    for _ in range(20):
        if design.source is not None or (
            design.composition.normalised().to_json() not in avoid and design.composition.normalised().key() != copied
        ):
            break
        design = _apply(req, rng)
    return design


def _apply(req: Request, rng: random.Random) -> Design:
    prof = profile_of(req.stats)
    parent = req.parents[0] if req.parents else None
    if req.operator == "fix":
        return fix(req, prof, rng)
    if req.operator == "crossover":
        return crossover(req, prof, rng)
    if req.operator in ("refine", "simplify"):
        if parent is None or parent.composition is None:
            why = (
                "no parent code was given"
                if parent is None
                else f"parent {parent.id} was not written by the offline synthesizer, so its parts cannot be read"
            )
            design = new(req, prof, rng)
            design.notes.insert(0, f"{req.operator} fell back to a new design: {why}")
            return design
        return refine(req, prof, rng) if req.operator == "refine" else simplify(req, prof, rng)
    return new(req, prof, rng)


# ---------------------------------------------------------------------------------------------
def _taken_names(req: Request) -> set[str]:
    """Class names of the algorithms the prompt already shows (existing list and parents)."""
    names = set()
    for line in req.existing:
        names.update(re.findall(r"\b([A-Z][A-Za-z0-9]+(?:Search|Evolution))\b", line))
    for p in req.parents:
        if p.composition is not None:
            names.add(class_name(p.composition))
    return names


def new(req: Request, prof: Profile, rng: random.Random) -> Design:
    """A fresh composition, drawn with weights that follow the statistics, unlike those shown."""
    taken = _taken_names(req)
    for _ in range(200):
        comp, why = prof.draw(rng)
        if class_name(comp) not in taken:
            return Design(comp, why)
    return Design(comp, why, ["every design drawn resembled an existing algorithm; this one repeats a structure"])


# ---------------------------------------------------------------------------------------------
def _tweak_hp(comp: Composition, name: str, rng: random.Random) -> str:
    """Move one hyperparameter default by a random factor; describe the change."""
    spec, old = HP_SPECS[name], comp.hp[name]
    for _ in range(10):
        factor = rng.choice((0.5, 0.67, 1.5, 2.0))
        new = clamp_hp(name, old * factor if old else spec["low"] + (spec["high"] - spec["low"]) * 0.1)
        if new != old:
            comp.hp[name] = new
            return f"default {name} {old} -> {new}"
    return ""


def _swap_slot(comp: Composition, slot: str, prof: Profile, rng: random.Random) -> str:
    """Put another option in one slot (drawn by the statistics' weights); describe the change."""
    old = comp.slots[slot]
    choice = prof.pick(slot, rng, exclude=old)
    if choice is None:
        return ""
    comp.slots[slot] = choice
    for s in comp.active_slots():  # slots this choice switches on get their own draw
        if s not in comp.slots:
            comp.slots[s] = prof.pick(s, rng)
    for h in comp.hyperparameter_names():  # hyperparameters of the new part get tuned defaults
        comp.hp.setdefault(h, prof.default(h))
    return f"{slot} {old} -> {choice}"


def _structure_swap(comp: Composition, prof: Profile, rng: random.Random) -> str:
    """Change the scheme itself: a trajectory becomes a population or the other way round."""
    other = prof.draw_scheme(rng, "population" if comp.scheme == "trajectory" else "trajectory")
    shared = {s: comp.slots[s] for s in comp.slots if s in other.slots}
    other.slots.update(shared)
    other.hp.update({h: v for h, v in comp.hp.items()})
    old = comp.scheme
    comp.scheme, comp.slots, comp.hp = other.scheme, other.slots, other.hp
    return f"scheme {old} -> {comp.scheme}"


def refine(req: Request, prof: Profile, rng: random.Random) -> Design:
    """Change one or two components or defaults of the parent (or borrow a part from parent 2)."""
    parent = req.parents[0]
    comp = parent.composition.normalised()
    changes: list[str] = []
    touched: set[str] = set()  # each slot or default changes at most once, so changes never cancel
    donor = next((p.composition for p in req.parents[1:] if p.composition is not None), None)
    n_changes = 1 if rng.random() < 0.6 else 2
    for _ in range(12):
        if len(changes) >= n_changes:
            break
        roll = rng.random()
        slots = [s for s in comp.active_slots() if s not in touched | comp.locked()]
        hps = [h for h in comp.hyperparameter_names() if h not in touched]
        change, what = "", ""
        if donor is not None and donor.scheme == comp.scheme and roll < 0.3:
            borrow = [s for s in slots if donor.slots.get(s) not in (None, comp.slots[s])]
            if borrow:
                what = rng.choice(borrow)
                comp.slots[what] = donor.slots[what]
                change = f"{what} -> {donor.slots[what]} (from parent 2)"
        elif roll < 0.08 and not touched:
            what, change = "scheme", _structure_swap(comp, prof, rng)
        elif roll < 0.6 and slots:
            what = prof.weak_slot(slots, parent.per_task, req.task_stats, rng)
            change = _swap_slot(comp, what, prof, rng)
        elif hps:
            what = rng.choice(hps)
            change = _tweak_hp(comp, what, rng)
        if change:
            changes.append(change)
            touched.add(what)
            if what == "scheme":
                touched.update(comp.slots)  # a new scheme is change enough
        comp = comp.normalised()
    return Design(comp, prof.reasons_for(comp), [f"refined {parent.id}: " + "; ".join(changes or ["no change found"])])


def simplify(req: Request, prof: Profile, rng: random.Random) -> Design:
    """Remove one component of the parent (replace it by its plainer alternative)."""
    parent = req.parents[0]
    comp = parent.composition.normalised()
    removable = [s for s in comp.active_slots() if comp.slots[s] in SIMPLER.get(s, {}) and s not in comp.locked()]
    if comp.scheme == "population" and not removable:
        removable = ["scheme"]
    if not removable:
        return Design(comp, prof.reasons_for(comp), [f"simplified {parent.id}: nothing left to remove"])
    # prefer removing the part with the most hyperparameters: the biggest saving in code and tuning
    weight = {s: 1 + len(SLOT_OPTIONS[s][comp.slots[s]].hyperparameters) for s in removable if s != "scheme"}
    slot = rng.choices(removable, [weight.get(s, 1) for s in removable])[0]
    if slot == "scheme":
        change = _structure_swap(comp, prof, rng)
    else:
        old = comp.slots[slot]
        comp.slots[slot] = SIMPLER[slot][old]
        change = f"removed {SLOT_OPTIONS[slot][old].summary} ({slot} {old} -> {comp.slots[slot]})"
    comp = comp.normalised()
    return Design(comp, prof.reasons_for(comp), [f"simplified {parent.id}: {change}"])


def crossover(req: Request, prof: Profile, rng: random.Random) -> Design:
    """Combine the components of two parents: one gives the scheme, the other about half of the
    slots and defaults they share (at least one that differs, so the child is neither parent)."""
    written = [p for p in req.parents if p.composition is not None]
    if len(written) < 2:
        design = new(req, prof, rng)
        design.notes.insert(
            0, "crossover fell back to a new design: it needs two parents written by the offline synthesizer"
        )
        return design
    first, second = written[:2] if rng.random() < 0.5 else written[1::-1]
    comp, donor = first.composition.normalised(), second.composition.normalised()
    differ = [
        s for s in comp.active_slots() if s not in comp.locked() and donor.slots.get(s) not in (None, comp.slots[s])
    ]
    taken = [s for s in differ if rng.random() < 0.5] or differ[:1]
    if len(taken) == len(differ) > 1:  # every differing slot from the donor would make the child the donor
        taken.remove(rng.choice(taken))
    for slot in taken:
        comp.slots[slot] = donor.slots[slot]
    for s in comp.active_slots():  # parts the borrowed ones switch on: drawn as refine would
        if s not in comp.slots:
            comp.slots[s] = prof.pick(s, rng)
    shared = [h for h in comp.hyperparameter_names() if h in donor.hp]
    hps = [h for h in shared if rng.random() < 0.5]
    for h in hps:
        comp.hp[h] = donor.hp[h]
    for h in comp.hyperparameter_names():
        comp.hp.setdefault(h, prof.default(h))
    what = "; ".join([f"{s} {donor.slots[s]}" for s in taken] + [f"default {h}" for h in hps]) or "nothing that differs"
    return Design(
        comp.normalised(),
        prof.reasons_for(comp),
        [f"crossed {first.id} ({comp.scheme}) with {second.id}: took {what} from {second.id}"],
    )


# ---------------------------------------------------------------------------------------------
_METHOD_SLOT = {
    "choose": "screening",
    "neighbours": "neighbourhood",
    "accept": "acceptance",
    "allowed": "memory",
    "remember_move": "memory",
    "restart": "restart",
    "restart_population": "restart",
    "mutate": "step",
    "adapt_step": "step",
    "crossover": "crossover",
    "replace": "replacement",
    "local_search": "local_search",
    "initial_configs": "init",
}
_IMPORTS = {
    "np": "import numpy as np",
    "numpy": "import numpy as np",
    "math": "import math",
    "random": "import random",
    "collections": "import collections",
    "itertools": "import itertools",
    "heapq": "import heapq",
}


def _failing_slot(req: Request, comp: Composition) -> str | None:
    """The slot whose method the error points at (from the offending line or the traceback)."""
    where = " ".join(
        filter(None, [req.error.line, req.error.message, req.text.split("## Error feedback", 1)[-1][:4000]])
    )
    hits = [slot for method, slot in _METHOD_SLOT.items() if re.search(rf"\b{method}\b", where)]
    hits = ["brood" if s in comp.locked() else s for s in hits]  # a locked slot is fixed through its owner
    hits = [s for s in hits if s in comp.slots and comp.slots[s] in SIMPLER.get(s, {})]
    return hits[-1] if hits else None


def fix(req: Request, prof: Profile, rng: random.Random) -> Design:
    """Repair the reported failure; when the code cannot be repaired, fall back to a safe variant."""
    parent = req.parents[0] if req.parents else None
    err = req.error
    kind = (err.kind if err else "").lower()
    if parent is None:
        return Design(SAFE.normalised(), prof.reasons_for(SAFE), ["fix: no parent code given; wrote the safe design"])
    if parent.composition is None:
        patched = patch_foreign(parent.code, err.message if err else "")
        if patched is not None:
            return Design(SAFE, [], [f"fixed {parent.id}: {patched[1]}"], source=patched[0])
        return Design(
            SAFE.normalised(),
            prof.reasons_for(SAFE),
            [
                f"fix of {parent.id}: its code was not written by the offline synthesizer and the "
                f"{kind or 'reported'} error has no mechanical repair; wrote a safe design instead"
            ],
        )
    comp = parent.composition.normalised()
    if kind in ("timeout", "memory", "killed"):
        # too slow or too big: drop the costliest parts first (model screening, local search, big pools)
        for slot in ("brood", "screening", "local_search", "neighbourhood", "memory"):
            if slot in comp.slots and comp.slots[slot] in SIMPLER.get(slot, {}) and slot not in comp.locked():
                old = comp.slots[slot]
                comp.slots[slot] = SIMPLER[slot][old]
                return Design(
                    comp.normalised(),
                    prof.reasons_for(comp),
                    [f"fixed {parent.id} ({kind}): {slot} {old} -> {comp.slots[slot]}, a cheaper part"],
                )
        return Design(
            SAFE.normalised(), prof.reasons_for(SAFE), [f"fixed {parent.id} ({kind}): fell back to the safe design"]
        )
    slot = _failing_slot(req, comp)
    if slot is not None:
        old = comp.slots[slot]
        comp.slots[slot] = SIMPLER[slot][old]
        return Design(
            comp.normalised(),
            prof.reasons_for(comp),
            [
                f"fixed {parent.id} ({kind or 'error'}): the failure is in {slot} ({old}); replaced it by "
                f"{comp.slots[slot]}"
            ],
        )
    return Design(
        comp,
        prof.reasons_for(comp),
        [
            f"fixed {parent.id} ({kind or 'error'}): regenerated its composition from the component "
            "library, which undoes any hand edits that broke it"
        ],
    )


def patch_foreign(code: str, message: str) -> tuple[str, str] | None:
    """(patched code, note) for failures with a mechanical repair: a missing standard import."""
    m = re.search(r"name '(\w+)' is not defined", message or "")
    if m and m.group(1) in _IMPORTS and _IMPORTS[m.group(1)] not in code:
        return _IMPORTS[m.group(1)] + "\n" + code, f"added the missing `{_IMPORTS[m.group(1)]}`"
    return None


__all__ = ["Design", "apply", "new", "refine", "simplify", "fix", "crossover", "SAFE"]
