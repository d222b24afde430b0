"""Continuing a run: which keys may change, and the values older runs were made with.

Both come from marks on the fields (`generator.config.base.marks`), so a new key states its resume
rule where it is declared and there is no list to keep in step.
"""

from __future__ import annotations

import copy

from pydantic import BaseModel

from generator.config.campaign import CampaignConfig


def _marked(model: type[BaseModel], mark: str, prefix: str = "") -> dict:
    """{dotted key: mark value} of every field of `model` (and the sections in it) that carries `mark`."""
    out = {}
    for name, field in model.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if mark in extra:
            out[prefix + name] = extra[mark]
        elif isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            out.update(_marked(field.annotation, mark, f"{prefix}{name}."))
    return out


# Keys that may differ when a run continues (they change limits or speed, not what was decided): the
# fields marked `resumable` (a marked section: every key in it). tasks.hub is one: where the hub is found
# (TUNESMITH_BENCHMARK_HUB, ../shared, the file's `hub`) decides no run, its tasks are named hub:APP/GPU.
RESUMABLE_CHANGES = set(_marked(CampaignConfig, "resumable"))


def config_changes(old: dict, new: dict, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two config dicts."""
    keys = sorted(set(old) | set(new))
    out = []
    for k in keys:
        a, b, dotted = old.get(k), new.get(k), f"{prefix}{k}"
        if isinstance(a, dict) and isinstance(b, dict):
            out += config_changes(a, b, dotted + ".")
        elif a != b:
            out.append(dotted)
    return out


# Keys added after runs were made, with the value that reproduces how those runs were made (which
# is not always the new default): the fields marked `legacy`. A stored configuration of format 1 that
# lacks one continues as it started (generator.config.stored upgrades it).
LEGACY_VALUES = _marked(CampaignConfig, "legacy")


def with_legacy_values(data: dict) -> dict:
    """A stored configuration with the keys it predates set as the Tunesmith that made it behaved."""
    data = copy.deepcopy(data)
    for dotted, value in LEGACY_VALUES.items():
        *path, key = dotted.split(".")
        node = data
        for part in path:
            node = node.setdefault(part, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.setdefault(key, value)
    return data


def _section_default(key: str):
    field = CampaignConfig.model_fields.get(key)
    factory = getattr(field, "default_factory", None)
    return factory().model_dump() if factory else None


def blocking_changes(old: dict, new: dict) -> list[str]:
    """Changed keys that would make continuing a run give a different run than it started as."""
    # a section added to Tunesmith after the run was made is no change while it keeps its defaults
    old = {**{k: v for k, v in new.items() if k not in old and v == _section_default(k)}, **old}
    return [k for k in config_changes(old, new) if not any(k == r or k.startswith(r + ".") for r in RESUMABLE_CHANGES)]
