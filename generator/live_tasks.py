"""Documented import path (`generator.live_tasks.load_live_entry`); the code lives in
`generator.tasks.live_entries` (parsing) and `generator.live.tasks` (loading)."""

from generator.live.tasks import load_live_entry  # noqa: F401
from generator.tasks.live_entries import LiveEntry, parse_live_entry  # noqa: F401
