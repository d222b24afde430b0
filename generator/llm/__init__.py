"""LLM: litellm calls with retries, caps, accounting, record/replay; prompts; the offline synthesizer.

Imports `tasks` (statistics for prompts) and nothing of the sandbox, the evaluation or the loop.
"""
