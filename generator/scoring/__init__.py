"""Scoring: the methodology score P from traces, the objective oracle, fitness, seeded runs, and
the search-space statistics shown to the LLM (they include the methodology's budget).

Imports only `tasks` (and errors/config). `budget_for` is public API (`generator.budget_for`).
"""
