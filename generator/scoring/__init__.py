"""Scoring: the methodology score P from traces, the objective oracle, fitness, seeded runs, and
the search-space statistics shown to the LLM (they include the methodology's budget).

Imports only `tasks` (and errors/config). `generator.scoring.budget_for` is documented API.
"""

from generator.scoring.score import Budget, TaskScore, Trace, budget_for, mean_score, score_traces  # noqa: F401
